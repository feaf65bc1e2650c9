"""`filter_logits` with Python and tensor settings, numerically safe.

The settings may be Python numbers (checked at once) or scalar tensors
(inputs of an exported signature, clamped in the graph); both give the
same kept tokens, against a numpy reference, on every backend.
"""

import math

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention.decoding import NEG_INF
from keras_attention.decoding import filter_logits
from tests.test_decoding import np_


def np_filter(logits, temperature, top_k, top_p):
    """The documented clamps, in numpy: `temperature <= 0` greedy,
    `top_k <= 0` no limit, `top_p >= 1` no limit, `top_p <= 0` top-1."""
    logits = np.asarray(logits, "float64")
    out = np.full(logits.shape, NEG_INF)
    for i, row in enumerate(logits):
        shifted = row - row.max()
        greedy = not temperature > 0
        scaled = shifted if greedy else shifted / temperature
        keep = shifted >= 0 if greedy else np.ones(len(row), bool)
        if top_k is not None and top_k > 0:
            kth = np.sort(shifted)[::-1][min(top_k, len(row)) - 1]
            keep &= shifted >= kth
        if top_p is not None and not top_p >= 1:
            p = np.where(keep, np.exp(scaled), 0.0)
            p /= p.sum()
            order = np.argsort(-p, kind="stable")
            before = np.cumsum(p[order]) - p[order]
            inside = before < top_p
            inside[0] = True
            cutoff = p[order][inside].min()
            keep &= p >= cutoff * (1 - 1e-6)
        out[i] = np.where(keep, np.maximum(scaled, NEG_INF), NEG_INF)
    return out


def kept(x):
    return np_(x) > NEG_INF / 2


def random_logits(seed, rows=3, vocab=7, scale=2.0):
    rng = np.random.default_rng(seed)
    return (scale * rng.normal(size=(rows, vocab))).astype("float32")


SETTINGS = [
    (1.0, None, None),
    (0.7, 3, None),
    (2.0, None, 0.6),
    (0.5, 4, 0.8),
    (1.0, 1, 0.3),
    (0.0, None, None),
    (1.5, 100, 1.0),
]


@pytest.mark.parametrize("temperature, top_k, top_p", SETTINGS)
def test_python_settings_match_numpy(temperature, top_k, top_p):
    logits = random_logits(0)
    got = filter_logits(logits, temperature, top_k, top_p)
    want = np_filter(logits, temperature, top_k, top_p)
    np.testing.assert_array_equal(kept(got), want > NEG_INF / 2)
    np.testing.assert_allclose(np_(got), want, rtol=1e-5, atol=1e-5)
    # The largest logit of a row becomes 0: the row maximum is subtracted.
    assert np.all(np_(got).max(-1) == 0.0)


def as_tensors(temperature, top_k, top_p):
    return (
        ops.convert_to_tensor(temperature, "float32"),
        ops.convert_to_tensor(0 if top_k is None else top_k, "int32"),
        ops.convert_to_tensor(1.0 if top_p is None else top_p, "float32"),
    )


@pytest.mark.parametrize("temperature, top_k, top_p", SETTINGS)
def test_tensor_settings_equal_python_settings(temperature, top_k, top_p):
    logits = random_logits(1, vocab=80)
    python = filter_logits(logits, temperature, top_k, top_p)
    tensors = filter_logits(logits, *as_tensors(temperature, top_k, top_p))
    np.testing.assert_array_equal(kept(tensors), kept(python))
    np.testing.assert_allclose(np_(tensors), np_(python), rtol=1e-6)


@pytest.mark.parametrize(
    "temperature, top_k, top_p, expected",
    [
        # A tensor temperature <= 0 or NaN is greedy decoding.
        (0.0, 0, 1.0, "greedy"),
        (-3.0, 0, 1.0, "greedy"),
        (float("nan"), 0, 1.0, "greedy"),
        # top_k <= 0 and top_p >= 1 are no limit.
        (1.0, -2, 5.0, "all"),
        (1.0, 0, 1.0, "all"),
        # top_p <= 0 or NaN keeps the most probable token.
        (1.0, 0, 0.0, "greedy"),
        (1.0, 0, -1.0, "greedy"),
        (1.0, 0, float("nan"), "greedy"),
        # An infinite temperature is the uniform distribution.
        (float("inf"), 0, 1.0, "uniform"),
    ],
)
def test_tensor_clamps_are_documented_results(
    temperature, top_k, top_p, expected
):
    logits = random_logits(2)
    got = np_(filter_logits(logits, *as_tensors(temperature, top_k, top_p)))
    assert np.all(np.isfinite(got))
    best = logits.argmax(-1)
    if expected == "greedy":
        np.testing.assert_array_equal(got > NEG_INF / 2, np.eye(7)[best] > 0)
    elif expected == "all":
        np.testing.assert_allclose(
            got, logits - logits.max(-1, keepdims=True), rtol=1e-6
        )
    else:
        np.testing.assert_array_equal(got, np.zeros_like(got))


@pytest.mark.tf_only
def test_tensor_settings_inside_a_tf_function():
    import tensorflow as tf

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.float32),
            tf.TensorSpec([], tf.float32),
            tf.TensorSpec([], tf.int32),
            tf.TensorSpec([], tf.float32),
        ]
    )
    def serve(logits, temperature, top_k, top_p):
        return filter_logits(logits, temperature, top_k, top_p)

    logits = random_logits(3, rows=4, vocab=90)
    for temperature, top_k, top_p in SETTINGS + [(-1.0, -1, 0.0)]:
        got = serve(logits, *as_tensors(temperature, top_k, top_p))
        want = np_filter(
            logits, temperature, None if top_k is None else top_k, top_p
        )
        np.testing.assert_array_equal(kept(got), want > NEG_INF / 2)
        np.testing.assert_allclose(np_(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX only")
def test_tensor_settings_under_jax_jit():
    import jax

    serve = jax.jit(filter_logits)
    logits = random_logits(4, vocab=70)
    for temperature, top_k, top_p in SETTINGS:
        got = serve(logits, *as_tensors(temperature, top_k, top_p))
        want = np_filter(logits, temperature, top_k, top_p)
        np.testing.assert_array_equal(kept(got), want > NEG_INF / 2)


# ----------------------------------------------------------------------
# Numerical safety.


@pytest.mark.parametrize("temperature", [1e-30, 1e-38, 1e-3])
def test_tiny_temperatures_on_huge_logits_are_greedy(temperature):
    logits = np.array([[1e30, 2e30, -3e30], [5.0, -1e20, 4.0]], "float32")
    got = np_(filter_logits(logits, temperature))
    assert np.all(np.isfinite(got))
    np.testing.assert_array_equal(got.argmax(-1), [1, 0])
    assert np.all(got.max(-1) == 0.0)


@pytest.mark.parametrize("temperature", [1e12, 1e30, 3e38])
def test_huge_temperatures_keep_excluded_tokens_excluded(temperature):
    # A decoder's constraints: only the last token is allowed.
    logits = np.array([[NEG_INF, NEG_INF, -3.0], [-np.inf, np.nan, 0.0]],
                      "float32")
    for setting in (temperature, ops.convert_to_tensor(temperature)):
        got = np_(filter_logits(logits, setting))
        np.testing.assert_array_equal(got > NEG_INF / 2, [[0, 0, 1]] * 2)


def test_non_finite_logits():
    logits = np.array(
        [[np.inf, 0.0, np.inf], [np.nan, 1.0, -np.inf],
         [np.nan, np.nan, -np.inf]],
        "float32",
    )
    got = np_(filter_logits(logits, 0.5, top_p=0.9))
    assert np.all(np.isfinite(got))
    # +inf: the largest float32, both kept; NaN and -inf excluded; a row
    # with nothing left is all NEG_INF.
    np.testing.assert_array_equal(
        got > NEG_INF / 2, [[1, 0, 1], [0, 1, 0], [0, 0, 0]]
    )


# ----------------------------------------------------------------------
# Python values outside the domain: a clear error that names the argument.

BAD_TEMPERATURES = st.one_of(
    st.floats(max_value=-1e-300),
    st.sampled_from([math.nan, math.inf, -math.inf, "1.0", True, None,
                     [1.0]]),
)
BAD_TOP_K = st.one_of(
    st.integers(max_value=0),
    st.sampled_from([1.5, 2.0, "3", True, math.nan]),
)
BAD_TOP_P = st.one_of(
    st.floats(max_value=0.0),
    st.floats(min_value=1.0, exclude_min=True),
    st.sampled_from([math.nan, "0.5", False]),
)


@settings(max_examples=15, deadline=None)
@given(
    name=st.sampled_from(["temperature", "top_k", "top_p"]),
    data=st.data(),
)
def test_bad_python_settings_raise_naming_the_argument(name, data):
    bad = data.draw(
        {"temperature": BAD_TEMPERATURES, "top_k": BAD_TOP_K,
         "top_p": BAD_TOP_P}[name]
    )
    with pytest.raises(ValueError, match=f"`{name}`.*Received: {name}="):
        filter_logits(random_logits(5), **{name: bad})


@pytest.mark.parametrize(
    "name, value",
    [
        ("temperature", np.ones(2, "float32")),
        ("top_k", np.float32(2.5)),
        ("top_p", np.array([0.5, 0.5])),
    ],
)
def test_bad_numpy_settings_raise(name, value):
    with pytest.raises(ValueError, match=f"`{name}`"):
        filter_logits(random_logits(6), **{name: value})


@pytest.mark.parametrize(
    "name, value",
    [
        ("temperature", [1.0, 2.0]),  # rank 1
        ("temperature", True),  # bool dtype
        ("top_k", 2.0),  # float dtype
        ("top_p", [0.5]),
    ],
)
def test_bad_tensor_settings_raise(name, value):
    tensor = ops.convert_to_tensor(value)
    with pytest.raises(ValueError, match=f"`{name}`.*Received: {name}"):
        filter_logits(random_logits(7), **{name: tensor})


def test_numpy_scalars_are_python_values():
    logits = random_logits(8)
    np.testing.assert_array_equal(
        np_(filter_logits(logits, np.float32(0.5), np.int64(2),
                          np.array(0.9))),
        np_(filter_logits(logits, 0.5, 2, 0.9)),
    )


@pytest.mark.parametrize(
    "logits", [np.zeros((2, 3), "int32"), np.float32(1.0), [[True, False]]]
)
def test_bad_logits_raise(logits):
    with pytest.raises(ValueError, match="`logits`.*Received: logits"):
        filter_logits(logits)


# ----------------------------------------------------------------------
# sample_decode: the constraints come after the filters.


@pytest.mark.parametrize("temperature", [1e12, 3e38])
def test_huge_temperature_keeps_prefix_and_finished_rows(temperature):
    from keras_attention.decoding import sample_decode
    from tests.test_decoding import END
    from tests.test_decoding import START
    from tests.test_decoding import ToyModel

    model = ToyModel(50, batch_size=3, vocab_size=6, source_length=4)
    prefix = ops.convert_to_tensor([[4, 3, 2], [2, 5, 5], [END, 4, 4]])
    lengths = ops.convert_to_tensor([3, 1, 1])
    for seed in range(3):
        out = sample_decode(
            model.step, START, model.initial_state(), END, 8,
            temperature=temperature, seed=seed, prefix=prefix,
            prefix_lengths=lengths,
        )
        tokens = np_(out["tokens"])
        np.testing.assert_array_equal(tokens[0, :3], [4, 3, 2])
        assert tokens[1, 0] == 2
        # Row 2's prefix is the end token: it is finished at once.
        assert tokens[2, 0] == END and np_(out["lengths"])[2] == 1
        for row, n in zip(tokens, np_(out["lengths"])):
            assert np.all(row[n:] == END)
            assert END not in list(row[: n - 1])
        assert np.all(np.isfinite(np_(out["scores"])))


def test_tensor_settings_in_sample_decode():
    from keras_attention.decoding import greedy_decode
    from keras_attention.decoding import sample_decode
    from tests.test_decoding import END
    from tests.test_decoding import START
    from tests.test_decoding import ToyModel

    model = ToyModel(51, batch_size=4, vocab_size=6, source_length=4)
    greedy = greedy_decode(model.step, START, model.initial_state(), END, 8)
    for settings_ in (
        {"temperature": ops.convert_to_tensor(0.0)},
        {"top_k": ops.convert_to_tensor(1)},
        {"top_p": ops.convert_to_tensor(0.0)},
    ):
        out = sample_decode(model.step, START, model.initial_state(), END,
                            8, seed=1, **settings_)
        np.testing.assert_array_equal(
            np_(out["tokens"]), np_(greedy["tokens"])
        )
    with pytest.raises(ValueError, match="`temperature`"):
        sample_decode(model.step, START, model.initial_state(), END, 8,
                      temperature=math.nan)
