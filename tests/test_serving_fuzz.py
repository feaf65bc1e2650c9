"""Robustness of the exported translator (SavedModel `serving_default`).

The tiny NMT run that the example tests share (`tests.tiny_runs`), exported
with the `export` code of the example, is loaded back with
`tf.saved_model.load`. Every test then feeds that one SavedModel:

- the listed hostile inputs (empty strings, whitespace only, 10,000 and
  1,000,000 characters, unknown words, mixed scripts, emoji, control
  characters, NUL bytes, reserved-token look-alikes, byte strings that are
  not valid UTF-8), alone and all in one batch, and an empty batch;
- random Unicode text and random bytes (hypothesis, bounded counts);
- the same sentence alone and inside batches of longer and shorter ones.

Every result is checked against the contract of `TranslatorModule.translate`
(`keras_attention.translator.export_run`): valid UTF-8 translations, attention rows that
are distributions over the source tokens for each emitted token and zeros
elsewhere, finite non-positive log-probabilities, lengths within the
documented limits (`text.MAX_INPUT_CHARS` characters of input,
`max_tokens` source tokens, `max_output_tokens` target tokens).
"""

import os

import numpy as np
import pytest

from keras_attention import serving
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests import tiny_runs

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

MAX_OUTPUT_TOKENS = tiny_runs.NMT_MAX_OUTPUT_TOKENS


@pytest.fixture(scope="module")
def exported():
    """`(translate_fn, source_max_tokens, saved_model_dir)` of a tiny model."""
    from examples.nmt import run as run_lib

    path = tiny_runs.nmt_export()
    _, text_config, _, _ = run_lib.load_run_config(tiny_runs.nmt_run()[0])
    return serving.load_saved_model(path), text_config.max_tokens, path


def _as_bytes(text):
    return text if isinstance(text, bytes) else text.encode("utf-8")


def translate(exported, texts):
    fn, max_tokens, _ = exported
    out = fn(tf.constant([_as_bytes(t) for t in texts], tf.string))
    out = {k: v.numpy() for k, v in out.items()}
    check_contract(out, len(texts), max_tokens)
    return out


def check_contract(out, batch, max_tokens):
    translation = out["translation"]
    attention = out["attention"]
    lengths = out["target_lengths"]
    source = out["source_tokens"]
    target = out["target_tokens"]
    assert translation.shape == (batch,)
    assert attention.ndim == 3 and attention.shape[0] == batch
    assert attention.shape[1] == target.shape[1] and attention.shape[2] == source.shape[1]
    assert np.all(np.isfinite(attention)) and np.all(attention >= 0.0)
    assert np.all(np.isfinite(out["scores"])) and np.all(out["scores"] <= 1e-6)
    assert np.all((0 <= lengths) & (lengths <= MAX_OUTPUT_TOKENS))
    assert source.shape[1] <= max_tokens
    for i in range(batch):
        # Output text is valid UTF-8 whatever the input was.
        translation[i].decode("utf-8")
        n_source = int(np.sum(source[i] != b""))
        assert n_source <= max_tokens
        n = int(lengths[i])
        # One distribution over the real source tokens per emitted token
        # (none at all for a source without tokens).
        expected = 1.0 if n_source else 0.0
        np.testing.assert_allclose(attention[i, :n].sum(-1), expected, atol=1e-4)
        assert np.all(attention[i, :n, n_source:] == 0.0)
        assert np.all(attention[i, n:] == 0.0)
        assert np.all(target[i, :n] != b"") and np.all(target[i, n:] == b"")


# ----------------------------------------------------------------------------
# Listed cases.
HOSTILE = {
    "empty": "",
    "space": " ",
    "whitespace": " \t\n\r\u00a0\u2003\u3000 ",
    "long_10k": "lundi 3 mai 1999 " * 588 + "x" * 4,  # 10,000 characters
    "one_long_word": "a" * 10000,
    "unknown_words": "xylophone quokka zzzz qwertyuiop blorptastic",
    "mixed_scripts": "vendredi 20 Октября 1933 年 十月 ٢٠ أكتوبر שישי 20 ⲁⲃ",
    "emoji": "🙂🎉👩‍👩‍👧‍👦 vendredi 🇫🇷 20 octobre 1933 🤖",
    "control": "vendredi\x00 20\x01\x02\x1b[31m octobre\x7f 1933\u200b\u202e\ufeff",
    "combining": "vendredi 2\u0301\u0301\u03010 octobre" + "\u0301" * 200,
    "reserved_lookalikes": "[START] [END] [PAD] [UNK] ## ##ab #",
    "punctuation": ".,;:!?¿¡«»()[]{}<>/\\|@#$%^&*-_=+~`'\"",
    "digits": "1" * 500,
}
INVALID_UTF8 = {
    "lone_continuation": b"\x80\x80 vendredi",
    "truncated_sequence": b"vendredi 20 octobre 19\xe2\x82",
    "latin1": "caf\xe9 cr\xe8me 20 octobre".encode("latin-1"),
    "utf16": "vendredi 20 octobre".encode("utf-16"),
    "encoded_surrogate": b"\xed\xa0\x80 20 octobre",
    "overlong": b"\xc0\xaf\xe0\x80\xaf 1933",
    "all_ff": b"\xff" * 64,
    "nul_bytes": b"\x00" * 10,
}


@pytest.mark.parametrize("name", sorted(HOSTILE) + sorted(INVALID_UTF8))
def test_hostile_input_translates(exported, name):
    text = HOSTILE.get(name, INVALID_UTF8.get(name))
    out = translate(exported, [text])
    assert out["translation"].shape == (1,)


def test_all_hostile_inputs_in_one_batch(exported):
    texts = list(HOSTILE.values()) + list(INVALID_UTF8.values())
    batch = translate(exported, texts)
    # Each one as in its own call (see also the batch independence tests).
    for i, text in enumerate(texts):
        alone = translate(exported, [text])
        assert batch["translation"][i] == alone["translation"][0]


def test_empty_batch(exported):
    out = translate(exported, [])
    assert out["translation"].shape == (0,)


def test_stepwise_decoder_export_takes_the_same_inputs(exported, tmp_path):
    """The other decoder (AttentionWrapper steps in the graph), untrained."""
    import dataclasses

    from keras_attention.training import runs as model_lib
    from examples.nmt import run as run_lib

    _, max_tokens, path = exported
    run = os.path.dirname(path)
    _, text_config, model_config, _ = run_lib.load_run_config(run)
    source, target = run_lib.make_processors(run, text_config)
    seq2seq = model_lib.build_model(dataclasses.replace(model_config, model="stepwise"))
    module = serving.TranslatorModule(
        seq2seq, source, target, max_output_tokens=MAX_OUTPUT_TOKENS
    )
    saved = serving.export_saved_model(module, str(tmp_path / "stepwise"))
    stepwise = (serving.load_saved_model(saved), max_tokens, saved)
    texts = list(HOSTILE.values()) + list(INVALID_UTF8.values())
    batch = translate(stepwise, texts)
    assert translate(stepwise, [])["translation"].shape == (0,)
    for i in (0, 3, len(texts) - 1):
        alone = translate(stepwise, [texts[i]])
        _assert_same_row(_row(alone, 0), _row(batch, i))


def test_invalid_utf8_is_replaced_not_dropped(exported):
    """Invalid bytes become U+FFFD; the valid words around them survive."""
    out = translate(exported, [b"vendredi \xff\xfe 20 octobre 1933"])
    pieces = b" ".join(t for t in out["source_tokens"][0] if t)
    words = pieces.replace(b" ##", b"").split()
    # U+FFFD is a symbol: each one is a word of its own, unknown to the
    # vocabulary.
    assert words == [b"vendredi", b"[UNK]", b"[UNK]", b"20", b"octobre", b"1933", b"[END]"]


def test_long_inputs_are_cut_at_the_documented_limit(exported):
    from examples.nmt import text as text_lib

    limit = text_lib.MAX_INPUT_CHARS
    long_text = "é" * (limit + 5000)
    cleaned = text_lib.clean_strings(tf.constant([long_text]))
    assert tf.strings.length(cleaned, unit="UTF8_CHAR").numpy()[0] == limit
    # Only the first `limit` characters matter: a difference after them
    # changes nothing.
    words = " ".join(["mai"] * (limit // 4))
    a = words[:limit] + " lundi 3"
    b = words[:limit] + " 1999 zzz octobre"
    out = translate(exported, [a, b])
    assert out["translation"][0] == out["translation"][1]
    np.testing.assert_array_equal(out["source_tokens"][0], out["source_tokens"][1])


def test_million_characters_are_cut_before_any_work(exported):
    # Bounded work, counted in sizes: of 1,000,000 characters only the
    # first `MAX_INPUT_CHARS` are tokenized (the result is that of the cut
    # text), the source is at most `max_tokens` tokens and the output at
    # most `MAX_OUTPUT_TOKENS`.
    from examples.nmt import text as text_lib

    text = "vendredi 20 octobre 1933 " * 40000  # 1,000,000 characters
    cut = text[: text_lib.MAX_INPUT_CHARS]
    out = translate(exported, [text, cut, "lundi"])
    assert out["source_tokens"].shape[1] <= exported[1]
    assert out["target_tokens"].shape[1] <= MAX_OUTPUT_TOKENS
    np.testing.assert_array_equal(
        out["source_tokens"][0], out["source_tokens"][1]
    )
    assert out["translation"][0] == out["translation"][1]
    np.testing.assert_array_equal(out["attention"][0], out["attention"][1])


def test_cli_translate_file_with_invalid_utf8(exported, tmp_path, capsys):
    from examples.nmt import cli

    path = tmp_path / "input.txt"
    path.write_bytes(b"vendredi 20 octobre 1933\n\x00\x01\n\ncaf\xe9 \xff\n")
    # The CLI reads the file as every file (`keras_attention.cli.io`): a
    # line that is not UTF-8 is one error line naming it, nothing printed.
    rc = cli.main(["translate", "--model", exported[2], "--file", str(path)])
    assert rc == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"python -m examples.nmt translate: error: {path}:4: not UTF-8 "
        "(byte 0xe9 at column 4); save the file as UTF-8"
    ]
    # NUL and control characters are text: translated.
    path.write_bytes(b"vendredi 20 octobre 1933\n\x00\x01\n")
    rc = cli.main(["translate", "--model", exported[2], "--file", str(path)])
    assert rc == 0
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    assert len(lines) == 2
    assert lines[0].startswith("vendredi 20 octobre 1933\t")


# ----------------------------------------------------------------------------
# Fuzzing.
FUZZ = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
unicode_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300
)


@FUZZ
@given(texts=st.lists(unicode_text, min_size=1, max_size=4))
def test_fuzz_unicode(exported, texts):
    translate(exported, texts)


@FUZZ
@given(texts=st.lists(st.binary(max_size=300), min_size=1, max_size=4))
def test_fuzz_bytes(exported, texts):
    translate(exported, texts)


# ----------------------------------------------------------------------------
# Batch independence.
SENTENCES = [
    "vendredi 20 octobre 1933",
    "Freitag, 20. Oktober 1933",
    "20 Ekim 1933 Cuma",
    "domingo, 25 de diciembre de 2050",
]
OTHERS = [
    "",
    "3",
    "lundi 1 janvier 2024 " * 6,
    "zzz " * 50,
    "martes, 4 de julio de 1995",
]


def _row(out, i):
    n = int(out["target_lengths"][i])
    s = int(np.sum(out["source_tokens"][i] != b""))
    return {
        "translation": out["translation"][i],
        "target_tokens": list(out["target_tokens"][i, :n]),
        "source_tokens": list(out["source_tokens"][i, :s]),
        "attention": out["attention"][i, :n, :s],
        "score": out["scores"][i],
    }


def _assert_same_row(a, b):
    assert a["translation"] == b["translation"]
    assert a["target_tokens"] == b["target_tokens"]
    assert a["source_tokens"] == b["source_tokens"]
    np.testing.assert_allclose(a["attention"], b["attention"], atol=1e-5)
    np.testing.assert_allclose(a["score"], b["score"], atol=1e-4)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_sentence_translates_the_same_alone_and_in_a_batch(exported, sentence):
    alone = _row(translate(exported, [sentence]), 0)
    # Longer and shorter neighbours on both sides, so the sentence is padded
    # in the source and decoded after and before others have finished.
    batch = OTHERS[:3] + [sentence] + OTHERS[3:]
    together = _row(translate(exported, batch), 3)
    _assert_same_row(alone, together)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    position=st.integers(0, 4),
    others=st.lists(st.sampled_from(OTHERS + SENTENCES), min_size=1, max_size=5),
    sentence=st.sampled_from(SENTENCES),
)
def test_batch_independence_any_position(exported, position, others, sentence):
    alone = _row(translate(exported, [sentence]), 0)
    position = min(position, len(others))
    batch = others[:position] + [sentence] + others[position:]
    _assert_same_row(alone, _row(translate(exported, batch), position))


# ----------------------------------------------------------------------------
# The `beam` signature: beam search, its width an input of the request.
@pytest.fixture(scope="module")
def beam_signature(exported):
    return tf.saved_model.load(exported[2]).signatures["beam"]


def translate_beam(beam_signature, exported, texts, width):
    out = beam_signature(
        text=tf.constant([_as_bytes(t) for t in texts], tf.string),
        beam_width=tf.constant(width, tf.int32),
    )
    out = {k: v.numpy() for k, v in out.items()}
    check_contract(out, len(texts), exported[1])
    return out


@pytest.mark.parametrize("width", [-7, 0, 1, 3, 10**6])
def test_beam_hostile_inputs_and_widths(exported, beam_signature, width):
    """Any width is clamped (documented `[1, MAX_BEAM_WIDTH]`), any text decoded."""
    texts = list(HOSTILE.values()) + list(INVALID_UTF8.values())
    out = translate_beam(beam_signature, exported, texts, width)
    if width <= 1:
        # Width 1 (and what clamps to it) is greedy decoding.
        greedy = translate(exported, texts)
        np.testing.assert_array_equal(out["translation"], greedy["translation"])
    assert translate_beam(beam_signature, exported, [], width)["translation"].shape == (0,)


@pytest.mark.parametrize("sentence", SENTENCES[:2])
def test_beam_sentence_translates_the_same_alone_and_in_a_batch(
    exported, beam_signature, sentence
):
    alone = _row(translate_beam(beam_signature, exported, [sentence], 3), 0)
    batch = OTHERS[:3] + [sentence] + OTHERS[3:]
    together = _row(translate_beam(beam_signature, exported, batch, 3), 3)
    _assert_same_row(alone, together)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=st.lists(st.one_of(unicode_text, st.binary(max_size=200)), min_size=1, max_size=3),
    width=st.integers(-3, 40),
)
def test_fuzz_beam(exported, beam_signature, texts, width):
    translate_beam(beam_signature, exported, texts, width)
