"""Greedy decoding from logits picks and scores only the chosen token.

`greedy_decode(from_logits=True)` runs no vocabulary-wide `log_softmax`
or NaN guard: `best_allowed` takes the best allowed token and one softmax. Its
tokens, lengths and scores must be those of the general path (the same
step returning `log_softmax(logits)`, `from_logits=False`), whatever the
logits hold (NaN, infinities, values far apart), with forbidden tokens,
prefixes and per-sentence limits; and its scores those of a numpy
`log_softmax`.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

import keras_attention as ka
from keras_attention.decoding.args import NEG_INF
from keras_attention.decoding.greedy import best_allowed

VOCAB, STEPS, END = 7, 6, 2


def _step(table: np.ndarray, feedback: np.ndarray):
    """A step whose logits are `table[row, t] + feedback[previous token]`:
    a wrong pick changes every later step."""
    table = ops.convert_to_tensor(table.astype("float32"))
    feedback = ops.convert_to_tensor(feedback.astype("float32"))
    rows = table.shape[0]

    def logits(tokens, state):
        t = state["t"]
        at_t = ops.take_along_axis(
            table, ops.reshape(ops.minimum(t, STEPS - 1), (rows, 1, 1)), 1
        )[:, 0]
        at_t = at_t + ops.take(feedback, tokens, axis=0)
        weights = ops.softmax(ops.ones((rows, 3)))
        return at_t, {"t": t + 1}, weights

    def log_probs(tokens, state):
        out, state, weights = logits(tokens, state)
        return ops.log_softmax(out, axis=-1), state, weights

    return logits, log_probs, {"t": ops.zeros((rows,), "int32")}


def _decode_both(table, feedback, **options):
    logits, log_probs, state = _step(table, feedback)
    rows = table.shape[0]
    start = ops.zeros((rows,), "int32")
    fast = ka.greedy_decode(logits, start, state, END, STEPS,
                            from_logits=True, **options)
    general = ka.greedy_decode(log_probs, start, state, END, STEPS,
                               **options)
    return ({k: ops.convert_to_numpy(v) for k, v in fast.items()},
            {k: ops.convert_to_numpy(v) for k, v in general.items()})


def _assert_same(fast, general):
    np.testing.assert_array_equal(fast["tokens"], general["tokens"])
    np.testing.assert_array_equal(fast["lengths"], general["lengths"])
    np.testing.assert_allclose(fast["scores"], general["scores"],
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(fast["attention"], general["attention"])


SPECIAL = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e10, -1e10]
logit = st.one_of(
    st.floats(-30, 30, allow_nan=False, width=32),
    st.sampled_from(SPECIAL),
)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 4).flatmap(
        lambda rows: st.tuples(
            st.lists(logit, min_size=rows * STEPS * VOCAB,
                     max_size=rows * STEPS * VOCAB).map(
                lambda v: np.array(v).reshape(rows, STEPS, VOCAB)),
            st.lists(st.integers(-1, VOCAB - 1), min_size=rows * 3,
                     max_size=rows * 3).map(
                lambda v: np.array(v).reshape(rows, 3)),
            st.lists(st.integers(0, STEPS), min_size=rows, max_size=rows),
        )
    ),
    st.lists(st.sampled_from([0, 1, 3, 4, 6]), max_size=4, unique=True),
    st.booleans(),
    st.booleans(),
)
def test_the_same_decode_as_log_softmax_of_the_logits(
    drawn, forbidden, with_prefix, with_limits
):
    table, prefix, limits = drawn
    rng = np.random.default_rng(table.shape[0])
    feedback = rng.normal(size=(VOCAB, VOCAB))
    options = {"forbidden_tokens": tuple(forbidden)}
    if with_prefix:
        options["prefix"] = ops.convert_to_tensor(prefix.astype("int32"))
    fast, general = _decode_both(table, feedback, **options)
    _assert_same(fast, general)
    if with_limits:
        logits, log_probs, state = _step(table, feedback)
        start = ops.zeros((table.shape[0],), "int32")
        limits = ops.convert_to_tensor(np.array(limits, "int32"))
        fast = ka.greedy_decode(logits, start, state, END, limits,
                                from_logits=True, **options)
        general = ka.greedy_decode(log_probs, start, state, END, limits,
                                   **options)
        _assert_same(*({k: ops.convert_to_numpy(v) for k, v in d.items()}
                       for d in (fast, general)))


def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def _penalty(vocab_size, forbidden):
    """The row `run_loop` gives `best_allowed`: 0, `-inf` where forbidden."""
    row = np.zeros((1, vocab_size), "float32")
    row[0, list(forbidden)] = -np.inf
    return ops.convert_to_tensor(row)


def test_best_allowed_against_numpy():
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(6, 50)) * 4).astype("float32")
    logits[1, 7] = 40.0          # forbidden, and far the best
    logits[2] += 1e6             # large: the score keeps its precision
    logits[3, :] = -50.0         # ties: the first allowed token
    logits[4, 0] = 150.0         # forbidden, the allowed ones ~ -150: exact
    forbidden = (0, 7)
    tokens, scores = best_allowed(
        ops.convert_to_tensor(logits), _penalty(50, forbidden), None, 1,
        forbidden)
    tokens, scores = ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)
    reference = _log_softmax(logits.astype("float64"))
    masked = reference.copy()
    masked[:, list(forbidden)] = -np.inf
    expected = masked.argmax(axis=1)
    np.testing.assert_array_equal(tokens, expected)
    assert tokens[1] != 7 and tokens[3] == 1
    assert scores[4] < -110.0  # exp() of it underflows float32
    np.testing.assert_allclose(
        scores, reference[np.arange(6), expected], rtol=1e-5, atol=1e-5
    )


def test_best_allowed_forces_the_prefix_and_guards_bad_rows():
    logits = np.array(
        [[0.0, 5.0, 1.0, 2.0],      # inside its prefix: token 2
         [np.nan, 1.0, 2.0, 3.0],   # NaN: NEG_INF and the first allowed
         [np.inf, 1.0, 2.0, 3.0],   # +inf: the same
         [-np.inf] * 4,             # nothing finite: the same
         [1.0, -3e9, -3e9, -3e9]],  # the allowed ones below NEG_INF
        "float32")
    forced = ops.convert_to_tensor(np.array([2, 0, 0, 3, 0], "int32"))
    inside = ops.convert_to_tensor(
        np.array([True, False, False, True, False]))
    tokens, scores = best_allowed(
        ops.convert_to_tensor(logits), _penalty(4, (0,)), (forced, inside), 1,
        (0,))
    tokens, scores = ops.convert_to_numpy(tokens), ops.convert_to_numpy(scores)
    np.testing.assert_array_equal(tokens, [2, 1, 1, 3, 1])
    np.testing.assert_allclose(
        scores[0], _log_softmax(logits[0].astype("float64"))[2], rtol=1e-6)
    np.testing.assert_array_equal(scores[1:], [NEG_INF] * 4)


def test_best_allowed_needs_the_penalty_and_the_ids_together():
    logits = ops.zeros((2, 5))
    with pytest.raises(ValueError, match="penalty.*forbidden"):
        best_allowed(logits, _penalty(5, (0,)), None, 1)
    with pytest.raises(ValueError, match="penalty.*forbidden"):
        best_allowed(logits, None, None, 1, (0,))


@pytest.mark.parametrize("from_logits", ["yes", 1, None])
def test_from_logits_must_be_a_bool(from_logits):
    logits, _, state = _step(np.zeros((1, STEPS, VOCAB)), np.zeros((VOCAB, VOCAB)))
    with pytest.raises(TypeError, match="from_logits"):
        ka.greedy_decode(logits, ops.zeros((1,), "int32"), state, END, 3,
                         from_logits=from_logits)
