"""`Translator`: text in, text out, on every backend.

One tiny translator is trained per module (a word-substitution task whose
true word alignment is the diagonal); the tests check the contract of the
issue's 15-line script: `from_texts`, `fit` (lists and `tf.data`),
`translate` (greedy, beam, n-best, sampling), `generate`, `align` against
an independent numpy reading of the weights, `save`/`load_model` in a
fresh process after only `import keras_attention`, and `export` served by
plain TensorFlow in a fresh process (from TensorFlow; from every backend,
to LiteRT).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_attention.seq2seq import Seq2Seq
from keras_attention.seq2seq import Translator
from keras_attention.tokenizers import WhitespaceTokenizer

FRENCH = {"le": "the", "un": "a", "chat": "cat", "chien": "dog",
          "noir": "black", "blanc": "white", "petit": "small"}


def corpus():
    rng = np.random.default_rng(0)
    words = list(FRENCH)
    sources = [" ".join(rng.choice(words, size=rng.integers(2, 5)))
               for _ in range(96)]
    targets = [" ".join(FRENCH[w] for w in s.split()) for s in sources]
    return sources, targets


SOURCES, TARGETS = corpus()
ENV = dict(os.environ, PYTHONPATH=os.getcwd())


@pytest.fixture(scope="module")
def translator():
    keras.utils.set_random_seed(0)
    model = Translator.from_texts(
        SOURCES, TARGETS, source_tokenizer="whitespace",
        target_tokenizer="whitespace", units=16, embedding_dim=16,
        dropout=0.0, score="dot",
    )
    model.compile(keras.optimizers.Adam(0.02))
    history = model.fit(SOURCES, TARGETS, batch_size=16, epochs=12,
                        verbose=0)
    model.history_losses = history.history["loss"]
    return model


def test_fit_learns_and_translates(translator):
    losses = translator.history_losses
    assert losses[-1] < 0.5 * losses[0]
    out = translator.translate(SOURCES[:16])
    assert isinstance(out, list) and all(isinstance(t, str) for t in out)
    assert np.mean([o == t for o, t in zip(out, TARGETS[:16])]) >= 0.5
    assert translator.translate(SOURCES[0]) == out[0]
    assert translator.translate([]) == []


def test_beam_nbest_sample(translator):
    greedy = translator.translate(SOURCES[:4])
    beam = translator.translate(SOURCES[:4], strategy="beam", beam_width=3)
    assert len(beam) == 4 and all(isinstance(t, str) for t in beam)
    nbest = translator.translate(SOURCES[:2], strategy="nbest", beam_width=3,
                                 n_best=2)
    assert [len(n) for n in nbest] == [2, 2]
    one = translator.translate(SOURCES[:4], strategy="sample", seed=3)
    two = translator.translate(SOURCES[:4], strategy="sample", seed=3)
    assert one == two
    assert greedy == translator.translate(SOURCES[:4])


def test_generate_gives_tokens_scores_attention(translator):
    [result] = translator.generate([SOURCES[0]])
    assert result["source_tokens"] == SOURCES[0].split() + ["[END]"]
    tokens = result["target_tokens"]
    assert result["attention"].shape == (len(tokens), len(result["source_tokens"]))
    np.testing.assert_allclose(result["attention"].sum(-1), 1.0, atol=1e-4)
    assert result["score"] <= 0.0


def test_align_against_numpy_reading(translator):
    sources, targets = SOURCES[:8], TARGETS[:8]
    links = translator.align(sources, targets)
    weights = translator.teacher_forced_weights(sources, targets)
    for i, (s, t) in enumerate(zip(sources, targets)):
        n_s, n_t = len(s.split()), len(t.split())
        # One token a word: word j of the source is column j, word i of
        # the target is predicted by row i (the row after [START]).
        expected = {(int(np.argmax(weights[i, r, :n_s])), r)
                    for r in range(n_t)}
        assert links[i] == expected
    threshold = translator.align(sources, targets, method="threshold",
                                 threshold=0.3)
    for i, (s, t) in enumerate(zip(sources, targets)):
        w = weights[i, : len(t.split()), : len(s.split())]
        assert threshold[i] == {(int(c), int(r))
                                for r, c in zip(*np.nonzero(w >= 0.3))}


def test_align_symmetrized_and_cut(translator):
    both = translator.align(SOURCES[:4], TARGETS[:4], reverse=translator,
                            symmetrize="intersection")
    one = translator.align(SOURCES[:4], TARGETS[:4])
    assert all(b <= o for b, o in zip(both, one))
    long_source = " ".join(["chat"] * 100)
    [links] = translator.align([long_source], ["cat"])
    assert all(s < translator.max_tokens - 1 for s, _ in links)


def test_word_attention_and_agreement_against_numpy(translator):
    """`word_attention` is the weights' word rows (one token a word);
    `symmetrize="agreement"` links where sqrt(forward * backward.T) of
    the two directions' word weights reaches the threshold. (The
    translator reads the English side as its reverse too: the contract,
    not the quality, is tested.)"""
    from keras_attention import alignment as al

    sources, targets = SOURCES[:8], TARGETS[:8]
    matrices = translator.word_attention(sources, targets)
    forward = translator.teacher_forced_weights(sources, targets)
    backward = translator.teacher_forced_weights(targets, sources)
    agreement = []
    for i, (s, t) in enumerate(zip(sources, targets)):
        n_s, n_t = len(s.split()), len(t.split())
        f = forward[i, :n_t, :n_s]
        np.testing.assert_allclose(matrices[i], f, rtol=1e-6)
        agreement.append(np.sqrt(f * backward[i, :n_s, :n_t].T))
    # Thresholds between the values the pairs hold: some word pairs are
    # linked and some are not, whatever the backend trained.
    values = np.concatenate([a.ravel() for a in agreement])
    for threshold in np.quantile(values[values > 0], [0.5, 0.9]):
        agreed = translator.align(sources, targets, reverse=translator,
                                  symmetrize="agreement",
                                  agreement_threshold=float(threshold))
        expected = [{(int(c), int(r)) for r, c in zip(*np.nonzero(
            a >= threshold))} for a in agreement]
        assert agreed == expected
        assert 0 < sum(map(len, agreed)) < values.size
        # An agreed link has weight >= threshold ** 2 in both directions.
        loose = translator.align(
            sources, targets, method="threshold",
            threshold=float(threshold) ** 2 * (1 - 1e-6),
            reverse=translator, symmetrize="intersection",
        )
        assert all(a <= u for a, u in zip(agreed, loose))
    assert al.agreement_links(matrices[0], translator.word_attention(
        targets[:1], sources[:1])[0]) == translator.align(
        sources[:1], targets[:1], reverse=translator,
        symmetrize="agreement")[0]


def test_align_with_a_diagonal_prior_against_numpy(translator):
    """`diagonal_tension`: each direction's word weights times
    `diagonal_prior`, renormalized, before the links: argmax, threshold,
    agreement and the reverse's hard links."""
    sources, targets = SOURCES[:8], TARGETS[:8]
    forward = translator.word_attention(sources, targets)
    backward = translator.word_attention(targets, sources)

    def favored(matrix, tension):
        m, n = matrix.shape
        prior = np.exp(-tension * np.abs(
            np.arange(1, m + 1)[:, None] / m - np.arange(1, n + 1)[None] / n))
        weighted = matrix * prior
        return weighted / weighted.sum(1, keepdims=True)

    for tension in (0.0, 4.0, 50.0):
        links = translator.align(sources, targets, diagonal_tension=tension)
        assert links == [
            {(int(np.argmax(row)), r)
             for r, row in enumerate(favored(f, tension))} for f in forward]
        agreed = translator.align(
            sources, targets, reverse=translator, symmetrize="agreement",
            agreement_threshold=0.3, diagonal_tension=tension)
        assert agreed == [
            {(int(c), int(r)) for r, c in zip(*np.nonzero(np.sqrt(
                favored(f, tension) * favored(b, tension).T) >= 0.3))}
            for f, b in zip(forward, backward)]
        both = translator.align(
            sources, targets, reverse=translator,
            symmetrize="intersection", diagonal_tension=tension)
        assert both == [
            f & {(s, t) for t, s in b} for f, b in zip(links, translator.align(
                targets, sources, diagonal_tension=tension))]
    # A steep prior links each target word near its relative position,
    # whatever the weights (equal lengths: the diagonal itself).
    steep = translator.align(sources, targets, diagonal_tension=1e3)
    for links, s, t in zip(steep, sources, targets):
        if len(s.split()) == len(t.split()):
            assert links == {(i, i) for i in range(len(t.split()))}
    assert translator.align(sources, targets, diagonal_tension=0.0) == (
        translator.align(sources, targets))
    for tension in (-1.0, float("nan"), float("inf"), "4"):
        with pytest.raises((ValueError, TypeError), match="tension"):
            translator.align(sources, targets, diagonal_tension=tension)


def test_align_refuses_bad_symmetrization(translator):
    pairs = (SOURCES[:2], TARGETS[:2])
    with pytest.raises(ValueError, match="give `reverse`"):
        translator.align(*pairs, symmetrize="agreement")
    for threshold in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            translator.align(*pairs, reverse=translator,
                             symmetrize="agreement",
                             agreement_threshold=threshold)
    with pytest.raises(ValueError, match="method"):
        translator.align(*pairs, reverse=translator, symmetrize="agree")
    with pytest.raises(TypeError, match="`reverse` must be a `Translator`"):
        translator.align(*pairs, reverse="model.keras",
                         symmetrize="agreement")
    with pytest.raises(ValueError, match="batch_size"):
        translator.word_attention(*pairs, batch_size=0)


def test_subword_words_grouped():
    """With WordPiece and punctuation, links index whitespace words."""
    sources = ["le chat, noir."] * 8
    targets = ["the cat, black."] * 8
    model = Translator.from_texts(sources, targets, vocabulary_size=40,
                                  units=4, embedding_dim=4)
    [links] = model.align(sources[:1], targets[:1])
    assert {t for _, t in links} == {0, 1, 2}
    assert all(0 <= s < 3 for s, _ in links)


def test_fit_on_tf_data_and_validation(translator):
    import tensorflow as tf

    data = tf.data.Dataset.from_tensor_slices((SOURCES[:32], TARGETS[:32]))
    model = Translator.from_config(translator.get_config())
    history = model.fit(data, epochs=1, batch_size=16, verbose=0,
                        validation_data=(SOURCES[:8], TARGETS[:8]))
    assert "val_loss" in history.history
    result = model.evaluate(SOURCES[:8], TARGETS[:8], verbose=0,
                            return_dict=True)
    assert np.isfinite(result["loss"])


LOAD = """
import json, sys
import keras, keras_attention
model = keras.models.load_model(sys.argv[1])
print(json.dumps(model.translate(json.loads(sys.argv[2]))))
"""

SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](tf.constant(json.loads(sys.argv[2])))
print(json.dumps([t.decode() for t in out["translation"].numpy()]))
"""


def run_python(script, *args, backend=None):
    env = dict(ENV)
    if backend:
        env["KERAS_BACKEND"] = backend
    done = subprocess.run([sys.executable, "-c", script, *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_save_and_load_in_fresh_process(translator, tmp_path):
    path = str(tmp_path / "translator.keras")
    translator.save(path)
    texts = SOURCES[:6]
    expected = translator.translate(texts)
    loaded = run_python(LOAD, path, json.dumps(texts),
                        backend=keras.config.backend())
    assert loaded == expected
    again = keras.models.load_model(path, safe_mode=True)
    assert again.translate(texts) == expected
    assert isinstance(again.seq2seq, Seq2Seq)
    assert again.source_tokenizer.vocabulary == (
        translator.source_tokenizer.vocabulary)


# TensorFlow only: from JAX and PyTorch, `export` hands the config and the
# weights to a TensorFlow process, which runs this same export; that
# crossing is tested from every backend by the LiteRT export below (one
# TensorFlow process, where this test pays two: about twice as long).
@pytest.mark.slow
@pytest.mark.tf_only
def test_export_served_by_plain_tensorflow(translator, tmp_path):
    texts = SOURCES[:6]
    path = translator.export(str(tmp_path / "export"))
    served = run_python(SERVE, path, json.dumps(texts))
    assert served == translator.translate(texts)


def test_misuse(translator):
    with pytest.raises(ValueError, match="as many texts"):
        Translator.from_texts(["a"], ["b", "c"])
    with pytest.raises(TypeError, match="not one string"):
        translator.translate(["a"], strategy="greedy") and translator.align(
            "le chat", ["the cat"])
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        translator.translate(["le chat", None])
    with pytest.raises(ValueError, match="source_vocab_size"):
        Translator.from_texts(["a"], ["b"], source_vocab_size=10)
    with pytest.raises(ValueError, match="method"):
        translator.align(["le"], ["the"], method="max")
    with pytest.raises(ValueError, match="strategy"):
        translator.translate(["le"], strategy="topk")
    with pytest.raises(ValueError, match="`y`"):
        translator.fit(SOURCES)
    tok = WhitespaceTokenizer.from_texts(["a b"], 10)
    with pytest.raises(ValueError, match="source_vocab_size"):
        Translator(translator.seq2seq, tok, translator.target_tokenizer)
    with pytest.raises(TypeError, match="source_tokenizer"):
        Translator(translator.seq2seq, "wordpiece",
                   translator.target_tokenizer)
    with pytest.raises(ValueError, match="max_tokens"):
        Translator(translator.seq2seq, translator.source_tokenizer,
                   translator.target_tokenizer, max_tokens=2)


def test_empty_and_long_texts_are_said(translator):
    from keras_attention.translator import TranslationWarning

    with pytest.warns(TranslationWarning, match=r"1 of 3 texts have no token.*texts\[1\]"):
        out = translator.translate([SOURCES[0], "  ", SOURCES[1]])
    assert out[1] == "" and out[0] == translator.translate(SOURCES[0])
    [empty] = translator.generate(["\t"], strategy="nbest", beam_width=2,
                                  n_best=2)
    assert empty["translations"] == [] and empty["target_tokens"] == []
    with pytest.warns(TranslationWarning, match="longer than the model reads"):
        translator.translate([" ".join(["chat"] * 200)])
    with pytest.warns(TranslationWarning, match="1000 characters"):
        translator.translate(["chat " + "x" * 1200])


def test_output_length_follows_the_source(translator):
    """As in the SavedModel, a sentence of S source tokens decodes at most
    2 S + 10 tokens: an untrained model (no [END] learned) shows it."""
    fresh = Translator.from_config(translator.get_config())
    one, two = fresh.generate(["chat", "le chat noir petit"])
    assert len(one["target_tokens"]) <= 2 * 2 + 10
    assert len(two["target_tokens"]) <= 2 * 5 + 10
    longer = fresh.generate(["chat"], max_length_scale=4,
                            max_length_margin=30)[0]
    assert len(longer["target_tokens"]) >= len(one["target_tokens"])
    with pytest.raises(ValueError, match="max_length_margin"):
        fresh.generate(["chat"], max_length_margin=0)


def test_litert_export_decodes_as_the_translator(translator, tmp_path):
    """From every backend (JAX and PyTorch export through a TensorFlow
    process): the LiteRT file, run by its own runtime, translates as the
    translator does."""
    pytest.importorskip("ai_edge_litert")
    from keras_attention.portable import load

    texts = SOURCES[:6]
    path = translator.export(str(tmp_path / "model.tflite"), format="litert")
    model = load(path)
    assert [r["translation"] for r in model.translate(texts)] == (
        translator.translate(texts)
    )
    beam = translator.generate(texts, strategy="beam", beam_width=3)
    assert [r["translation"] for r in model.translate(texts, 3)] == [
        r["translation"] for r in beam
    ]
