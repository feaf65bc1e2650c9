"""Tests of the three core attention layers against numpy references."""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

import keras_attention
from tests.layer_harness import gradients
from tests.layer_harness import run_layer_test
from keras_attention import AdditiveAttention
from keras_attention import BaseAttention
from keras_attention import DotAttention
from keras_attention import MultiplicativeAttention

LAYERS = {
    "dot": lambda **kw: DotAttention(**kw),
    "dot_scaled": lambda **kw: DotAttention(
        use_scale=True, scale_by_dim=True, **kw
    ),
    "multiplicative": lambda **kw: MultiplicativeAttention(**kw),
    "multiplicative_scaled": lambda **kw: MultiplicativeAttention(
        use_scale=True, **kw
    ),
    "additive": lambda **kw: AdditiveAttention(units=5, **kw),
    "additive_normed": lambda **kw: AdditiveAttention(
        units=5, normalize=True, use_bias=True, **kw
    ),
}
BASIC = ["dot", "multiplicative", "additive"]


# ----------------------------------------------------------------------------
# Independent numpy references, using the layer's own weights.
def np_softmax(x, mask=None):
    x = x.astype(np.float64)
    if mask is not None:
        x = np.where(mask, x, -np.inf)
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    if mask is not None:
        e = np.where(mask, e, 0.0)
    s = e.sum(-1, keepdims=True)
    return np.where(s > 0, e / np.where(s > 0, s, 1.0), 0.0)


def np_scores(layer, q, k):
    """Scores (b, Tq, S) of rank-3 queries, computed element by element."""
    b, tq, _ = q.shape
    s = k.shape[1]
    out = np.zeros((b, tq, s))
    weights = {w.path.split("/")[-1]: ops.convert_to_numpy(w).astype(np.float64) for w in layer.weights}
    for n in range(b):
        for i in range(tq):
            for j in range(s):
                qi = q[n, i].astype(np.float64)
                kj = k[n, j].astype(np.float64)
                if isinstance(layer, DotAttention):
                    e = qi @ kj
                    if layer.use_scale:
                        e *= weights["scale"]
                    if layer.scale_by_dim:
                        e /= np.sqrt(k.shape[-1])
                elif isinstance(layer, MultiplicativeAttention):
                    e = qi @ weights["kernel"] @ kj
                    if layer.use_scale:
                        e *= weights["scale"]
                else:
                    hidden = kj @ weights["key_kernel"] + qi @ weights["query_kernel"]
                    if layer.use_bias:
                        hidden = hidden + weights["bias"]
                    v = weights["score_kernel"]
                    if layer.normalize:
                        v = weights["score_gain"] * v / np.linalg.norm(v)
                    e = v @ np.tanh(hidden)
                out[n, i, j] = e
    return out


def np_attention(layer, q, v, k=None, value_mask=None, query_mask=None, causal=False):
    k = v if k is None else k
    single = q.ndim == 2
    if single:
        q = q[:, None]
        if query_mask is not None:
            query_mask = query_mask[:, None]
    scores = np_scores(layer, q, k)
    mask = np.ones(scores.shape, bool)
    if value_mask is not None:
        mask &= value_mask[:, None, :]
    if causal:
        mask &= np.tril(np.ones(scores.shape[1:], bool))[None]
    w = np_softmax(scores, mask)
    if query_mask is not None:
        w = w * query_mask[..., None]
    c = w @ v.astype(np.float64)
    if single:
        return c[:, 0], w[:, 0]
    return c, w


def to_np(x):
    return ops.convert_to_numpy(x)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


# ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(LAYERS))
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("masked", [False, True])
def test_matches_numpy_reference(name, rank, masked):
    layer = LAYERS[name]()
    dq = 4
    dk = 4 if name.startswith("dot") else 6
    q = rand(3, 2, dq, seed=1) if rank == 3 else rand(3, dq, seed=1)
    k = rand(3, 5, dk, seed=2)
    v = rand(3, 5, 3, seed=3)
    value_mask = query_mask = None
    if masked:
        value_mask = np.array(
            [[1, 1, 1, 0, 0], [1, 0, 1, 0, 1], [0, 0, 0, 0, 0]], bool
        )
        query_mask = (
            np.array([[1, 0], [1, 1], [1, 1]], bool)
            if rank == 3
            else np.array([1, 0, 1], bool)
        )
    context, weights = layer(
        q, v, key=k, value_mask=value_mask, query_mask=query_mask
    )
    if name.startswith("additive") and layer.use_bias:
        # A non-zero bias so that the reference really exercises it.
        layer.bias.assign(np.linspace(-1, 1, layer.units).astype("float32"))
        context, weights = layer(
            q, v, key=k, value_mask=value_mask, query_mask=query_mask
        )
    ref_c, ref_w = np_attention(
        layer, q, v, k, value_mask=value_mask, query_mask=query_mask
    )
    np.testing.assert_allclose(to_np(weights), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_np(context), ref_c, atol=1e-5)


def test_hand_computed_dot_case():
    # One query [1, 0], keys [1, 0] and [0, 1]: scores 1 and 0.
    q = np.array([[[1.0, 0.0]]], "float32")
    k = np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32")
    v = np.array([[[10.0], [20.0]]], "float32")
    context, weights = DotAttention()(q, v, key=k)
    e = np.exp(1.0)
    expected_w = np.array([e / (e + 1), 1 / (e + 1)])
    np.testing.assert_allclose(to_np(weights)[0, 0], expected_w, rtol=1e-6)
    np.testing.assert_allclose(
        to_np(context)[0, 0, 0], 10 * expected_w[0] + 20 * expected_w[1], rtol=1e-6
    )


def test_hand_computed_additive_case():
    layer = AdditiveAttention(units=1, use_bias=False)
    layer.build((1, 1, 1), (1, 2, 1))
    layer.key_kernel.assign([[1.0]])
    layer.query_kernel.assign([[2.0]])
    layer.score_kernel.assign([3.0])
    q = np.array([[[0.5]]], "float32")
    v = np.array([[[1.0], [-1.0]]], "float32")
    _, weights = layer(q, v)
    # e_j = 3 * tanh(k_j + 2 * 0.5): 3 tanh(2) and 3 tanh(0) = 0.
    e0 = 3 * np.tanh(2.0)
    expected = np.exp([e0, 0.0]) / np.exp([e0, 0.0]).sum()
    np.testing.assert_allclose(to_np(weights)[0, 0], expected, rtol=1e-6)


def test_dot_with_fixed_scale_is_scaled_dot_product():
    q, v = rand(2, 3, 8, seed=4), rand(2, 6, 8, seed=5)
    _, w = DotAttention(scale_by_dim=True)(q, v)
    ref = np_softmax(np.einsum("bqd,bsd->bqs", q, v) / np.sqrt(8))
    np.testing.assert_allclose(to_np(w), ref, atol=1e-6)


@pytest.mark.parametrize("name", BASIC)
def test_causal_mask(name):
    layer = LAYERS[name]()
    x = rand(2, 4, 4, seed=6)
    context, weights = layer(x, x, use_causal_mask=True)
    w = to_np(weights)
    assert np.all(np.triu(w, k=1) == 0.0)
    ref_c, ref_w = np_attention(layer, x, x, causal=True)
    np.testing.assert_allclose(w, ref_w, atol=1e-5)
    np.testing.assert_allclose(to_np(context), ref_c, atol=1e-5)


@pytest.mark.parametrize("name", BASIC)
def test_dropout_only_in_training(name):
    layer = LAYERS[name](dropout=0.5, seed=3)
    q, v = rand(4, 6, 4, seed=7), rand(4, 8, 4, seed=8)
    c1, w1 = layer(q, v, training=False)
    c2, w2 = layer(q, v, training=False)
    np.testing.assert_array_equal(to_np(c1), to_np(c2))
    c3, w3 = layer(q, v, training=True)
    assert not np.allclose(to_np(c1), to_np(c3))
    # Returned weights are the attention distribution, before dropout.
    np.testing.assert_allclose(to_np(w3), to_np(w1), atol=1e-6)


# ----------------------------------------------------------------------------
# Property tests.
@st.composite
def attention_case(draw):
    b = draw(st.integers(1, 3))
    tq = draw(st.integers(1, 4))
    s = draw(st.integers(1, 6))
    d = draw(st.integers(1, 5))
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    q = (rng.normal(size=(b, tq, d)) * scale).astype("float32")
    v = (rng.normal(size=(b, s, d)) * scale).astype("float32")
    mask = rng.random((b, s)) < draw(st.sampled_from([0.0, 0.5, 1.0]))
    return q, v, mask


@pytest.mark.parametrize("name", BASIC)
@settings(max_examples=15, deadline=None)
@given(case=attention_case())
def test_weight_properties(name, case):
    q, v, mask = case
    layer = LAYERS[name]()
    context, weights = layer(q, v, value_mask=mask)
    w = to_np(weights)
    c = to_np(context)
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(c))
    assert np.all(w >= 0)
    # Masked keys get exactly zero weight.
    assert np.all(w[np.broadcast_to(~mask[:, None, :], w.shape)] == 0.0)
    sums = w.sum(-1)
    any_kept = mask.any(-1)
    np.testing.assert_allclose(sums[any_kept], 1.0, atol=1e-5)
    # All-masked rows: zero weights and a zero context.
    assert np.all(w[~any_kept] == 0.0)
    assert np.all(c[~any_kept] == 0.0)


@pytest.mark.parametrize("name", BASIC)
@settings(max_examples=8, deadline=None)
@given(case=attention_case())
def test_gradients_finite(name, case):
    import tensorflow as tf

    q, v, mask = case
    layer = LAYERS[name]()
    q_t, v_t = tf.constant(q), tf.constant(v)
    with tf.GradientTape() as tape:
        tape.watch([q_t, v_t])
        context, weights = layer(q_t, v_t, value_mask=mask)
        loss = tf.reduce_sum(context**2) + tf.reduce_sum(weights)
    grads = tape.gradient(loss, [q_t, v_t] + layer.trainable_weights)
    for g in grads:
        assert g is not None
        assert np.all(np.isfinite(to_np(g)))


pytestmark_tf = pytest.mark.tf_only
test_gradients_finite = pytestmark_tf(test_gradients_finite)


@pytest.mark.parametrize("name", BASIC)
def test_all_masked_gradients_are_zero_not_nan(name):
    layer = LAYERS[name]()
    q = rand(2, 3, 4, seed=9) * 1e4
    v = rand(2, 5, 4, seed=10) * 1e4
    mask = np.zeros((2, 5), bool)
    _, (gq, gv) = gradients(
        lambda q, v: layer(q, v, value_mask=mask), q, v
    )
    assert np.all(to_np(gq) == 0.0) and np.all(to_np(gv) == 0.0)


# ----------------------------------------------------------------------------
# Masks, shapes and composition with Keras RNNs.
def encoder_decoder(name, vocab=20, dim=8):
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(vocab, dim, mask_zero=True)(src)
    enc, h, c = keras.layers.LSTM(dim, return_sequences=True, return_state=True)(x)
    y = keras.layers.Embedding(vocab, dim, mask_zero=True)(tgt)
    dec = keras.layers.LSTM(dim, return_sequences=True)(y, initial_state=[h, c])
    context, weights = LAYERS[name]()(dec, enc)
    hidden = keras.layers.Concatenate()([context, dec])
    logits = keras.layers.Dense(vocab)(hidden)
    return keras.Model([src, tgt], [logits, weights])


@pytest.mark.parametrize("name", BASIC)
def test_keras_mask_propagates_from_embedding(name):
    model = encoder_decoder(name)
    src = np.array([[3, 4, 5, 0, 0], [6, 7, 0, 0, 0]])
    tgt = np.array([[1, 2, 3], [4, 0, 0]])
    _, weights = model([src, tgt])
    w = to_np(weights)
    assert np.all(w[0, :, 3:] == 0.0)
    assert np.all(w[1, :, 2:] == 0.0)
    np.testing.assert_allclose(w[0].sum(-1), 1.0, atol=1e-6)
    # Padded target steps (query mask) give zero weights.
    assert np.all(w[1, 1:] == 0.0)


@pytest.mark.parametrize("name", BASIC)
def test_compute_mask_passes_query_mask_to_context(name):
    q = keras.Input((None, 4))
    v = keras.Input((None, 4))
    layer = LAYERS[name]()
    query_mask = np.array([[True, False, True]])
    qt = ops.convert_to_tensor(rand(1, 3, 4))
    vt = ops.convert_to_tensor(rand(1, 5, 4))
    mask = layer.compute_mask(qt, ops.convert_to_tensor(query_mask))
    np.testing.assert_array_equal(to_np(mask[0]), query_mask)
    assert mask[1] is None
    assert layer.compute_mask(qt, None) is None
    del q, v, vt


@pytest.mark.slow
@pytest.mark.parametrize("name", BASIC)
def test_one_fit_step_of_encoder_decoder(name):
    model = encoder_decoder(name)
    train = keras.Model(model.inputs, model.outputs[0])
    train.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(0)
    src = rng.integers(1, 20, size=(8, 6))
    tgt = rng.integers(1, 20, size=(8, 4))
    before = [to_np(w).copy() for w in train.trainable_weights]
    history = train.fit([src, tgt], tgt, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [to_np(w).copy() for w in train.trainable_weights]
    assert any(not np.allclose(a, b) for a, b in zip(before, after))


# ----------------------------------------------------------------------------
# What every layer owes (build, symbolic and eager calls, weights, masks,
# config and `.keras` round trips, one fit step, dtype policies), with query
# and value lengths that differ.
NUM_WEIGHTS = {
    "dot": 0,
    "dot_scaled": 1,
    "multiplicative": 1,
    "multiplicative_scaled": 2,
    "additive": 4,
    "additive_normed": 5,
}


@pytest.mark.parametrize("name", list(LAYERS))
@pytest.mark.parametrize("rank", [2, 3])
def test_layer_harness(name, rank, tmp_path):
    dk = 4 if name.startswith("dot") else 5
    query = (2, 3, 4) if rank == 3 else (2, 4)
    value_mask = np.array([[1, 1, 1, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0]], bool)
    query_mask = np.array([[1, 0, 1], [1, 1, 0]], bool)
    run_layer_test(
        lambda **kw: LAYERS[name](dropout=0.25, seed=7, **kw),
        {"query": query, "value": (2, 7, 6), "key": (2, 7, dk)},
        [query[:-1] + (6,), query[:-1] + (7,)],
        expected_num_trainable_weights=NUM_WEIGHTS[name],
        expected_num_seed_generators=1,
        masks={
            "value_mask": value_mask,
            "query_mask": query_mask if rank == 3 else query_mask[:, 0],
        },
        tmp_path=tmp_path,
    )


def test_registered_for_loading_without_custom_objects():
    layer = AdditiveAttention(3, dropout=0.1, seed=2)
    config = layer.get_config()
    assert config["seed"] == 2 and config["dropout"] == 0.1
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)
    )
    assert type(restored) is AdditiveAttention
    assert restored.get_config() == config


FRESH_PROCESS = r"""
import sys, json
import numpy as np
import tensorflow as tf
obj = tf.saved_model.load(sys.argv[1])
data = np.load(sys.argv[2])
out = obj.serve([tf.constant(data["src"]), tf.constant(data["tgt"])])
assert "keras_attention" not in sys.modules
np.savez(sys.argv[3], *[np.asarray(o) for o in out])
"""


@pytest.mark.slow
@pytest.mark.tf_only
@pytest.mark.parametrize("name", BASIC)
def test_saved_model_in_fresh_process(name, tmp_path):
    import subprocess
    import sys

    model = encoder_decoder(name)
    src = np.array([[3, 4, 5, 0], [6, 7, 8, 9]], "int32")
    tgt = np.array([[1, 2, 3], [4, 5, 0]], "int32")
    expected = [to_np(x) for x in model([src, tgt])]
    export_dir = tmp_path / "saved"
    model.export(str(export_dir), format="tf_saved_model", verbose=False)
    np.savez(tmp_path / "in.npz", src=src, tgt=tgt)
    script = tmp_path / "load.py"
    script.write_text(FRESH_PROCESS)
    subprocess.run(
        [
            sys.executable,
            str(script),
            str(export_dir),
            str(tmp_path / "in.npz"),
            str(tmp_path / "out.npz"),
        ],
        check=True,
        cwd=tmp_path,  # the repository (and keras_attention) is not on the path
        timeout=240,
    )
    out = np.load(tmp_path / "out.npz")
    got = [out[f"arr_{i}"] for i in range(len(expected))]
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, atol=1e-5)


# ----------------------------------------------------------------------------
# Mixed precision.
@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision(name, policy):
    keras.config.set_dtype_policy(policy)
    layer = LAYERS[name]()
    compute = "float16" if policy == "mixed_float16" else "bfloat16"
    q = rand(2, 3, 4, seed=11) * 1e4  # large: float16 dot products overflow
    v = rand(2, 5, 4, seed=12) * 1e4
    mask = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], bool)
    context, weights = layer(q, v, value_mask=mask)
    assert keras.backend.standardize_dtype(context.dtype) == compute
    assert keras.backend.standardize_dtype(weights.dtype) == compute
    assert all(w.dtype == "float32" for w in layer.weights)
    w = to_np(ops.cast(weights, "float32"))
    c = to_np(ops.cast(context, "float32"))
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(c))
    np.testing.assert_allclose(w[0].sum(-1), 1.0, atol=1e-2)
    assert np.all(w[1] == 0)


@pytest.mark.slow
@pytest.mark.parametrize("name", BASIC)
def test_mixed_float16_fit_is_finite(name):
    keras.config.set_dtype_policy("mixed_float16")
    model = encoder_decoder(name)
    train = keras.Model(model.inputs, model.outputs[0])
    train.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(1)
    src = rng.integers(0, 20, size=(8, 6))
    tgt = rng.integers(1, 20, size=(8, 4))
    history = train.fit([src, tgt], tgt, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])


# ----------------------------------------------------------------------------
# Bad input.
def test_dot_needs_equal_query_and_key_sizes():
    with pytest.raises(ValueError, match=r"query.shape=\(2, 3, 4\).*key.shape=\(2, 5, 6\)"):
        DotAttention()(rand(2, 3, 4), rand(2, 5, 6))


@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize(
    "q_shape, v_shape, k_shape, pattern",
    [
        ((2, 3, 4, 1), (2, 5, 4), None, r"`query` must have rank 2 .* query.shape=\(2, 3, 4, 1\)"),
        ((2, 3, 4), (2, 5), None, r"`value` must have rank 3 .* value.shape=\(2, 5\)"),
        ((2, 3, 4), (3, 5, 4), None, r"same batch size.*query.shape=\(2, 3, 4\).*value.shape=\(3, 5, 4\)"),
        ((2, 3, 4), (2, 5, 4), (2, 6, 4), r"same number of source positions.*key.shape=\(2, 6, 4\).*value.shape=\(2, 5, 4\)"),
        ((2, 3, 4), (2, 5, 4), (2, 5), r"`key` must have rank 3 .* key.shape=\(2, 5\)"),
    ],
)
def test_bad_shapes(name, q_shape, v_shape, k_shape, pattern):
    layer = LAYERS[name]()
    k = None if k_shape is None else rand(*k_shape)
    with pytest.raises(ValueError, match=pattern):
        layer(rand(*q_shape), rand(*v_shape), key=k)


@pytest.mark.parametrize("name", BASIC)
def test_bad_shapes_symbolic(name):
    with pytest.raises(ValueError, match=r"same batch size"):
        LAYERS[name]()(
            keras.Input((3, 4), batch_size=2), keras.Input((5, 4), batch_size=3)
        )


@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize(
    "arg, mask_shape, expected",
    [
        ("value_mask", (2, 4), r"`value_mask` must have shape \(2, 5\). Received: value_mask.shape=\(2, 4\)"),
        ("value_mask", (2, 5, 1), r"`value_mask` must have shape \(2, 5\). Received: value_mask.shape=\(2, 5, 1\)"),
        ("query_mask", (2, 5), r"`query_mask` must have shape \(2, 3\). Received: query_mask.shape=\(2, 5\)"),
    ],
)
def test_bad_mask_shapes(name, arg, mask_shape, expected):
    layer = LAYERS[name]()
    with pytest.raises(ValueError, match=expected):
        layer(rand(2, 3, 4), rand(2, 5, 4), **{arg: np.ones(mask_shape, bool)})


@pytest.mark.parametrize("name", BASIC)
def test_integer_query_rejected(name):
    with pytest.raises(ValueError, match=r"`query` must be a floating point tensor. Received: query.dtype=int"):
        LAYERS[name]()(np.ones((2, 3, 4), "int32"), rand(2, 5, 4))


@pytest.mark.parametrize("units", [0, -3, 2.5, None, True])
def test_additive_units_must_be_positive_int(units):
    with pytest.raises(ValueError, match=r"`units` must be a positive integer. Received: units="):
        AdditiveAttention(units=units)


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 2])
def test_dropout_range(dropout):
    with pytest.raises(ValueError, match="`dropout` must be in"):
        DotAttention(dropout=dropout)


def test_public_api():
    """The whole public surface: `__all__` is exactly the public names,
    each importable and documented, and each layer registered."""
    import inspect
    import types

    assert keras_attention.__version__
    public = keras_attention.__all__
    assert len(set(public)) == len(public)
    namespace = {}
    exec("from keras_attention import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(
        public
    )
    # Every public non-module name of the package is in `__all__` (the
    # internal modules, e.g. `checks`, are not part of the API).
    modules = {
        n
        for n in public
        if isinstance(getattr(keras_attention, n), types.ModuleType)
    }
    extra = [
        n
        for n in dir(keras_attention)
        if not n.startswith("_")
        and n not in public
        and not isinstance(getattr(keras_attention, n), types.ModuleType)
    ]
    assert not extra, extra
    assert modules == {
        "alignment", "callbacks", "decoding", "ops", "visualization"
    }
    layer_methods = set(dir(keras.layers.Layer))
    for name in public:
        obj = getattr(keras_attention, name)
        if name == "__version__":
            continue
        assert inspect.getdoc(obj), f"{name} has no docstring"
        if not inspect.isclass(obj):
            continue
        # Public methods and properties the package adds are documented.
        for attr in dir(obj):
            owner = next(c for c in obj.__mro__ if attr in vars(c))
            ours = owner.__module__.startswith("keras_attention")
            if attr.startswith("_") or attr in layer_methods or not ours:
                continue
            member = inspect.getattr_static(obj, attr)
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if callable(member) or isinstance(member, property):
                assert inspect.getdoc(member), f"{name}.{attr} undocumented"
        if issubclass(obj, keras.layers.Layer) and obj not in (
            BaseAttention,
            keras_attention.StatefulAttention,
        ):
            assert keras.saving.get_registered_name(obj) == (
                f"keras_attention>{name}"
            )


# The one TensorFlow use allowed in the package: TensorBoard event files are
# TensorFlow's format, and the callback writes them only on that backend.
# TensorBoard image summaries; telling an eager tensor from a graph one.
TENSORFLOW_ALLOWED = {
    ("callbacks.py", "_write_images"),
    ("scalars.py", "concrete_value"),
    # `generate`'s compiled function: `tf.function` on the TensorFlow
    # backend (jax.jit on JAX).
    ("compiled.py", "is_traced"),
    ("compiled.py", "__init__"),
    # The decoding loops' row gather: a plain `GatherV2` on TensorFlow, not
    # `ops.take`'s five extra ops for negative indices at every step.
    ("state.py", "gather"),
    # Greedy decoding's per-row pick: one batched `GatherV2` on TensorFlow,
    # not `ops.take_along_axis`'s dozen ops at every step.
    ("state.py", "take_per_row"),
    # Greedy decoding's pick: a plain `ArgMax`, not `ops.argmax`'s four
    # passes that rewrite `-0.0` at every step.
    ("greedy.py", "best_tokens"),
    # Beam search's chunked top-k, an exact shortcut of `TopKV2` on wide
    # rows (elsewhere `ops.top_k`).
    ("selection.py", "top_k"),
}
# The parts of the package that their docstrings say need TensorFlow: the
# tf.data pipeline, the SavedModel serving, the text ops of tokenizers, the
# web page's SavedModel calls, and FusedAdam's fused update (TensorFlow's
# kernel).
TENSORFLOW_MODULES = {
    # Training runs (tf.data, tf.distribute, the devices) and a recipe's
    # SavedModel calls.
    "training/dataset.py",
    "training/distribute.py",
    "training/acceleration.py",
    "recipes/decoding.py",
    "seq2seq/fused_adam.py",
    "seq2seq/tokens.py",
    "serving/export.py",
    "serving/serving_ops.py",
    "serving/tokenizer.py",
    "serving/translator.py",
    "serving/compilation.py",
    "serving/members.py",
    "web/translator.py",
    # The tokenizers' ops and the task model's string handling (tf.data,
    # tensorflow-text) and the command line's SavedModel calls.
    "tokenizers/sentencepiece.py",
    "tokenizers/text_ops.py",
    "translator/fitting.py",
    "translator/translating.py",
    "translator/translator.py",
    "cli/models.py",
    "cli/saved_model.py",
    # The LiteRT and ONNX exports: a TensorFlow graph, converted.
    "portable/graph.py",
    "portable/convert.py",
}


def test_package_uses_no_tensorflow():
    """The layers are backend-agnostic: no TensorFlow in the package's code."""
    import ast
    import pathlib

    package = pathlib.Path(keras_attention.__file__).parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).as_posix() in TENSORFLOW_MODULES:
            continue
        tree = ast.parse(path.read_text())
        enclosing = {}
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(func):
                    enclosing.setdefault(node, func.name)
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            if not any(m.split(".")[0] == "tensorflow" for m in modules):
                continue
            where = (path.name, enclosing.get(node, "<module>"))
            if where not in TENSORFLOW_ALLOWED:
                offenders.append(f"{path.name}:{node.lineno} in {where[1]}")
    assert not offenders, offenders


@pytest.mark.slow
def test_layers_import_no_tensorflow_on_jax(tmp_path):
    """On the JAX backend, building and calling every layer and the RNN
    wrappers never imports TensorFlow."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "import numpy as np\n"
        "import keras\n"
        "import keras_attention as ka\n"
        "q = np.ones((2, 3, 4), 'float32'); v = np.ones((2, 5, 4), 'float32')\n"
        "for layer in (ka.DotAttention(), ka.MultiplicativeAttention(),\n"
        "              ka.AdditiveAttention(4)):\n"
        "    layer(q, v)\n"
        "rnn = ka.AttentionRNN(ka.AttentionWrapper(keras.layers.LSTMCell(4),\n"
        "                                         ka.DotAttention()))\n"
        "rnn(q, v)\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
        "print('ok')\n"
    )
    import os

    env = dict(os.environ, KERAS_BACKEND="jax")
    result = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


# ----------------------------------------------------------------------------
# Masked positions never influence the result, whatever is stored there.
@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("separate_key", [False, True])
def test_non_finite_values_at_masked_positions_change_nothing(
    name, rank, bad, separate_key
):
    layer = LAYERS[name]()
    dk = 4 if name == "dot" else 6
    q = rand(3, 2, 4, seed=20) if rank == 3 else rand(3, 4, seed=20)
    v = rand(3, 5, 4, seed=21)
    k = rand(3, 5, dk, seed=22) if separate_key else None
    # All kept, some masked, all masked.
    mask = np.array([[1, 1, 1, 1, 1], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], bool)

    def at_masked(x, fill):
        return np.where(mask[..., None], x, fill).astype("float32")

    def run(q, v, k=None):
        return layer(q, v, key=k, value_mask=mask)

    clean = [at_masked(v, 0.0)] + ([] if k is None else [at_masked(k, 0.0)])
    dirty = [at_masked(v, bad)] + ([] if k is None else [at_masked(k, bad)])
    context, weights = run(q, *clean)
    (dirty_context, dirty_weights), grads = gradients(run, q, *dirty)
    np.testing.assert_array_equal(to_np(dirty_context), to_np(context))
    np.testing.assert_array_equal(to_np(dirty_weights), to_np(weights))
    for grad in grads:
        assert np.all(np.isfinite(to_np(grad)))
    # No gradient reaches the masked positions.
    assert np.all(to_np(grads[1])[~mask] == 0.0)


# ----------------------------------------------------------------------------
# Masks are boolean (or integer 0/1); a float mask is refused.
@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize("arg", ["query_mask", "value_mask"])
def test_float_masks_are_refused(name, arg):
    shape = (2, 3) if arg == "query_mask" else (2, 5)
    layer = LAYERS[name]()
    with pytest.raises(
        ValueError,
        match=rf"`{arg}` must be a boolean \(or integer 0/1\) mask, "
        rf"True = keep. Received: {arg}.dtype=float32",
    ):
        layer(
            rand(2, 3, 4), rand(2, 5, 4), **{arg: np.full(shape, 0.5, "f4")}
        )


@pytest.mark.parametrize("name", BASIC)
def test_integer_masks_equal_boolean_masks(name):
    layer = LAYERS[name]()
    q, v = rand(2, 3, 4, seed=23), rand(2, 5, 4, seed=24)
    value_mask = np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 1]])
    query_mask = np.array([[1, 0, 1], [1, 1, 0]])
    want = layer(
        q, v, value_mask=value_mask.astype(bool),
        query_mask=query_mask.astype(bool),
    )
    got = layer(
        q, v, value_mask=value_mask.astype("int32"),
        query_mask=query_mask.astype("int32"),
    )
    for g, w in zip(got, want):
        np.testing.assert_array_equal(to_np(g), to_np(w))


# ----------------------------------------------------------------------------
# Dropout: one implementation, with a mask drawn in `attend` or given.
@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize("rank", [2, 3])
def test_attend_with_a_given_dropout_mask(name, rank):
    rate = 0.4
    layer = LAYERS[name](dropout=rate, seed=5)
    q = rand(2, 3, 4, seed=25) if rank == 3 else rand(2, 4, seed=25)
    v = rand(2, 5, 4, seed=26)
    layer.build(q.shape, v.shape)
    memory = layer.prepare_memory(v)
    _, weights = layer.attend(q, memory["memory"], memory["keys"])
    keep = np.random.default_rng(0).random(tuple(weights.shape)) >= rate
    context, dropped_weights = layer.attend(
        q, memory["memory"], memory["keys"], training=True, dropout_mask=keep
    )
    w = to_np(weights)
    # The returned weights are before dropout; the context uses the kept
    # weights scaled by 1 / (1 - rate).
    np.testing.assert_allclose(to_np(dropped_weights), w, atol=1e-6)
    dropped = np.where(keep, w / (1 - rate), 0.0)
    expected = np.einsum("b...s,bsd->b...d", dropped, v)
    np.testing.assert_allclose(to_np(context), expected, atol=1e-5)
    # Outside training the mask is ignored.
    plain, _ = layer.attend(
        q, memory["memory"], memory["keys"], training=False, dropout_mask=keep
    )
    np.testing.assert_allclose(
        to_np(plain), np.einsum("b...s,bsd->b...d", w, v), atol=1e-5
    )


@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_non_finite_masked_values_under_mixed_precision(name, policy):
    keras.config.set_dtype_policy(policy)
    layer = LAYERS[name]()
    q, v = rand(2, 3, 4, seed=27), rand(2, 5, 4, seed=28)
    mask = np.array([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0]], bool)
    clean = np.where(mask[..., None], v, 0.0).astype("float32")
    dirty = np.where(mask[..., None], v, np.nan).astype("float32")
    want = layer(q, clean, value_mask=mask)
    (context, weights), grads = gradients(
        lambda q, v: layer(q, v, value_mask=mask), q, dirty
    )
    np.testing.assert_array_equal(to_np(context), to_np(want[0]))
    np.testing.assert_array_equal(to_np(weights), to_np(want[1]))
    for grad in grads:
        assert np.all(np.isfinite(to_np(grad)))
