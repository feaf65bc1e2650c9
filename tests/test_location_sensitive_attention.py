"""Location-sensitive attention: numpy reference, masks and the contract."""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import LocationSensitiveAttention
from tests.stateful_helpers import keras_round_trip
from tests.stateful_helpers import saved_model_fresh_process
from tests.stateful_helpers import step_inputs
from tests.stateful_helpers import step_model
from tests.stateful_helpers import to_np


def make(cumulative=True, **kwargs):
    kwargs.setdefault("bias_initializer", keras.initializers.RandomNormal(
        stddev=0.5, seed=1
    ))
    return LocationSensitiveAttention(
        6, filters=3, kernel_size=5, cumulative=cumulative, **kwargs
    )


def weights_of(layer):
    return {w.path.split("/")[-1]: to_np(w) for w in layer.weights}


def numpy_step(w, query, memory, mask, state, cumulative):
    """One step from the formulas, with the layer's weights `w`."""
    channels = [state["weights"]]
    if cumulative:
        channels.append(state["cumulative"])
    x = np.stack(channels, -1) * mask[..., None]  # (b, S, C)
    kernel = w["location_kernel"]  # (k, C, filters)
    half = kernel.shape[0] // 2
    padded = np.pad(x, [(0, 0), (half, half), (0, 0)])
    source = x.shape[1]
    conv = np.stack(
        [
            np.einsum("bkc,kcf->bf", padded[:, i : i + kernel.shape[0]], kernel)
            for i in range(source)
        ],
        1,
    )
    hidden = (
        memory @ w["key_kernel"]
        + (query @ w["query_kernel"])[:, None]
        + conv @ w["location_projection"]
        + w.get("bias", 0.0)
    )
    scores = np.tanh(hidden) @ w["score_kernel"]
    scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    alpha = e / e.sum(axis=1, keepdims=True)
    next_state = {"weights": alpha}
    if cumulative:
        next_state["cumulative"] = state["cumulative"] + alpha
    context = np.einsum("bs,bsd->bd", alpha, memory)
    return context, alpha, next_state


def data(seed=0, batch=3, source=9, query_dim=4, value_dim=5):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(5, batch, query_dim)).astype("float32")
    memory = rng.normal(size=(batch, source, value_dim)).astype("float32")
    lengths = np.array([source, 5, 1][:batch])
    mask = np.arange(source)[None] < lengths[:, None]
    return query, memory, mask


@pytest.mark.parametrize("cumulative", [True, False])
@pytest.mark.parametrize("use_bias", [True, False])
def test_matches_numpy_reference_over_steps(cumulative, use_bias):
    queries, memory, mask = data()
    layer = make(cumulative, use_bias=use_bias)
    layer.build(queries[0].shape, memory.shape)
    prepared = layer.prepare_memory(memory, value_mask=mask)
    state = prepared["alignment_state"]
    w = weights_of(layer)
    assert ("bias" in w) == use_bias
    ref_state = {k: to_np(v) for k, v in state.items()}
    for query in queries:
        context, weights, state = layer.attend(
            query, prepared["memory"], prepared["keys"],
            value_mask=prepared["memory_mask"], alignment_state=state,
        )
        ref_c, ref_w, ref_state = numpy_step(
            w, query, memory, mask, ref_state, cumulative
        )
        np.testing.assert_allclose(to_np(weights), ref_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_np(context), ref_c, rtol=1e-5, atol=1e-5)
        assert set(state) == set(ref_state)
        for k in state:
            np.testing.assert_allclose(
                to_np(state[k]), ref_state[k], rtol=1e-5, atol=1e-6
            )


def test_initial_state_is_zeros():
    mask = np.array([[1, 1, 0]], bool)
    state = make().initial_alignment_state(mask)
    assert set(state) == {"weights", "cumulative"}
    for t in state.values():
        np.testing.assert_array_equal(to_np(t), np.zeros((1, 3)))
        assert keras.backend.standardize_dtype(t.dtype) == "float32"
    assert set(make(cumulative=False).initial_alignment_state(mask)) == {
        "weights"
    }


def test_location_features_change_the_weights():
    queries, memory, _ = data()
    layer = make()
    layer(queries[0], memory)
    source = memory.shape[1]
    peaked = np.zeros((3, source), "float32")
    peaked[:, 2] = 1.0
    state_a = {"weights": peaked, "cumulative": peaked}
    state_b = {"weights": peaked[:, ::-1].copy(), "cumulative": peaked}
    _, wa, _ = layer(queries[0], memory, alignment_state=state_a)
    _, wb, _ = layer(queries[0], memory, alignment_state=state_b)
    assert np.abs(to_np(wa) - to_np(wb)).max() > 1e-4


@pytest.mark.parametrize("cumulative", [True, False])
def test_masked_positions_never_leak(cumulative):
    # The same sentence, alone, or padded with 4 masked positions holding
    # junk in the memory and in the state: the same weights and context.
    queries, memory, _ = data(batch=1, source=6)
    layer = make(cumulative)
    rng = np.random.default_rng(9)
    short = {
        "weights": rng.uniform(size=(1, 6)).astype("float32"),
        "cumulative": rng.uniform(size=(1, 6)).astype("float32"),
    }
    if not cumulative:
        del short["cumulative"]
    pad = 4
    long_memory = np.concatenate(
        [memory, rng.normal(0, 50, (1, pad, memory.shape[-1]))], 1
    ).astype("float32")
    long_state = {
        k: np.concatenate([v, np.full((1, pad), 7.0, "float32")], 1)
        for k, v in short.items()
    }
    mask = np.arange(6 + pad)[None] < 6
    c1, w1, s1 = layer(queries[0], memory, alignment_state=short)
    c2, w2, s2 = layer(
        queries[0], long_memory, value_mask=mask, alignment_state=long_state
    )
    np.testing.assert_allclose(
        to_np(w2)[:, :6], to_np(w1), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_array_equal(to_np(w2)[:, 6:], 0)
    np.testing.assert_allclose(to_np(c2), to_np(c1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        to_np(s2["weights"])[:, :6], to_np(s1["weights"]), rtol=1e-5, atol=1e-7
    )


def test_query_mask_zeroes_rows_and_keeps_state():
    queries, memory, mask = data()
    layer = make()
    state = step_inputs(layer, 3, 9, 4, 5)[3:]
    state = {"weights": state[0], "cumulative": state[1]}
    query_mask = np.array([True, False, True])
    c, w, s = layer(
        queries[0], memory, query_mask=query_mask, value_mask=mask,
        alignment_state=state,
    )
    _, fw, fs = layer(
        queries[0], memory, value_mask=mask, alignment_state=state
    )
    np.testing.assert_array_equal(to_np(w)[1], 0)
    np.testing.assert_array_equal(to_np(c)[1], 0)
    for k in s:
        np.testing.assert_array_equal(to_np(s[k])[1], state[k][1])
        np.testing.assert_allclose(to_np(s[k])[0], to_np(fs[k])[0], atol=1e-7)
    np.testing.assert_allclose(to_np(w)[2], to_np(fw)[2], atol=1e-7)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**31 - 1), st.booleans())
def test_weights_are_a_distribution_over_kept_positions(source, seed, cumul):
    rng = np.random.default_rng(seed)
    layer = make(cumul)
    memory = rng.normal(0, 3, (2, source, 5)).astype("float32")
    mask = np.arange(source)[None] < rng.integers(1, source + 1, (2, 1))
    state = layer.initial_alignment_state(mask)
    for _ in range(3):
        query = rng.normal(0, 3, (2, 4)).astype("float32")
        _, weights, state = layer(
            query, memory, value_mask=mask, alignment_state=state
        )
        w = to_np(weights)
        assert np.all(np.isfinite(w)) and np.all(w >= 0)
        assert np.all(w[~mask] == 0)
        np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-5)
    if cumul:
        # Three steps: the cumulative weights of each row sum to 3.
        np.testing.assert_allclose(
            to_np(state["cumulative"]).sum(axis=1), 3.0, rtol=1e-5
        )


# ----------------------------------------------------------------------------
# The Keras contract.
def test_get_config_round_trip():
    layer = LocationSensitiveAttention(
        6, filters=4, kernel_size=3, cumulative=False, use_bias=False,
        kernel_initializer=keras.initializers.RandomNormal(seed=2),
        bias_initializer="ones", kernel_regularizer="l2",
        kernel_constraint="non_neg", dropout=0.2, seed=5, name="loc",
    )
    config = layer.get_config()
    for key in (
        "units", "filters", "kernel_size", "cumulative", "use_bias",
        "kernel_initializer", "bias_initializer", "kernel_regularizer",
        "kernel_constraint", "dropout", "seed",
    ):
        assert key in config
    clone = LocationSensitiveAttention.from_config(config)
    assert clone.get_config() == config
    queries, memory, mask = data()
    layer.build(queries[0].shape, memory.shape)
    clone.build(queries[0].shape, memory.shape)
    clone.set_weights(layer.get_weights())
    a = layer(queries[0], memory, value_mask=mask)
    b = clone(queries[0], memory, value_mask=mask)
    for x, y in zip(a[:2], b[:2]):
        np.testing.assert_allclose(to_np(x), to_np(y), atol=1e-7)


@pytest.mark.parametrize("cumulative", [True, False])
def test_keras_round_trip_safe_mode(cumulative, tmp_path):
    layer = make(cumulative)
    model = step_model(layer, source=7, query_dim=4, value_dim=5)
    inputs = step_inputs(layer, 3, 7, 4, 5)
    loaded = keras_round_trip(model, inputs, tmp_path)
    assert isinstance(loaded.layers[-1], LocationSensitiveAttention)


def test_fit_step_trains_the_location_filters():
    layer = make(dropout=0.1, seed=3)
    model = step_model(layer, source=7, query_dim=4, value_dim=5)
    inputs = step_inputs(layer, 4, 7, 4, 5)
    model.compile("adam", loss=["mse", None, None, None])
    before = to_np(layer.location_kernel)
    model.fit(inputs, np.ones((4, 5), "float32"), epochs=1, verbose=0)
    after = to_np(layer.location_kernel)
    assert np.all(np.isfinite(after))
    assert np.abs(after - before).max() > 0


@pytest.mark.tf_only
def test_saved_model_in_fresh_process(tmp_path):
    layer = make()
    model = step_model(layer, source=7, query_dim=4, value_dim=5)
    saved_model_fresh_process(model, step_inputs(layer, 3, 7, 4, 5), tmp_path)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_is_finite(policy):
    keras.config.set_dtype_policy(policy)
    layer = make()
    queries, memory, mask = data()
    state = layer.initial_alignment_state(mask)
    for query in queries:
        context, weights, state = layer(
            query * 1e3, memory * 1e3, value_mask=mask, alignment_state=state
        )
    assert keras.backend.standardize_dtype(weights.dtype) == layer.compute_dtype
    assert all(
        keras.backend.standardize_dtype(t.dtype) == "float32"
        for t in state.values()
    )
    for x in (context, weights, *state.values()):
        assert np.all(np.isfinite(to_np(ops.cast(x, "float32"))))
    w = to_np(ops.cast(weights, "float32"))
    assert np.all(w[~mask] == 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-2)


# ----------------------------------------------------------------------------
# Bad input.
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(units=0), "units=0"),
        (dict(units=4, filters=-1), "filters=-1"),
        (dict(units=4, kernel_size=4), "odd.*kernel_size=4"),
        (dict(units=4, kernel_size=0), "kernel_size=0"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LocationSensitiveAttention(**kwargs)


def test_sequence_query_raises():
    with pytest.raises(ValueError, match="stateful.*query.shape=.2, 3, 4."):
        make()(np.zeros((2, 3, 4), "float32"), np.zeros((2, 5, 3), "float32"))


@pytest.mark.parametrize(
    "state,match",
    [
        (None, "alignment_state=None"),
        ({"weights": np.zeros((2, 5), "float32")}, "structure"),
        (np.zeros((2, 5), "float32"), "structure"),
        (
            {"weights": np.zeros((2, 4), "float32"),
             "cumulative": np.zeros((2, 4), "float32")},
            r"shape \(2, 5\)",
        ),
    ],
)
def test_bad_state_in_attend_raises(state, match):
    layer = make()
    layer.build((2, 4), (2, 5, 3))
    memory = layer.prepare_memory(np.zeros((2, 5, 3), "float32"))
    with pytest.raises(ValueError, match=match):
        layer.attend(
            np.zeros((2, 4), "float32"), memory["memory"], memory["keys"],
            alignment_state=state,
        )


def test_stateful_contract():
    layer = make()
    assert layer.stateful is True
    layer.build((2, 4), (2, 5, 3))
    memory = layer.prepare_memory(np.zeros((2, 5, 3), "float32"))
    assert set(memory) == {"memory", "keys", "memory_mask", "alignment_state"}
    assert set(memory["alignment_state"]) == {"weights", "cumulative"}


def test_fully_masked_row_gives_zeros_not_nan():
    queries, memory, _ = data()
    mask = np.array([[1] * 9, [1, 1] + [0] * 7, [0] * 9], bool)
    layer = make()
    context, weights, state = layer(queries[0], memory, value_mask=mask)
    for x in (context, weights, *state.values()):
        assert np.all(np.isfinite(to_np(x)))
    np.testing.assert_array_equal(to_np(weights)[2], 0)
    np.testing.assert_array_equal(to_np(context)[2], 0)
