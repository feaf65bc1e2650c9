"""The benchmark tools: the train-step profiler's parsing of `tf.profiler`
traces, the TFA comparison's targets table and the seed table of the
alignment runs."""

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_op_type_and_matmul_site_names():
    from benchmarks import profile_ops

    assert profile_ops.op_type("a/b/Sub_3:Sub") == "Sub"
    assert profile_ops.op_type("noname") == "noname"
    assert profile_ops.matmul_site(
        "gradient_tape/functional_1/dense_1/MatMul/MatMul_1:_MklMatMul"
    ) == "_MklMatMul dense_1 (gradient)"
    assert profile_ops.matmul_site(
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
    # The cross-entropy (`sparse_cross_entropy`): its softmax, and the
    # one-hot labels of its gradient.
    assert "_MklSoftmax" in rows and "OneHot" in rows
    assert any("MatMul dense" in k and "gradient" in k for k in rows)
    assert any("MatMul lstm" in k for k in rows)
    share = rows["(all ops)"][1]
    assert 30.0 < share <= 100.0, share
    assert "| float32 matmul | GFLOP/s |" in out.stdout
    assert "256 x 256 x 256" in out.stdout
    assert "Matmuls: " in out.stdout and "of the float32 peak" in out.stdout


@pytest.mark.slow
@pytest.mark.tf_only
def test_profile_step_profiles_the_exported_greedy_decoder(tmp_path):
    """`--decode greedy`: the SavedModel's loop ops are in the table (the
    vocabulary argmax is a plain `ArgMax`, not a top-1; greedy decodes
    from the logits: a softmax for the picked token's log-probability, no
    log-softmax).

    With `--tfa-python`, the TFA side runs as `PYTHON -m
    benchmarks.profile_tfa` with the same decoder, batch, calls and
    sizes, and its JSON line is printed beside ours. A stand-in for the
    TFA venv's Python (no TFA here) records its arguments and answers
    with a profile of its own."""
    fake = tmp_path / "tfa-python"
    record = tmp_path / "args.txt"
    answer = {"untraced_s": 0.004, "traced_s": 0.005,
              "totals": {"ArgMax": 600.0, "_MklMatMul": 1000.0},
              "counts": {"ArgMax": 2, "_MklMatMul": 8},
              "versions": {"tensorflow": "2.15.1", "tfa": "0.23.0"}}
    fake.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$@\" > '{record}'\n"
        "echo 'a line of TensorFlow noise'\n"
        f"echo '{json.dumps(answer)}'\n"
    )
    fake.chmod(0o755)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.profile_step", "--quick",
         "--decode", "greedy", "--batch", "2", "--steps", "2", "--top", "80",
         "--tfa-python", str(fake)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("exported greedy, batch 2: ")
    ours, _, both = out.stdout.partition("\nTFA 0.23.0 (TensorFlow 2.15.1)")
    for op in ("| ArgMax |", "Softmax |", "| TensorScatterUpdate |"):
        assert op in ours, out.stdout
    for op in ("| LogSoftmax |", "| TopKV2 |"):
        assert op not in ours, out.stdout
    assert ", the same decoder: 4.0 ms/call untraced, 5.0 ms traced" in both
    # 2 calls: ArgMax 600 us -> 0.30 ms a call on TFA's side, beside ours.
    assert re.search(r"\| ArgMax \| \d+\.\d\d \| 0\.30 \|", both), both
    assert "| (all ops) |" in both and both.rstrip().endswith("| 0.80 |")
    args = record.read_text().split("\n")
    assert args[:2] == ["-m", "benchmarks.profile_tfa"], args
    flags = dict(zip(args[2::2], args[3::2]))
    assert flags["--decode"] == "greedy" and flags["--batch"] == "2"
    assert flags["--steps"] == "2"
    sizes = json.loads(flags["--sizes"])
    assert sizes["decode_batches"] == [2] and sizes["vocab"] < 5000


def test_side_by_side_table_orders_by_either_side():
    from benchmarks import profile_step

    ours = {"TopKV2": 300.0, "_MklMatMul": 2000.0, "Split": 100.0}
    theirs = {"ArgMax": 400.0, "_MklMatMul": 1800.0, "Split": 60.0}
    table = profile_step.side_by_side(ours, theirs, calls=2, top=3)
    assert table.splitlines() == [
        "| op type | ours ms/call | TFA ms/call |",
        "|---|---|---|",
        "| _MklMatMul | 1.00 | 0.90 |",
        "| ArgMax | - | 0.20 |",
        "| TopKV2 | 0.15 | - |",
        "| (all ops) | 1.20 | 1.13 |",
    ]


@pytest.mark.tf_only
def test_profile_step_refuses_tfa_python_without_decode(capsys):
    """Before anything else: also in a process where TensorFlow already
    ran, whose inter-op threads can no longer be set."""
    import tensorflow as tf

    from benchmarks import profile_step

    tf.constant(1.0) + 1.0
    with pytest.raises(SystemExit) as raised:
        profile_step.main(["--tfa-python", "python3"])
    assert raised.value.code == 2
    assert "--tfa-python needs --decode" in capsys.readouterr().err


def test_matmul_summary_shares_and_rates():
    import collections

    from benchmarks import peers_models
    from benchmarks import profile_step

    totals = collections.Counter(
        {"_MklMatMul": 300.0, "_MklBatchMatMulV2": 100.0, "Tanh": 600.0}
    )
    # 2 steps: 0.2 ms of matmuls per step, 40 % of the op time; 2 GFLOP in
    # 0.01 s is 200 GFLOP/s, half of a 400 GFLOP/s peak.
    line = profile_step.matmul_summary(totals, 2, 0.01, 2 * 10**9, 400.0)
    assert line.startswith("Matmuls: 0.20 ms/step, 40 % of the op time.")
    assert "2.000 GFLOP of matmuls run at 200.0 GFLOP/s" in line
    assert "50 % of the float32 peak (400 GFLOP/s" in line
    sizes = {"batch": 2, "source_length": 3, "target_length": 4,
             "embedding_dim": 5, "units": 6, "vocab": 7, "decode_length": 4}
    # The step-wise decoder's LSTM also reads the fed attentional vector:
    # 2 * 4 * units * units more FLOPs per target token (batch 2 x 4
    # tokens), forward; the backward pass costs twice the forward.
    extra = peers_models.sequence_step_flops(sizes, "stepwise") - (
        peers_models.sequence_step_flops(sizes))
    assert extra == 3 * (2 * 4) * (2 * 4 * 6 * 6)
    # Beams are rows: the per-step work scales with the width, the
    # encoder's does not.
    one, five = (peers_models.decode_flops(sizes, 2, w) for w in (1, 5))
    encode = 2 * 3 * (2 * 4 * 6 * 11 + 2 * 6 * 6)
    assert (five - encode) == 5 * (one - encode)


@pytest.mark.tf_only
def test_peers_targets_table():
    """Each target row is the median per-round speed ratio of its two
    timers, against its goal; the markdown shows it."""
    from benchmarks import peers

    sizes = peers.SIZES[False]
    names = ["tfa-luong-train", "tfa-bahdanau-train", "tutorial-train"]
    names += [f"ours-{k}-{s}-train" for k in ("stepwise", "sequence")
              for s in ("luong", "bahdanau")]
    names += [v[0] for v in peers.FAST_VARIANTS]
    for batch in sizes["decode_batches"]:
        names += [f"ours-{n}-b{batch}" for n in peers.DECODERS]
        names += [f"ours-{n}-b{batch}" for n in peers.BEAM_OPTIONS]
        names += [f"tfa-{n}-b{batch}" for n in ("greedy", "beam")]
    times = {n: [1.0, 1.0, 1.0] for n in names}
    # TFA takes 2 s, 1.6 s and 2.2 s in three rounds: per-round speed
    # ratios 2.0, 1.6 and 2.2, median 2.0.
    times["tfa-luong-train"] = [2.0, 1.6, 2.2]
    times["tfa-greedy-b1"] = [1.2, 1.2, 1.2]
    result = peers.summarise(sizes, times, 1e11, {"tfa": "0.23.0",
                                                   "tensorflow": "2.15.1"})
    rows = {r["target"]: r for r in result["targets"]}
    assert len(rows) == 8
    assert rows["step-wise training, float32"] == {
        "target": "step-wise training, float32", "goal": 1.6,
        "measured": 2.0, "met": True}
    assert not rows["sequence-mode training, mixed_bfloat16"]["met"]
    assert rows["exported greedy, batch 1"]["measured"] == 1.2
    assert not rows["exported beam 5, batch 64"]["met"]
    table = peers.markdown(result)
    assert "| step-wise training, float32 | >= 1.6 | 2.00 | yes |" in table
    assert "| exported greedy, batch 1 | >= 1.5 | 1.20 | no |" in table


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
