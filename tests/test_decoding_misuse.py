"""Misuse of the decoders: every argument outside its documented domain
gets a clear error naming it, or the documented result.

Property tests draw the bad values (NaN, infinities, zero, negatives, huge
numbers, wrong types, dtypes, ranks and batch sizes, ids outside the
vocabulary); the cases with a documented result check that result. On
TensorFlow, JAX and PyTorch (the decoders are backend-agnostic), with tiny
tensors.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import NEG_INF
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import sample_decode
from tests.test_decoding import END
from tests.test_decoding import START
from tests.test_decoding import ToyModel
from tests.test_decoding import np_

VOCAB = 6
BATCH = 2
MODEL = ToyModel(60, batch_size=BATCH, vocab_size=VOCAB, source_length=3)
DECODERS = {
    "greedy": greedy_decode,
    "beam": lambda *a, **k: beam_search_decode(*a, beam_width=2, **k),
    "sample": lambda *a, **k: sample_decode(*a, seed=0, **k),
}
FEW = settings(max_examples=12, deadline=None)


def decode(name, **kwargs):
    kwargs.setdefault("max_length", 4)
    max_length = kwargs.pop("max_length")
    return DECODERS[name](
        MODEL.step, START, MODEL.initial_state(), END, max_length, **kwargs
    )


def tensor(value, dtype="int32"):
    return ops.convert_to_tensor(np.asarray(value), dtype=dtype)


NAN_INF = st.sampled_from([math.nan, math.inf, -math.inf])
WRONG_TYPES = st.sampled_from(["1", b"1", [1], None, object()])
NEGATIVE = st.floats(max_value=-1e-6, allow_nan=False, allow_infinity=False)
HUGE_INT = st.integers(min_value=2**31, max_value=2**70)


# ----------------------------------------------------------------------
# Scalar arguments: drawn from outside their domain.

BAD_SCALARS = {
    "length_penalty": st.one_of(NAN_INF, NEGATIVE, WRONG_TYPES,
                                st.just(True)),
    "coverage_penalty": st.one_of(NAN_INF, NEGATIVE, WRONG_TYPES),
    "beam_width": st.one_of(st.integers(max_value=0), st.just(2.5),
                            st.just(True), st.sampled_from(["2", None])),
    "convention": st.sampled_from(["TFA", "gnmt", "", None, 1]),
    "return_all_beams": st.sampled_from(["yes", 1, None, 0.0]),
    "from_logits": st.sampled_from(["False", 1, None, [True]]),
    "max_length": st.one_of(st.integers(max_value=-1), HUGE_INT,
                            st.just(4.0), st.just(True), st.just("4")),
    "end_token": st.one_of(st.integers(max_value=-1),
                           st.integers(min_value=VOCAB, max_value=2**40),
                           st.just(1.0), st.just("1"), st.just(True)),
    "pad_token": st.one_of(st.integers(max_value=-1),
                           st.integers(min_value=VOCAB, max_value=10**6),
                           st.just(0.5)),
}


@FEW
@given(name=st.sampled_from(sorted(BAD_SCALARS)), data=st.data())
def test_bad_beam_search_scalars_raise_naming_the_argument(name, data):
    bad = data.draw(BAD_SCALARS[name])
    kwargs = {"max_length": 4, "end_token": END, "beam_width": 2}
    kwargs[name] = bad
    with pytest.raises(ValueError, match=f"`{name}`"):
        beam_search_decode(
            MODEL.step, START, MODEL.initial_state(),
            kwargs.pop("end_token"), kwargs.pop("max_length"), **kwargs
        )


BAD_SAMPLING = {
    "temperature": st.one_of(NAN_INF, NEGATIVE, WRONG_TYPES),
    "top_k": st.one_of(st.integers(max_value=0), st.just(1.5),
                       st.just(True), NAN_INF),
    "top_p": st.one_of(st.floats(max_value=0.0), NAN_INF,
                       st.floats(min_value=1.0, exclude_min=True,
                                 allow_infinity=False)),
    "seed": st.sampled_from(["0", 1.5, True, [1]]),
}


@FEW
@given(name=st.sampled_from(sorted(BAD_SAMPLING)), data=st.data())
def test_bad_sampling_settings_raise_naming_the_argument(name, data):
    bad = data.draw(BAD_SAMPLING[name])
    with pytest.raises(ValueError, match=f"`{name}`.*Received: {name}"):
        sample_decode(MODEL.step, START, MODEL.initial_state(), END, 4,
                      **{name: bad})


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, "0.6"])
def test_penalty_functions_check_their_weight(value):
    lengths = tensor([1, 2])
    with pytest.raises(ValueError, match="`alpha`"):
        decoding.length_penalty(lengths, value)
    with pytest.raises(ValueError, match="`beta`"):
        decoding.coverage_penalty(tensor([[0.5, 1.0]], "float32"), value)


def test_coverage_penalty_never_takes_the_log_of_a_bad_entry():
    coverage = tensor([[0.5, 0.0, -1.0, math.nan, 2.0]], "float32")
    got = np_(decoding.coverage_penalty(coverage, 1.0))
    np.testing.assert_allclose(got, [math.log(0.5)], rtol=1e-6)


# ----------------------------------------------------------------------
# Token ids and tensors of the wrong dtype, rank or batch size.


@pytest.mark.parametrize("decoder", sorted(DECODERS))
@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"max_length": tensor([4, 4, 4])}, "max_length"),
        ({"max_length": tensor([4.0, 4.0], "float32")}, "max_length"),
        ({"max_length": tensor([[4, 4]])}, "max_length"),
        ({"prefix": tensor([[2, 3]] * 3)}, "prefix"),
        ({"prefix": tensor([[2, 3]] * 2, "float32")}, "prefix"),
        ({"prefix": tensor([2, 3])}, "prefix"),
        ({"prefix": tensor([[2, 3]] * 2),
          "prefix_lengths": tensor([1, 1, 1])}, "prefix_lengths"),
        ({"prefix": tensor([[2, 3]] * 2),
          "prefix_lengths": tensor([3, 1])}, "prefix_lengths"),
        ({"prefix": tensor([[2, 3]] * 2),
          "prefix_lengths": tensor([-1, 1])}, "prefix_lengths"),
        ({"prefix": tensor([[2, 3]] * 2),
          "prefix_lengths": tensor([1.0, 1.0], "float32")},
         "prefix_lengths"),
        ({"prefix_lengths": tensor([1, 1])}, "prefix_lengths"),
        ({"end_token": tensor(VOCAB + 3)}, "end_token"),
        ({"end_token": tensor([1, 1])}, "end_token"),
    ],
)
def test_bad_tensors_raise_naming_the_argument(decoder, kwargs, name):
    kwargs = dict(kwargs)
    end = kwargs.pop("end_token", END)
    with pytest.raises(ValueError, match=f"`{name}`"):
        DECODERS[decoder](MODEL.step, START, MODEL.initial_state(), end,
                          kwargs.pop("max_length", 4), **kwargs)


@FEW
@given(
    decoder=st.sampled_from(sorted(DECODERS)),
    bad=st.one_of(st.integers(min_value=VOCAB, max_value=2**31 - 1),
                  st.integers(min_value=-2**31, max_value=-1)),
    column=st.integers(0, 1),
)
def test_prefix_ids_outside_the_vocabulary_raise(decoder, bad, column):
    prefix = np.array([[2, 3], [4, 2]])
    prefix[1, column] = bad
    with pytest.raises(ValueError, match=r"`prefix`.*prefix\[1, "):
        decode(decoder, prefix=tensor(prefix),
               prefix_lengths=tensor([2, 2]))


@pytest.mark.parametrize(
    "start", [tensor([-1, 0]), tensor([0.0, 1.0], "float32"),
              tensor([[0, 0]])],
)
def test_bad_start_tokens_raise(start):
    with pytest.raises(ValueError, match="`start_tokens`"):
        greedy_decode(MODEL.step, start, MODEL.initial_state(), END, 4)


def test_other_callables_and_states():
    with pytest.raises(ValueError, match="`step_fn`"):
        greedy_decode("step", START, MODEL.initial_state(), END, 4)
    with pytest.raises(ValueError, match="initial_state"):
        greedy_decode(MODEL.step, tensor([START] * BATCH),
                      {"x": ops.zeros((BATCH + 1, 2))}, END, 4)
    with pytest.raises(ValueError, match="`n_best`"):
        beam_search_nbest(MODEL.step, START, MODEL.initial_state(), END, 4,
                          n_best=3, beam_width=2)
    with pytest.raises(ValueError, match="`n_best`"):
        beam_search_nbest(MODEL.step, START, MODEL.initial_state(), END, 4,
                          n_best=0)
    with pytest.raises(ValueError, match="`multiplier`"):
        decoding.tile_state({"x": ops.zeros((2, 1))}, 0)
    with pytest.raises(ValueError, match="`indices`"):
        decoding.gather_state({"x": ops.zeros((2, 1))},
                              tensor([0.0, 1.0], "float32"))


# ----------------------------------------------------------------------
# Documented results.


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_minus_one_is_prefix_padding(decoder):
    padded = decode(decoder, prefix=tensor([[4, -1], [2, 5]]))
    explicit = decode(decoder, prefix=tensor([[4, 0], [2, 5]]),
                      prefix_lengths=tensor([1, 2]))
    np.testing.assert_array_equal(np_(padded["tokens"]),
                                  np_(explicit["tokens"]))
    assert np_(padded["tokens"])[0, 0] == 4
    np.testing.assert_array_equal(np_(padded["tokens"])[1, :2], [2, 5])


def forbidding_step(tokens, state):
    """The model gives token 4 a probability of exactly 0, and NaN to
    token 5."""
    log_probs, state, attention = MODEL.step(tokens, state)
    vocab = ops.arange(VOCAB)[None, :]
    log_probs = ops.where(vocab == 4, -float("inf"), log_probs)
    log_probs = ops.where(vocab == 5, float("nan"), log_probs)
    return log_probs, state, attention


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_prefix_is_forced_where_the_model_gives_minus_inf(decoder):
    out = DECODERS[decoder](
        forbidding_step, START, MODEL.initial_state(), END, 4,
        prefix=tensor([[4, 4], [2, 4]]),
    )
    np.testing.assert_array_equal(np_(out["tokens"])[:, :2],
                                  [[4, 4], [2, 4]])
    scores = np_(out["scores"])
    assert np.all(np.isfinite(scores)) and np.all(scores >= 3 * NEG_INF)
    # NaN log-probabilities count as NEG_INF: token 5 is never chosen.
    free = decode(decoder, max_length=5)
    assert np.all(np.isfinite(np_(free["scores"])))
    out = DECODERS[decoder](forbidding_step, START, MODEL.initial_state(),
                            END, 5)
    assert 5 not in np_(out["tokens"])


def test_per_sentence_limits_of_the_right_batch_size():
    out = greedy_decode(MODEL.step, START, MODEL.initial_state(), END,
                        tensor([0, 3]))
    assert np_(out["lengths"])[0] == 0
    assert np_(out["lengths"])[1] <= 3


@pytest.mark.tf_only
def test_in_a_graph_bad_prefix_values_are_clamped():
    import tensorflow as tf

    @tf.function(
        input_signature=[tf.TensorSpec([None, None], tf.int32),
                         tf.TensorSpec([None], tf.int32)]
    )
    def run(prefix, lengths):
        return greedy_decode(MODEL.step, START, MODEL.initial_state(), END,
                             4, prefix=prefix, prefix_lengths=lengths)

    # Lengths clamped to [0, P]; a prefix ends at its first id outside
    # the vocabulary.
    out = run(tf.constant([[4, 99], [2, 3]]), tf.constant([2, 7]))
    reference = greedy_decode(
        MODEL.step, START, MODEL.initial_state(), END, 4,
        prefix=tensor([[4, 0], [2, 3]]), prefix_lengths=tensor([1, 2]),
    )
    np.testing.assert_array_equal(np_(out["tokens"]),
                                  np_(reference["tokens"]))


# ----------------------------------------------------------------------
# Ensembles.


def test_ensembles_of_other_vocabulary_sizes_raise():
    small = ToyModel(61, batch_size=BATCH, vocab_size=VOCAB - 1,
                     source_length=3)
    step = decoding.ensemble_step([MODEL.step, small.step])
    state = decoding.ensemble_state(MODEL.initial_state(),
                                    small.initial_state())
    with pytest.raises(ValueError, match=r"step_fns\[1\].*\(2, 5\)"):
        greedy_decode(step, START, state, END, 4)
    with pytest.raises(ValueError, match="`step_fns`"):
        decoding.ensemble_step(MODEL.step)
    with pytest.raises(ValueError, match="`from_logits`"):
        decoding.ensemble_step([MODEL.step], from_logits="no")


# ----------------------------------------------------------------------
# Unknown-word replacement.

UNK = 3


def unknown_inputs():
    target = tensor([[UNK, 5], [UNK, UNK]])
    attention = tensor(
        [[[0.1, 0.9], [0.5, 0.5]], [[0.8, 0.2], [0.3, 0.7]]], "float32"
    )
    source = tensor([[10, 11], [20, 21]])
    return target, attention, source


def test_an_all_masked_row_copies_nothing():
    target, attention, source = unknown_inputs()
    mask = tensor([[True, True], [False, False]], "bool")
    out = np_(decoding.replace_unknown(target, attention, source, UNK,
                                       source_mask=mask))
    np.testing.assert_array_equal(out, [[11, 5], [UNK, UNK]])
    positions = np_(decoding.unknown_source_positions(
        target, attention, UNK, source_mask=mask))
    np.testing.assert_array_equal(positions, [[1, -1], [-1, -1]])


def test_masked_and_nan_weights_are_never_copied():
    target, _, source = unknown_inputs()
    attention = tensor(
        [[[math.nan, 0.1], [0.5, 0.5]], [[99.0, 0.2], [math.nan, math.nan]]],
        "float32",
    )
    mask = tensor([[True, True], [False, True]], "bool")
    out = np_(decoding.replace_unknown(target, attention, source, UNK,
                                       source_mask=mask))
    np.testing.assert_array_equal(out, [[11, 5], [21, UNK]])


@pytest.mark.parametrize(
    "change, name",
    [
        ({"attention": ops.zeros((2, 3, 2))}, "attention"),
        ({"attention": ops.zeros((3, 2, 2))}, "attention"),
        ({"source": tensor([[1, 2, 3], [4, 5, 6]])}, "source_tokens"),
        ({"source": tensor([[1, 2]])}, "source_tokens"),
        ({"mask": tensor([[True, True, True]] * 2, "bool")}, "source_mask"),
        ({"mask": tensor([[1.0, 0.0]] * 2, "float32")}, "source_mask"),
        ({"target": tensor([[1.0, 2.0]] * 2, "float32")}, "target_tokens"),
        ({"unknown": 1.5}, "unknown_token"),
        ({"unknown": tensor([3, 3])}, "unknown_token"),
    ],
)
def test_mismatched_unknown_replacement_inputs_raise(change, name):
    target, attention, source = unknown_inputs()
    target = change.get("target", target)
    attention = change.get("attention", attention)
    source = change.get("source", source)
    with pytest.raises(ValueError, match=f"`{name}`"):
        decoding.replace_unknown(target, attention, source,
                                 change.get("unknown", UNK),
                                 source_mask=change.get("mask"))



# ----------------------------------------------------------------------
# Empty inputs: a defined result or a clear error, on every backend.


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_an_empty_batch_decodes_to_empty_outputs(decoder):
    state = {"table": ops.zeros((0, VOCAB, VOCAB)),
             "inner": (ops.zeros((0, 3)), ops.zeros((0, 3)))}
    out = DECODERS[decoder](MODEL.step, ops.zeros((0,), "int32"), state,
                            END, 4)
    assert np_(out["tokens"]).shape[0] == 0
    assert np_(out["scores"]).shape == (0,)


def test_filter_logits_on_zero_rows_and_an_empty_vocabulary():
    got = decoding.filter_logits(np.zeros((0, 5), "float32"), 0.5, 2, 0.5)
    assert np_(got).shape == (0, 5)
    with pytest.raises(ValueError, match="`logits`.*vocab_size >= 1"):
        decoding.filter_logits(np.zeros((2, 0), "float32"))


def test_unknown_replacement_with_an_empty_source():
    out = decoding.replace_unknown(
        tensor([[UNK, 1]]), ops.zeros((1, 2, 0)), tensor(np.zeros((1, 0))),
        UNK,
    )
    np.testing.assert_array_equal(np_(out), [[UNK, 1]])


def test_state_helpers_check_their_tensors():
    state = {"x": ops.zeros((2, 1))}
    with pytest.raises(ValueError, match="`multiplier`"):
        decoding.tile_state(state, tensor(2.0, "float32"))
    assert np_(decoding.tile_state(state, tensor(2))["x"]).shape == (4, 1)
    with pytest.raises(ValueError, match=r"`indices`.*\[0, 2\)"):
        decoding.gather_state(state, tensor([0, 5]))
    with pytest.raises(ValueError, match="`indices`"):
        decoding.gather_state(state, tensor([-1, 0]))


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_max_length_beyond_a_buffer_raises_before_allocating(decoder):
    # A valid int32 `max_length` whose up-front output buffers (rows x
    # max_length x source length for the attention) exceed what a tensor
    # holds: a ValueError naming it, not an allocation failure deep inside
    # the backend.
    with pytest.raises(ValueError, match="`max_length` is too large"):
        decode(decoder, max_length=2**31 - 1)


def test_buffer_check_counts_every_dimension():
    from keras_attention.decoding.args import check_buffer_size

    check_buffer_size(2, 2**20, (3,))  # 6M elements: allowed
    check_buffer_size(8, 2**28 - 1, ())  # just under 2**31
    with pytest.raises(ValueError, match="2 x 1073741824 x 3"):
        check_buffer_size(2, 2**30, (3,))
    with pytest.raises(ValueError, match="max_length=268435456"):
        check_buffer_size(8, 2**28, ())
    # Dynamic sizes (traced functions) are not checked here.
    check_buffer_size(None, 2**30, (3,))
