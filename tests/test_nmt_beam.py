"""Beam search in the NMT example: the exported `beam` signature and `evaluate`.

One tiny model is trained once for the module (300 generated dates, one
epoch, 8 units, as in `test_nmt_smoke.py`) and exported. Its translations
are poor, which suits these tests: they check how the decoders relate, not
how good they are, and long, unsure hypotheses exercise the length limit
and the beams' reordering.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from keras_attention import serving  # noqa: E402
from examples.nmt import cli  # noqa: E402
from examples.nmt import data as data_lib  # noqa: E402
from examples.nmt import evaluate as eval_lib  # noqa: E402
from keras_attention.training import runs as model_lib  # noqa: E402
from examples.nmt import text as text_lib  # noqa: E402
from examples.nmt import run as run_lib  # noqa: E402
from tests import tiny_runs  # noqa: E402

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

MAX_OUTPUT_TOKENS = tiny_runs.NMT_MAX_OUTPUT_TOKENS
SENTENCES = [
    "vendredi 20 octobre 1933",
    "",
    "Freitag, 20. Oktober 1933",
    "3. März 1999",
    "domingo, 25 de diciembre de 2050",
    "20 Ekim 1933 Cuma",
]

FRESH_PROCESS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the tensorflow-text ops
assert not any(m.startswith(("keras_attention", "examples")) for m in sys.modules)
loaded = tf.saved_model.load(sys.argv[1])
beam = loaded.signatures["beam"]
_, inputs = beam.structured_input_signature
texts = tf.constant([b"vendredi 20 octobre 1933", b"", b"\xff\xfe 3", b"3. M\xc3\xa4rz 1999"])
out = beam(text=texts, beam_width=tf.constant(3))
empty = beam(text=tf.constant([], tf.string), beam_width=tf.constant(3))
result = {k: v.numpy().tolist() for k, v in out.items() if v.dtype != tf.string}
result["translation"] = [t.decode("utf-8") for t in out["translation"].numpy()]
result["source_tokens"] = [[t.decode("utf-8") for t in row]
                           for row in out["source_tokens"].numpy()]
result["target_tokens"] = [[t.decode("utf-8") for t in row]
                           for row in out["target_tokens"].numpy()]
result["signatures"] = sorted(loaded.signatures)
result["inputs"] = {k: [v.dtype.name, v.shape.as_list()] for k, v in inputs.items()}
result["empty"] = {k: v.shape.as_list() for k, v in empty.items()}
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def run():
    """`(run_dir, saved_model_dir)` of a tiny trained and exported model."""
    path = tiny_runs.nmt_export()
    return tiny_runs.nmt_run()[0], path


@pytest.fixture(scope="module")
def greedy(run):
    return serving.load_saved_model(run[1])


@pytest.fixture(scope="module")
def beam_signature(run):
    return tf.saved_model.load(run[1]).signatures["beam"]


def _numpy(out):
    return {k: v.numpy() for k, v in out.items()}


def _beam(beam_signature, texts, width):
    return _numpy(
        beam_signature(
            text=tf.constant(texts, tf.string), beam_width=tf.constant(width)
        )
    )


def _row(out, i):
    """One sentence of a batch output, without the batch padding."""
    n = int(out["target_lengths"][i])
    s = int(np.sum(out["source_tokens"][i] != b""))
    return {
        "translation": out["translation"][i],
        "target_tokens": list(out["target_tokens"][i, :n]),
        "source_tokens": list(out["source_tokens"][i, :s]),
        "attention": out["attention"][i, :n, :s],
        "scores": out["scores"][i],
        "log_probs": out["log_probs"][i],
    }


def _assert_same_row(a, b, atol=1e-5):
    assert a["translation"] == b["translation"]
    assert a["target_tokens"] == b["target_tokens"]
    assert a["source_tokens"] == b["source_tokens"]
    np.testing.assert_allclose(a["attention"], b["attention"], atol=atol)
    np.testing.assert_allclose(a["scores"], b["scores"], atol=1e-4)
    np.testing.assert_allclose(a["log_probs"], b["log_probs"], atol=1e-4)


def test_beam_signature_in_a_fresh_process(run):
    _, path = run
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, path],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), cwd="/",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["signatures"] == [
        "beam", "complete", "greedy", "nbest", "sample", "serving_default"
    ]
    assert out["inputs"] == {"text": ["string", [None]], "beam_width": ["int32", []]}
    assert out["empty"]["translation"] == [0]
    assert out["empty"]["attention"][0] == 0
    attention = np.array(out["attention"])
    batch, length, source_len = attention.shape
    assert batch == 4 and len(out["translation"]) == 4
    assert np.array(out["target_tokens"]).shape == (4, length)
    assert np.array(out["source_tokens"]).shape == (4, source_len)
    for b in range(4):
        n = out["target_lengths"][b]
        kept = [t for t in out["source_tokens"][b] if t]
        assert kept[-1] == "[END]"
        assert 0 <= n <= MAX_OUTPUT_TOKENS
        np.testing.assert_allclose(attention[b, :n].sum(-1), 1.0, atol=1e-4)
        assert np.all(attention[b, n:] == 0)
        assert np.all(attention[b, :, len(kept):] == 0)
        assert all(out["target_tokens"][b][:n]) and not any(out["target_tokens"][b][n:])
        assert out["scores"][b] <= 0.0 and out["log_probs"][b] <= 0.0


def test_greedy_signature_is_serving_default(run, greedy):
    signatures = tf.saved_model.load(run[1]).signatures
    a = _numpy(signatures["greedy"](text=tf.constant(SENTENCES)))
    b = _numpy(greedy(tf.constant(SENTENCES)))
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    # Greedy decoding ranks by the plain log-probability.
    np.testing.assert_array_equal(b["scores"], b["log_probs"])


@pytest.mark.parametrize("width", [1, 0, -3])
def test_beam_width_one_equals_greedy(greedy, beam_signature, width):
    # Widths below 1 are clamped to 1.
    g = _numpy(greedy(tf.constant(SENTENCES)))
    b = _beam(beam_signature, SENTENCES, width)
    for i in range(len(SENTENCES)):
        greedy_row, beam_row = _row(g, i), _row(b, i)
        # Beam search reports the length-normalised score; the rest is equal.
        n_end = len(greedy_row["target_tokens"]) + int(
            g["target_lengths"][i] < _limit(g, i)
        )
        np.testing.assert_allclose(
            beam_row["scores"], greedy_row["log_probs"] / _penalty(n_end), rtol=1e-5
        )
        beam_row["scores"] = greedy_row["scores"]
        _assert_same_row(greedy_row, beam_row)


def test_beam_width_is_clamped_to_the_maximum(beam_signature):
    wide = _beam(beam_signature, SENTENCES[:3], 10**6)
    widest = _beam(beam_signature, SENTENCES[:3], serving.MAX_BEAM_WIDTH)
    for i in range(3):
        _assert_same_row(_row(wide, i), _row(widest, i))


@pytest.mark.parametrize("width", [3, 5])
def test_beam_batch_equals_sentence_by_sentence(beam_signature, width):
    batch = _beam(beam_signature, SENTENCES, width)
    for i, sentence in enumerate(SENTENCES):
        alone = _beam(beam_signature, [sentence], width)
        _assert_same_row(_row(batch, i), _row(alone, 0))
    empty = _beam(beam_signature, [], width)
    assert empty["translation"].shape == (0,) and empty["attention"].shape[0] == 0


def _limit(out, i):
    """The decoders' length limit of sentence `i` (source tokens counted)."""
    source_tokens = int(np.sum(out["source_tokens"][i] != b""))
    return min(2 * source_tokens + 10, MAX_OUTPUT_TOKENS)


def _penalty(length, alpha=serving.LENGTH_PENALTY):
    return ((5.0 + length) / 6.0) ** alpha


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_beam_output_is_its_own_teacher_forced_hypothesis(run, beam_signature):
    """Tokens, log-probability, score and attention of the best beam agree
    with the training model run on that hypothesis (teacher forcing): the
    beams' back-pointers carried the right attention and state along."""
    run_dir, _ = run
    seq2seq, _, _, _ = run_lib.load_trained(run_dir)
    with open(os.path.join(run_dir, "source_vocab.txt"), encoding="utf-8") as f:
        source_ids = {t: i for i, t in enumerate(f.read().splitlines())}
    with open(os.path.join(run_dir, "target_vocab.txt"), encoding="utf-8") as f:
        target_ids = {t: i for i, t in enumerate(f.read().splitlines())}
    out = _beam(beam_signature, SENTENCES, 4)
    attention = out["attention"]
    batch, length, source_len = attention.shape
    assert out["target_tokens"].shape == (batch, length)
    assert out["source_tokens"].shape == (batch, source_len)
    for i in range(batch):
        row = _row(out, i)
        n = len(row["target_tokens"])
        if not SENTENCES[i].strip():
            # A text without a token translates to "", with no decoding.
            assert n == 0 and row["scores"] == 0.0
            continue
        ended = n < _limit(out, i)
        src = [source_ids[t.decode()] for t in row["source_tokens"]]
        tgt = [target_ids[t.decode()] for t in row["target_tokens"]]
        target_in = [text_lib.START_ID] + tgt
        inputs = {
            "source_ids": np.array([src], np.int32),
            "target_in": np.array([target_in], np.int32),
        }
        log_probs = _log_softmax(
            np.asarray(seq2seq(inputs)["logits"], np.float64)[0]
        )
        expected_tokens = tgt + ([text_lib.END_ID] if ended else [])
        total = sum(log_probs[t, tok] for t, tok in enumerate(expected_tokens))
        np.testing.assert_allclose(row["log_probs"], total, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            row["scores"], total / _penalty(len(expected_tokens)), rtol=1e-4, atol=1e-4
        )
        weights = np.asarray(seq2seq(inputs)["attention"])[0]
        np.testing.assert_allclose(row["attention"], weights[:n], atol=1e-5)


def test_evaluate_reports_greedy_and_beam(run, greedy, capsys, tmp_path):
    run_dir, path = run
    json_path = str(tmp_path / "beam_metrics.json")
    args = ["evaluate", "--run", run_dir, "--beam-width", "3", "--json", json_path]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "greedy" in printed and "beam (width 3)" in printed
    with open(json_path) as f:
        metrics = json.load(f)
    beam = metrics["beam"]
    assert beam["beam_width"] == 3 and beam["examples"] == metrics["examples"] > 0
    for m in (metrics, beam):
        assert 0.0 <= m["exact_match"] <= 1.0
        assert 0.0 <= m["bleu"] <= 100.0 and 0.0 <= m["chrf"] <= 100.0
        # (The decode time `evaluate` also prints is a figure for
        # benchmarks/peers.py, which times decoding; not checked here.)
        assert "alignment_accuracy" in m
        assert "results" not in m

    # The beam figures are those of the beam signature's translations.
    result = eval_lib.evaluate_run(run_dir, "test", path, beam_width=3)
    _, splits = data_lib.load_splits(run_lib.load_run_config(run_dir)[0])
    texts = [s for s, _ in splits["test"].pairs]
    references = [t for _, t in splits["test"].pairs]
    beam_fn = serving.load_saved_model(path, beam_width=3)
    expected = [r["translation"] for r in serving.translate_all(beam_fn, texts)]
    assert [r["translation"] for r in result["beam"]["results"]] == expected
    bleu, chrf = eval_lib.bleu_chrf(expected, references)
    assert result["beam"]["bleu"] == pytest.approx(bleu)
    assert result["beam"]["chrf"] == pytest.approx(chrf)
    greedy_translations = [
        r["translation"] for r in serving.translate_all(greedy, texts)
    ]
    assert [r["translation"] for r in result["results"]] == greedy_translations

    # --beam-width 0: greedy only, in the single-column format.
    assert cli.main(["evaluate", "--run", run_dir, "--beam-width", "0",
                     "--json", json_path]) == 0
    assert "beam (width" not in capsys.readouterr().out
    with open(json_path) as f:
        assert "beam" not in json.load(f)


def test_translate_cli_with_beam(run, capsys):
    run_dir, _ = run
    assert cli.main(["translate", "--model", run_dir, "--beam-width", "2",
                     "lundi 1 janvier 2024"]) == 0
    assert capsys.readouterr().out.startswith("lundi 1 janvier 2024\t")


def test_load_saved_model_rejects_bad_width_and_old_exports(run, tmp_path):
    run_dir, path = run
    with pytest.raises(ValueError, match="beam_width"):
        serving.load_saved_model(path, beam_width=-1)
    with pytest.raises(ValueError, match="beam_width"):
        serving.load_saved_model(path, beam_width=2.0)
    # A SavedModel with only the greedy signature (exported before beam
    # search) translates greedily and names the fix for beam search.
    seq2seq, source, target, _ = run_lib.load_trained(run_dir)
    module = serving.TranslatorModule(seq2seq, source, target, max_output_tokens=4)
    old = str(tmp_path / "old_export")
    tf.saved_model.save(module, old, signatures={"serving_default": module.translate})
    assert serving.load_saved_model(old)(tf.constant(["3"]))["translation"].shape == (1,)
    with pytest.raises(ValueError, match="no `beam` signature"):
        serving.load_saved_model(old, beam_width=4)


def test_beam_signature_on_hostile_inputs(beam_signature):
    texts = [
        "lundi 3 mai 1999 " * 60000,  # a million characters
        " \t\n\u3000",
        "vendredi\x00 20\x1b[31m octobre\u202e 1933",
        "[START] [END] [PAD] [UNK] ## ##ab",
        "🙂 vendredi 🇫🇷 20 octobre",
    ]
    out = _beam(beam_signature, [t.encode("utf-8") for t in texts] + [b"\xc0\xaf\xff"], 4)
    assert out["translation"].shape == (6,)
    assert out["source_tokens"].shape[1] <= 64  # the text config's max_tokens
    for i in range(6):
        out["translation"][i].decode("utf-8")
        n = int(out["target_lengths"][i])
        s = int(np.sum(out["source_tokens"][i] != b""))
        assert 0 <= n <= _limit(out, i) and s >= 1
        np.testing.assert_allclose(out["attention"][i, :n].sum(-1), 1.0, atol=1e-4)
        assert np.all(out["attention"][i, n:] == 0.0)
        assert np.all(out["attention"][i, :, s:] == 0.0)
        assert np.isfinite(out["scores"][i]) and out["scores"][i] <= 0.0


def test_stepwise_model_beam_equals_greedy_at_width_one_and_is_batch_independent(run):
    """The step-wise model (AttentionWrapper state, input feeding) through
    the same module, in process: its nested state is tiled and reordered."""
    import dataclasses

    run_dir, _ = run
    _, text_config, model_config, _ = run_lib.load_run_config(run_dir)
    source, target = run_lib.make_processors(run_dir, text_config)
    seq2seq = model_lib.build_model(dataclasses.replace(model_config, model="stepwise"))
    module = serving.TranslatorModule(seq2seq, source, target, max_output_tokens=8)
    texts = tf.constant(SENTENCES[:4])
    g = _numpy(module.translate(texts))
    b1 = _numpy(module.translate_beam(texts, tf.constant(1)))
    b3 = _numpy(module.translate_beam(texts, tf.constant(3)))
    for i, sentence in enumerate(SENTENCES[:4]):
        greedy_row, beam_row = _row(g, i), _row(b1, i)
        beam_row["scores"] = greedy_row["scores"]
        _assert_same_row(greedy_row, beam_row)
        alone = _numpy(module.translate_beam(tf.constant([sentence]), tf.constant(3)))
        _assert_same_row(_row(b3, i), _row(alone, 0))
