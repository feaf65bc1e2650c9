"""The benchmark tools of issues 15 and 16: the train-step profiler's
parsing of `tf.profiler` traces and the seed table of the alignment runs."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_op_type_and_matmul_site_names():
    from benchmarks import profile_step

    assert profile_step.op_type("a/b/Sub_3:Sub") == "Sub"
    assert profile_step.op_type("noname") == "noname"
    assert profile_step.matmul_site(
        "gradient_tape/functional_1/dense_1/MatMul/MatMul_1:_MklMatMul"
    ) == "_MklMatMul dense_1 (gradient)"
    assert profile_step.matmul_site(
        "functional_1/lstm_1/while/MatMul:MatMul"
    ) == "MatMul lstm_1"


@pytest.mark.slow
@pytest.mark.tf_only
def test_profile_step_accounts_for_the_traced_step():
    """A real trace of the tiny model: the op table names the model's
    matmuls and the cross-entropy, and, on one inter-op thread, the ops
    add up to most of the traced step and never to more than it."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.profile_step", "--quick",
         "--steps", "3", "--by-layer", "--top", "60", "--matmuls"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[1].replace(".", "").isdigit():
            rows[cells[0]] = (float(cells[1]), float(cells[2].rstrip(" %")))
    assert "SparseSoftmaxCrossEntropyWithLogits" in rows
    assert any("MatMul dense" in k and "gradient" in k for k in rows)
    assert any("MatMul lstm" in k for k in rows)
    share = rows["(all ops)"][1]
    assert 30.0 < share <= 100.0, share
    assert "| float32 matmul | GFLOP/s |" in out.stdout
    assert "256 x 256 x 256" in out.stdout


def write_run(path, aer, bleu, chrf):
    os.makedirs(path)
    with open(os.path.join(path, "aer.json"), "w") as f:
        json.dump({"aer": aer, "precision": 0.5, "recall": 0.5}, f)
    with open(os.path.join(path, "test.json"), "w") as f:
        json.dump({"bleu": bleu, "chrf": chrf, "examples": 10}, f)


def test_seed_table_row(tmp_path, capsys):
    from benchmarks.alignment import seed_table

    runs = []
    for i, (aer, bleu) in enumerate([(0.30, 20.0), (0.652, 8.0),
                                      (0.31, 19.0), (0.50, 10.0)]):
        runs.append(str(tmp_path / f"s{i}"))
        write_run(runs[-1], aer, bleu, 30.0 + i)
    assert seed_table.main(["--name", "base", "--header"] + runs) == 0
    header, rule, row = capsys.readouterr().out.strip().splitlines()
    assert header.startswith("| setting | seeds |")
    # AER 30, 65.2, 31, 50: median 40.5; two of four at most 35 %.
    assert row == ("| base | 4 | 40.5 (30.0-65.2) | 2 of 4 | "
                   "30.0 / 65.2 / 31.0 / 50.0 | 14.5 (8.0-20.0) | "
                   "31.5 (30.0-33.0) |")
