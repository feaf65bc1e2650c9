"""Reliability of `Seq2Seq.generate` and `Seq2Seq.align` (every backend):
source ids checked eagerly (read as `[UNK]` inside a traced function),
empty batches and empty sources, and hypotheses that never hold `[PAD]` or
`[START]` before their end (`forbidden_tokens` of every decoder)."""

import numpy as np
import pytest

import keras
from keras import ops

from keras_attention import decoding
from keras_attention.seq2seq import Seq2Seq
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.seq2seq.tokens import PAD_ID
from keras_attention.seq2seq.tokens import START_ID
from keras_attention.seq2seq.tokens import UNK_ID

BACKEND = keras.backend.backend()
SOURCE_VOCAB, TARGET_VOCAB = 9, 7
SOURCE = np.array([[5, 6, 7, 3], [8, 5, 3, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5], [2, 6, 0]], "int32")
STRATEGIES = [
    ("greedy", {}),
    ("beam", {"beam_width": 3}),
    ("nbest", {"n_best": 2, "beam_width": 3}),
    ("sample", {"seed": 1}),
]
FORBIDDEN = (PAD_ID, START_ID)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(3)
    return Seq2Seq(
        source_vocab_size=SOURCE_VOCAB, target_vocab_size=TARGET_VOCAB,
        embedding_dim=4, units=4, dropout=0.0,
    )


def _numpy(out):
    return {k: None if v is None else ops.convert_to_numpy(v)
            for k, v in out.items()}


def _before_end(tokens):
    """The ids of each hypothesis before its first `[END]`, as lists."""
    rows = np.asarray(tokens).reshape(-1, np.shape(tokens)[-1])
    kept = []
    for row in rows:
        ends = np.flatnonzero(row == END_ID)
        kept.append(row[: ends[0] if ends.size else len(row)].tolist())
    return kept


# ----------------------------------------------------------------------
# 1. Source ids (and `target_in`) checked eagerly.

BAD_SOURCES = [
    ("negative", np.array([[5, -1, 3]], "int32"), "source_ids[0, 1]=-1"),
    ("too large", np.array([[5, SOURCE_VOCAB, 3]], "int32"),
     f"source_ids[0, 1]={SOURCE_VOCAB}"),
    ("float", np.array([[5.0, 6.0, 3.0]], "float32"),
     "source_ids.dtype=float32"),
    ("rank 1", np.array([5, 6, 3], "int32"), "source_ids.shape=(3,)"),
    ("rank 3", np.ones((1, 2, 3), "int32"), "source_ids.shape=(1, 2, 3)"),
]


@pytest.mark.parametrize("compile", [True, False])
@pytest.mark.parametrize(
    "source, received", [b[1:] for b in BAD_SOURCES],
    ids=[b[0] for b in BAD_SOURCES],
)
def test_generate_refuses_bad_source_ids(model, source, received, compile):
    with pytest.raises(ValueError, match="Seq2Seq.generate") as info:
        model.generate(source, max_length=3, compile=compile)
    message = str(info.value)
    assert "`source_ids`" in message and f"Received: {received}" in message
    if "[0, 1]" in received:
        assert f"in [0, {SOURCE_VOCAB})" in message


@pytest.mark.parametrize(
    "source, received", [b[1:] for b in BAD_SOURCES],
    ids=[b[0] for b in BAD_SOURCES],
)
def test_align_refuses_bad_source_ids(model, source, received):
    target_in = np.full((np.shape(source)[0] if np.ndim(source) > 1 else 1,
                         2), START_ID, "int32")
    with pytest.raises(ValueError, match="Seq2Seq.align") as info:
        model.align(source, target_in)
    assert f"Received: {received}" in str(info.value)


@pytest.mark.parametrize(
    "target_in, received",
    [
        (np.array([[2, -3]], "int32"), "target_in[0, 1]=-3"),
        (np.array([[2, TARGET_VOCAB]], "int32"),
         f"target_in[0, 1]={TARGET_VOCAB}"),
        (np.array([[2.0, 4.0]], "float32"), "target_in.dtype=float32"),
        (np.array([2, 4], "int32"), "target_in.shape=(2,)"),
    ],
)
def test_align_refuses_bad_target_in(model, target_in, received):
    with pytest.raises(ValueError, match="`target_in`") as info:
        model.align(SOURCE[:1], target_in)
    assert f"Received: {received}" in str(info.value)


def test_align_refuses_different_batch_sizes(model):
    with pytest.raises(ValueError, match="same batch size") as info:
        model.align(SOURCE, TARGET_IN[:1])
    assert "source_ids.shape=(2, 4), target_in.shape=(1, 3)" in str(
        info.value
    )


def test_valid_ids_of_any_integer_dtype_decode(model):
    out = _numpy(model.generate(SOURCE.astype("int64"), max_length=3,
                                compile=False))
    expected = _numpy(model.generate(SOURCE, max_length=3, compile=False))
    np.testing.assert_array_equal(out["tokens"], expected["tokens"])


@pytest.mark.skipif(BACKEND != "tensorflow", reason="tf.function")
def test_ids_outside_the_vocabulary_read_as_unk_in_a_tf_function(model):
    import tensorflow as tf

    bad = np.array([[5, -1, SOURCE_VOCAB + 4, 3]], "int32")
    fixed = np.array([[5, UNK_ID, UNK_ID, 3]], "int32")
    generate = tf.function(
        lambda ids: model.generate(ids, max_length=4, compile=False),
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
        autograph=False,
    )
    traced = _numpy(generate(bad))
    eager = _numpy(model.generate(fixed, max_length=4, compile=False))
    np.testing.assert_array_equal(traced["tokens"], eager["tokens"])
    np.testing.assert_allclose(traced["scores"], eager["scores"], atol=1e-5)
    align = tf.function(
        lambda s, t: model.align(s, t),
        input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2,
        autograph=False,
    )
    np.testing.assert_allclose(
        align(bad, np.array([[2, -1, TARGET_VOCAB]], "int32")),
        model.align(fixed, np.array([[2, UNK_ID, UNK_ID]], "int32")),
        atol=1e-6,
    )


# ----------------------------------------------------------------------
# 2. Empty batches give empty outputs; an empty source is refused.


@pytest.mark.parametrize("compile", [True, False])
@pytest.mark.parametrize("strategy, options", STRATEGIES)
def test_empty_batch_gives_empty_outputs(model, strategy, options, compile):
    out = _numpy(model.generate(
        np.zeros((0, 4), "int32"), max_length=5, strategy=strategy,
        compile=compile, **options,
    ))
    lead = (0, options["n_best"]) if strategy == "nbest" else (0,)
    for key in ("lengths", "scores", "log_probs"):
        assert out[key].shape == lead, key
    assert out["tokens"].shape[:-1] == lead
    assert out["attention"].shape[:-2] == lead
    assert out["attention"].shape[-1] == 4


@pytest.mark.parametrize("compile", [True, False])
@pytest.mark.parametrize("strategy, options", STRATEGIES)
def test_empty_source_is_refused(model, strategy, options, compile):
    with pytest.raises(ValueError, match="at least one token") as info:
        model.generate(np.zeros((2, 0), "int32"), max_length=5,
                       strategy=strategy, compile=compile, **options)
    assert "`source_ids`" in str(info.value)
    assert "[END]" in str(info.value)
    assert "Received: source_ids.shape=(2, 0)" in str(info.value)


def test_align_empty_batch_and_empty_source(model):
    out = ops.convert_to_numpy(
        model.align(np.zeros((0, 4), "int32"), np.zeros((0, 3), "int32"))
    )
    assert out.shape == (0, 3, 4)
    with pytest.raises(ValueError, match="at least one token"):
        model.align(np.zeros((2, 0), "int32"), TARGET_IN)


def test_empty_batch_still_checks_options(model):
    with pytest.raises(ValueError, match="beam_width"):
        model.generate(np.zeros((0, 4), "int32"), strategy="beam",
                       beam_width=0)


# ----------------------------------------------------------------------
# 3. No `[PAD]` or `[START]` before a hypothesis' end.

VOCAB = 5  # [PAD] [UNK] [START] [END] and one word: fewer than 4 beams


def _prefers_pad_and_start(tokens, state):
    """A step that puts most of its mass on [PAD] and [START], and makes
    [END] likely only after three steps."""
    t = state["t"]
    rows = ops.shape(tokens)[0]
    base = np.array([6.0, 1.0, 5.0, -4.0, 0.5], "float32")
    later = np.array([6.0, 1.0, 5.0, 3.0, 0.5], "float32")
    logits = ops.where(
        ops.expand_dims(t >= 3, 1),
        ops.convert_to_tensor(later), ops.convert_to_tensor(base),
    )
    logits = ops.broadcast_to(logits, (rows, VOCAB))
    return ops.log_softmax(logits, axis=-1), {"t": t + 1}, None


DECODERS = [
    ("greedy", decoding.greedy_decode, {}),
    ("beam", decoding.beam_search_decode,
     {"beam_width": 4, "return_all_beams": True}),
    ("nbest", decoding.beam_search_nbest, {"n_best": 4, "beam_width": 4}),
    ("sample", decoding.sample_decode, {"seed": 0, "temperature": 2.0}),
]


@pytest.mark.parametrize(
    "decode, options", [d[1:] for d in DECODERS], ids=[d[0] for d in DECODERS]
)
def test_forbidden_tokens_never_before_the_end(decode, options):
    state = {"t": ops.zeros((2,), "int32")}
    start = ops.full((2,), START_ID, "int32")
    free = _numpy(decode(_prefers_pad_and_start, start, state, END_ID, 6,
                         **options))
    assert any(set(FORBIDDEN) & set(h) for h in _before_end(free["tokens"]))
    out = _numpy(decode(_prefers_pad_and_start, start, state, END_ID, 6,
                        forbidden_tokens=FORBIDDEN, **options))
    for key in ("tokens", "beam_tokens"):
        if key in out:
            for hypothesis in _before_end(out[key]):
                assert not set(FORBIDDEN) & set(hypothesis), hypothesis
    assert np.all(np.isfinite(out["scores"]))


def test_forbidden_tokens_leave_a_prefix_alone():
    state = {"t": ops.zeros((1,), "int32")}
    out = _numpy(decoding.greedy_decode(
        _prefers_pad_and_start, np.array([START_ID], "int32"), state,
        END_ID, 5, prefix=np.array([[4, START_ID]], "int32"),
        forbidden_tokens=FORBIDDEN,
    ))
    assert out["tokens"][0, :2].tolist() == [4, START_ID]
    assert not set(FORBIDDEN) & set(_before_end(out["tokens"][:, 2:])[0])


@pytest.mark.parametrize(
    "forbidden, match",
    [((END_ID,), "end_token"), ((VOCAB,), "token ids in"),
     ("02", "sequence"), ((-1,), "forbidden_tokens")],
)
def test_forbidden_tokens_are_checked(forbidden, match):
    state = {"t": ops.zeros((1,), "int32")}
    with pytest.raises(ValueError, match=match):
        decoding.greedy_decode(
            _prefers_pad_and_start, np.array([START_ID], "int32"), state,
            END_ID, 3, forbidden_tokens=forbidden,
        )


@pytest.fixture(scope="module")
def pad_loving_model():
    """A model whose output bias makes [PAD] and [START] the likeliest."""
    keras.utils.set_random_seed(5)
    model = Seq2Seq(
        source_vocab_size=SOURCE_VOCAB, target_vocab_size=VOCAB,
        embedding_dim=4, units=4, dropout=0.0,
    )
    bias = np.zeros((VOCAB,), "float32")
    bias[PAD_ID], bias[START_ID], bias[END_ID] = 8.0, 7.0, -2.0
    model.output_projection.bias.assign(bias)
    return model


@pytest.mark.parametrize("compile", [True, False])
@pytest.mark.parametrize("strategy, options", STRATEGIES + [
    ("nbest", {"n_best": 4, "beam_width": 4}),
])
def test_generate_never_holds_pad_or_start(
    pad_loving_model, strategy, options, compile
):
    out = _numpy(pad_loving_model.generate(
        SOURCE, max_length=6, strategy=strategy, compile=compile, **options
    ))
    for hypothesis in _before_end(out["tokens"]):
        assert not set(FORBIDDEN) & set(hypothesis), hypothesis
