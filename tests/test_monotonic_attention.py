"""Monotonic attention: TFA 0.23 parity, numpy references and the contract.

The parity numbers come from `tests/parity/make_monotonic_reference.py`
(run it with the TFA environment to regenerate `monotonic_reference.npz`);
this file never imports TFA.
"""

import os

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import BahdanauMonotonicAttention
from keras_attention import LuongMonotonicAttention
from keras_attention.ops.monotonic import monotonic_attention
from keras_attention.ops.monotonic import safe_cumprod
from tests.stateful_helpers import keras_round_trip
from tests.stateful_helpers import saved_model_fresh_process
from tests.stateful_helpers import step_inputs
from tests.stateful_helpers import step_model
from tests.stateful_helpers import to_np

REFERENCE = os.path.join(
    os.path.dirname(__file__), "parity", "monotonic_reference.npz"
)
MODES = ("parallel", "recursive", "hard")
ENERGIES = (("bahdanau", ("", "normalize")), ("luong", ("", "scale")))
CASES = [
    (energy, flag, mode)
    for energy, flags in ENERGIES
    for flag in flags
    for mode in MODES
]


@pytest.fixture(scope="module")
def ref():
    return dict(np.load(REFERENCE))


def make(energy, flag="", mode="parallel", units=4, **kwargs):
    if energy == "bahdanau":
        return BahdanauMonotonicAttention(
            units, normalize=flag == "normalize", mode=mode, **kwargs
        )
    return LuongMonotonicAttention(
        units, scale=flag == "scale", mode=mode, **kwargs
    )


def numpy_monotonic(p, previous):
    """The recurrence of Raffel et al. (2017), eq. 9-12, one row at a time."""
    out = np.zeros_like(p, dtype="float64")
    for b in range(p.shape[0]):
        q = 0.0
        for i in range(p.shape[1]):
            keep = 1.0 if i == 0 else 1.0 - p[b, i - 1]
            q = keep * q + previous[b, i]
            out[b, i] = p[b, i] * q
    return out


# ----------------------------------------------------------------------------
# The pure functions.
@pytest.mark.parametrize("mode", ["parallel", "recursive"])
def test_monotonic_attention_matches_tfa(ref, mode):
    got = to_np(
        monotonic_attention(ref["fn/p_choose"], ref["fn/previous"], mode)
    )
    np.testing.assert_allclose(got, ref[f"fn/{mode}"], rtol=1e-5, atol=1e-7)


def test_hard_monotonic_attention_matches_tfa(ref):
    got = to_np(
        monotonic_attention(ref["fn/p_hard"], ref["fn/previous_hard"], "hard")
    )
    np.testing.assert_array_equal(got, ref["fn/hard"])
    # The first chosen position at or after the previous one.
    expected = np.zeros_like(got)
    for b, start in enumerate(ref["fn/previous_hard"].argmax(axis=1)):
        chosen = np.flatnonzero(ref["fn/p_hard"][b, start:])
        if chosen.size:
            expected[b, start + chosen[0]] = 1.0
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("exclusive", [False, True])
def test_safe_cumprod_matches_tfa(ref, exclusive):
    x = ref["fn/cumprod_x"]
    got = to_np(safe_cumprod(x, axis=1, exclusive=exclusive))
    name = "fn/safe_cumprod_exclusive" if exclusive else "fn/safe_cumprod"
    np.testing.assert_allclose(got, ref[name], rtol=1e-5, atol=1e-30)
    plain = np.cumprod(np.clip(x, np.finfo("float32").tiny, 1), axis=1)
    if exclusive:
        plain = np.concatenate([np.ones_like(x[:, :1]), plain[:, :-1]], 1)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-30)


def test_recursive_mode_is_the_recurrence(ref):
    p, previous = ref["fn/p_choose"], ref["fn/previous"]
    expected = numpy_monotonic(p.astype("float64"), previous)
    got = to_np(monotonic_attention(p, previous, "recursive"))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_hand_computed_alignment():
    # p = [.5, .5, 1], starting on position 0: stop at 0 with 1/2, at 1 with
    # 1/4, at 2 with the remaining 1/4.
    p = np.array([[0.5, 0.5, 1.0]], "float32")
    start = np.array([[1.0, 0.0, 0.0]], "float32")
    for mode in ("parallel", "recursive"):
        got = to_np(monotonic_attention(p, start, mode))
        np.testing.assert_allclose(got, [[0.5, 0.25, 0.25]], rtol=1e-5)


def test_unknown_mode_raises():
    p = np.zeros((1, 3), "float32")
    with pytest.raises(ValueError, match="mode=.soft."):
        monotonic_attention(p, p, "soft")


@settings(max_examples=20, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 8),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["parallel", "recursive"]),
)
def test_alignment_is_a_sub_distribution(batch, source, seed, mode):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, (batch, source)).astype("float32")
    previous = rng.uniform(0, 1, (batch, source))
    previous = (previous / previous.sum(1, keepdims=True)).astype("float32")
    got = to_np(monotonic_attention(p, previous, mode))
    assert np.all(np.isfinite(got))
    assert np.all(got >= 0)
    assert np.all(got.sum(axis=1) <= 1 + 1e-5)
    np.testing.assert_allclose(
        got, numpy_monotonic(p.astype("float64"), previous), atol=1e-5
    )


# ----------------------------------------------------------------------------
# Parity of the layers with TFA's mechanisms, over several fed-back steps.
def load_case(ref, energy, flag, mode, **kwargs):
    case = f"{energy}{'_' + flag if flag else ''}_{mode}"
    layer = make(energy, flag, mode, **kwargs)
    layer.build(ref["queries"][0].shape, ref["memory"].shape)
    prefix = f"{case}/weights/"
    names = [k[len(prefix):] for k in ref if k.startswith(prefix)]
    assert sorted(names) == sorted(w.path.split("/")[-1] for w in layer.weights)
    for name in names:
        getattr(layer, name).assign(ref[prefix + name])
    return case, layer


def reference_mask(ref):
    source = ref["memory"].shape[1]
    return np.arange(source)[None] < ref["memory_sequence_length"][:, None]


@pytest.mark.parametrize("energy,flag,mode", CASES)
def test_parity_with_tfa(ref, energy, flag, mode):
    case, layer = load_case(ref, energy, flag, mode)
    memory = layer.prepare_memory(ref["memory"], value_mask=reference_mask(ref))
    state = memory["alignment_state"]
    for step, query in enumerate(ref["queries"]):
        context, weights, state = layer.attend(
            query,
            memory["memory"],
            memory["keys"],
            value_mask=memory["memory_mask"],
            alignment_state=state,
        )
        expected = ref[f"{case}/alignments"][step]
        for got in (weights, state):
            np.testing.assert_allclose(
                to_np(got), expected, rtol=1e-5, atol=1e-6
            )
        np.testing.assert_allclose(
            to_np(context), ref[f"{case}/contexts"][step], rtol=1e-5, atol=1e-6
        )


def test_hard_parity_is_exercised(ref):
    # The hard cases are not all-zero: some steps attend to a position.
    hard = [ref[f"{e}{f}_hard/alignments"] for e, f in (
        ("bahdanau", ""), ("bahdanau", "_normalize"), ("luong", ""),
        ("luong", "_scale"),
    )]
    assert all(set(np.unique(a)) <= {0.0, 1.0} for a in hard)
    assert sum(a.sum() for a in hard) >= 4


def test_call_equals_attend(ref):
    _, layer = load_case(ref, "bahdanau", "normalize", "parallel")
    mask = reference_mask(ref)
    context, weights, state = layer(
        ref["queries"][0], ref["memory"], value_mask=mask
    )
    np.testing.assert_allclose(
        to_np(weights), ref["bahdanau_normalize_parallel/alignments"][0],
        rtol=1e-5, atol=1e-6,
    )
    context, weights, state = layer(
        ref["queries"][1], ref["memory"], value_mask=mask,
        alignment_state=state,
    )
    np.testing.assert_allclose(
        to_np(context), ref["bahdanau_normalize_parallel/contexts"][1],
        rtol=1e-5, atol=1e-6,
    )


# ----------------------------------------------------------------------------
# Semantics.
def test_initial_state_is_one_hot_on_first_position():
    layer = make("luong")
    mask = np.array([[1, 1, 1], [1, 0, 0]], bool)
    state = to_np(layer.initial_alignment_state(mask))
    np.testing.assert_array_equal(state, [[1, 0, 0], [1, 0, 0]])
    assert state.dtype == np.float32


@pytest.mark.parametrize("energy", ["bahdanau", "luong"])
def test_score_bias_extremes(energy):
    # A large bias stops at once (p = 1): the alignment stays where it was.
    # A very negative one never stops: all weights are zero. (Recursive
    # mode: the parallel closed form divides by cumprod(1 - p) = 0 there and
    # is inexact, in TFA as here.)
    rng = np.random.default_rng(3)
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 5, 3)).astype("float32")
    previous = np.array([[0, 1, 0, 0, 0], [0.5, 0, 0.25, 0, 0]], "float32")
    for bias, expected in ((60.0, previous), (-60.0, 0 * previous)):
        layer = make(energy, mode="recursive", score_bias_init=bias)
        _, weights, _ = layer(query, memory, alignment_state=previous)
        np.testing.assert_allclose(to_np(weights), expected, atol=1e-6)


@pytest.mark.parametrize("energy,flag,mode", CASES[::2])
def test_masked_positions_get_zero_and_do_not_matter(energy, flag, mode):
    rng = np.random.default_rng(5)
    layer = make(energy, flag, mode)
    query = rng.normal(size=(3, 4)).astype("float32")
    memory = rng.normal(size=(3, 6, 3)).astype("float32")
    mask = np.array([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], bool)
    state = layer.initial_alignment_state(mask)
    outs = []
    for trial in range(2):
        if trial:  # Other values where masked: the same result.
            memory = np.where(mask[..., None], memory, 1e4)
        c, w, s = layer(query, memory, value_mask=mask, alignment_state=state)
        outs.append((to_np(c), to_np(w), to_np(s)))
        assert np.all(to_np(w)[~mask] == 0)
        assert np.all(np.isfinite(to_np(c)))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_query_mask_zeroes_rows_and_keeps_state():
    rng = np.random.default_rng(6)
    layer = make("bahdanau")
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 5, 3)).astype("float32")
    previous = np.array([[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]], "float32")
    context, weights, state = layer(
        query, memory, query_mask=np.array([True, False]),
        alignment_state=previous,
    )
    full_c, full_w, full_s = layer(query, memory, alignment_state=previous)
    np.testing.assert_allclose(to_np(weights)[0], to_np(full_w)[0], atol=1e-7)
    np.testing.assert_allclose(to_np(state)[0], to_np(full_s)[0], atol=1e-7)
    np.testing.assert_array_equal(to_np(weights)[1], 0)
    np.testing.assert_array_equal(to_np(context)[1], 0)
    np.testing.assert_array_equal(to_np(state)[1], previous[1])


def test_sigmoid_noise_only_in_training():
    rng = np.random.default_rng(7)
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 5, 3)).astype("float32")
    noisy = make("bahdanau", sigmoid_noise=2.0, sigmoid_noise_seed=1)
    clean = make("bahdanau")
    noisy.build(query.shape, memory.shape)
    clean.build(query.shape, memory.shape)
    clean.set_weights(noisy.get_weights())
    _, inference, _ = noisy(query, memory, training=False)
    _, expected, _ = clean(query, memory)
    np.testing.assert_allclose(to_np(inference), to_np(expected), atol=1e-7)
    _, trained, _ = noisy(query, memory, training=True)
    assert np.abs(to_np(trained) - to_np(expected)).max() > 1e-3


@settings(max_examples=10, deadline=None)
@given(
    st.integers(1, 7),
    st.integers(0, 2**31 - 1),
    st.sampled_from(CASES),
)
def test_layer_weights_non_negative_sum_at_most_one(source, seed, case):
    energy, flag, mode = case
    rng = np.random.default_rng(seed)
    layer = make(energy, flag, mode)
    memory = rng.normal(0, 3, size=(2, source, 3)).astype("float32")
    lengths = rng.integers(1, source + 1, size=2)
    mask = np.arange(source)[None] < lengths[:, None]
    state = layer.initial_alignment_state(mask)
    for _ in range(3):
        query = rng.normal(0, 3, size=(2, 4)).astype("float32")
        _, weights, state = layer(
            query, memory, value_mask=mask, alignment_state=state
        )
        w = to_np(weights)
        assert np.all(np.isfinite(w)) and np.all(w >= 0)
        assert np.all(w.sum(axis=1) <= 1 + 1e-5)
        assert np.all(w[~mask] == 0)


# ----------------------------------------------------------------------------
# The Keras contract.
def full_config(energy):
    common = dict(
        units=4,
        sigmoid_noise=0.5,
        sigmoid_noise_seed=3,
        score_bias_init=-1.5,
        mode="recursive",
        kernel_initializer=keras.initializers.RandomNormal(seed=2),
        dropout=0.1,
        seed=4,
        name="mono",
    )
    if energy == "bahdanau":
        return BahdanauMonotonicAttention(normalize=True, **common)
    return LuongMonotonicAttention(scale=True, **common)


@pytest.mark.parametrize("energy", ["bahdanau", "luong"])
def test_get_config_round_trip(energy):
    layer = full_config(energy)
    config = layer.get_config()
    for key in (
        "units", "sigmoid_noise", "sigmoid_noise_seed", "score_bias_init",
        "mode", "kernel_initializer", "dropout", "seed",
        "normalize" if energy == "bahdanau" else "scale",
    ):
        assert key in config
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config
    rng = np.random.default_rng(0)
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 5, 3)).astype("float32")
    layer.build(query.shape, memory.shape)
    clone.build(query.shape, memory.shape)
    clone.set_weights(layer.get_weights())
    for a, b in zip(layer(query, memory), clone(query, memory)):
        np.testing.assert_allclose(to_np(a), to_np(b), atol=1e-7)


@pytest.mark.parametrize("energy", ["bahdanau", "luong"])
def test_keras_round_trip_safe_mode(energy, tmp_path):
    layer = make(energy, "normalize" if energy == "bahdanau" else "scale")
    model = step_model(layer, source=6, query_dim=4, value_dim=3)
    inputs = step_inputs(layer, 3, 6, 4, 3)
    loaded = keras_round_trip(model, inputs, tmp_path)
    assert loaded.layers[-1].__class__ is layer.__class__


@pytest.mark.parametrize("mode", ["parallel", "recursive"])
def test_fit_step_gives_finite_gradients(mode):
    layer = make("bahdanau", "normalize", mode, sigmoid_noise=1.0)
    model = step_model(layer, source=6, query_dim=4, value_dim=3)
    inputs = step_inputs(layer, 4, 6, 4, 3)
    model.compile("adam", loss=["mse", None, None])
    before = [to_np(w) for w in layer.weights]
    model.fit(inputs, np.ones((4, 3), "float32"), epochs=1, verbose=0)
    after = [to_np(w) for w in layer.weights]
    assert all(np.all(np.isfinite(w)) for w in after)
    assert any(np.abs(a - b).max() > 0 for a, b in zip(after, before))


@pytest.mark.tf_only
def test_saved_model_in_fresh_process(tmp_path):
    layer = make("luong", "scale", score_bias_init=0.5)
    model = step_model(layer, source=6, query_dim=4, value_dim=3)
    saved_model_fresh_process(model, step_inputs(layer, 3, 6, 4, 3), tmp_path)


@pytest.mark.parametrize("energy,flag,mode", CASES[:3] + CASES[6:9])
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_is_finite(energy, flag, mode, policy):
    keras.config.set_dtype_policy(policy)
    layer = make(energy, flag, mode)
    rng = np.random.default_rng(8)
    query = (rng.normal(size=(2, 4)) * 300).astype("float32")
    memory = (rng.normal(size=(2, 5, 3)) * 300).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], bool)
    state = layer.initial_alignment_state(mask)
    for _ in range(3):
        context, weights, state = layer(
            query, memory, value_mask=mask, alignment_state=state
        )
    assert keras.backend.standardize_dtype(weights.dtype) == layer.compute_dtype
    assert keras.backend.standardize_dtype(state.dtype) == "float32"
    for x in (context, weights, state):
        assert np.all(np.isfinite(to_np(ops.cast(x, "float32"))))
    assert np.all(to_np(ops.cast(weights, "float32"))[~mask] == 0)


# ----------------------------------------------------------------------------
# Bad input.
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(units=0), "units=0"),
        (dict(units=4, mode="soft"), "mode='soft'"),
        (dict(units=4, sigmoid_noise=-1.0), "sigmoid_noise=-1.0"),
        (dict(units=4, score_bias_init=float("nan")), "score_bias_init=nan"),
    ],
)
@pytest.mark.parametrize(
    "cls", [BahdanauMonotonicAttention, LuongMonotonicAttention]
)
def test_bad_arguments(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_sequence_query_raises():
    layer = make("bahdanau")
    with pytest.raises(ValueError, match="stateful.*query.shape=.2, 3, 4."):
        layer(np.zeros((2, 3, 4), "float32"), np.zeros((2, 5, 3), "float32"))


def test_attend_without_state_raises():
    layer = make("bahdanau")
    layer.build((2, 4), (2, 5, 3))
    memory = layer.prepare_memory(np.zeros((2, 5, 3), "float32"))
    with pytest.raises(ValueError, match="alignment_state=None"):
        layer.attend(np.zeros((2, 4), "float32"), memory["memory"],
                     memory["keys"])


@pytest.mark.parametrize(
    "state,match",
    [
        (np.zeros((2, 4), "float32"), r"shape \(2, 5\)"),
        ({"weights": np.zeros((2, 5), "float32")}, "structure"),
        (np.zeros((2, 5), "int32"), "floating"),
    ],
)
def test_ill_shaped_state_raises(state, match):
    layer = make("luong")
    with pytest.raises(ValueError, match=match):
        layer(np.zeros((2, 4), "float32"), np.zeros((2, 5, 3), "float32"),
              alignment_state=state)


def test_luong_query_size_must_equal_units():
    layer = make("luong", units=6)
    with pytest.raises(ValueError, match="units.*query.shape=.2, 4."):
        layer(np.zeros((2, 4), "float32"), np.zeros((2, 5, 3), "float32"))


def test_causal_mask_raises():
    layer = make("bahdanau")
    layer.build((2, 4), (2, 5, 3))
    memory = layer.prepare_memory(np.zeros((2, 5, 3), "float32"))
    with pytest.raises(ValueError, match="use_causal_mask=True"):
        layer.attend(
            np.zeros((2, 4), "float32"), memory["memory"], memory["keys"],
            use_causal_mask=True, alignment_state=memory["alignment_state"],
        )


def test_stateful_contract():
    layer = make("bahdanau")
    layer.build((2, 4), (2, 5, 3))
    assert layer.stateful is True
    memory = layer.prepare_memory(
        np.zeros((2, 5, 3), "float32"),
        value_mask=np.array([[1, 1, 0, 0, 0]] * 2, bool),
    )
    assert set(memory) == {"memory", "keys", "memory_mask", "alignment_state"}
    np.testing.assert_array_equal(
        to_np(memory["alignment_state"]), [[1, 0, 0, 0, 0]] * 2
    )


@pytest.mark.parametrize("mode", MODES)
def test_fully_masked_row_gives_zeros_not_nan(mode):
    layer = make("bahdanau", "normalize", mode)
    rng = np.random.default_rng(10)
    query = rng.normal(size=(2, 4)).astype("float32")
    memory = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], bool)
    context, weights, state = layer(query, memory, value_mask=mask)
    for x in (context, weights, state):
        assert np.all(np.isfinite(to_np(x)))
    np.testing.assert_array_equal(to_np(weights)[1], 0)
    np.testing.assert_array_equal(to_np(context)[1], 0)
