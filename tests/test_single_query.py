"""One decoder step's attention products: both forms against numpy.

`keras_attention.ops.single_query` computes the scores and the context of
one query per example elementwise below a size and as a batched matmul
above it, picking in Python for known sizes and with `ops.cond` for sizes
known only at run time. Every path must give numpy's values and
gradients, and the layers' single-step `attend` must equal their
sequence call on one query row.
"""

import numpy as np
import pytest
import keras
from keras import ops

from keras_attention import DotAttention
from keras_attention import MultiplicativeAttention
from keras_attention.ops import single_query
from keras_attention.ops.single_query import ELEMENTWISE_LIMIT
from keras_attention.ops.single_query import one_query_scores
from keras_attention.ops.single_query import weighted_sum

# (batch, source, dim): below the limit, and above it (by batch, as a
# decoder's batch grows).
SMALL = (3, 5, 8)
LARGE = (ELEMENTWISE_LIMIT // (5 * 8) + 1, 5, 8)


def _inputs(shape, seed=0):
    batch, source, dim = shape
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, 1, dim)).astype("float32")
    key = rng.normal(size=(batch, source, dim)).astype("float32")
    weights = rng.random(size=(batch, source)).astype("float32")
    return query, key, weights


@pytest.mark.parametrize("shape", [SMALL, LARGE], ids=["small", "large"])
def test_both_forms_match_numpy_with_known_sizes(shape):
    query, key, weights = _inputs(shape)
    scores = ops.convert_to_numpy(one_query_scores(query, key))
    context = ops.convert_to_numpy(weighted_sum(weights, key))
    np.testing.assert_allclose(
        scores, np.einsum("bqd,bsd->bqs", query, key), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        context, np.einsum("bs,bsd->bd", weights, key), rtol=1e-5, atol=1e-5
    )


def test_the_form_follows_the_size(monkeypatch):
    """Below the limit no matmul runs; above it the matmul does."""
    calls = []
    real = ops.matmul

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(single_query.ops, "matmul", counting)
    small_query, small_key, small_weights = _inputs(SMALL)
    one_query_scores(small_query, small_key)
    weighted_sum(small_weights, small_key)
    assert calls == []
    query, key, weights = _inputs(LARGE)
    one_query_scores(query, key)
    weighted_sum(weights, key)
    assert len(calls) == 2
    # bfloat16 keeps the matmul at any size (it accumulates in float32).
    calls.clear()
    one_query_scores(
        ops.cast(small_query, "bfloat16"), ops.cast(small_key, "bfloat16")
    )
    assert len(calls) == 1


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="sizes known only at run time exist in TensorFlow graphs",
)
@pytest.mark.parametrize("shape", [SMALL, LARGE], ids=["small", "large"])
def test_run_time_sizes_pick_by_cond_with_values_and_gradients(shape):
    import tensorflow as tf

    spec = tf.TensorSpec((None, None, shape[2]), "float32")

    @tf.function(
        input_signature=[spec, spec, tf.TensorSpec((None, None), "float32")]
    )
    def products(query, key, weights):
        with tf.GradientTape() as tape:
            tape.watch([query, key, weights])
            scores = one_query_scores(query, key)
            context = weighted_sum(weights, key)
            loss = tf.reduce_sum(scores**2) + tf.reduce_sum(context * 3.0)
        return (scores, context) + tuple(
            tape.gradient(loss, [query, key, weights])
        )

    query, key, weights = _inputs(shape, seed=1)
    scores, context, d_query, d_key, d_weights = (
        t.numpy() for t in products(query, key, weights)
    )
    want_scores = np.einsum("bqd,bsd->bqs", query, key)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        context, np.einsum("bs,bsd->bd", weights, key), rtol=1e-5, atol=1e-5
    )
    # d/dq sum(s^2) = 2 s k; d/dk = 2 s q + 3 w; d/dw = 3 sum_d k.
    np.testing.assert_allclose(
        d_query,
        np.einsum("bqs,bsd->bqd", 2 * want_scores, key),
        rtol=1e-4,
        atol=1e-4,
    )
    np.testing.assert_allclose(
        d_key,
        np.einsum("bqs,bqd->bsd", 2 * want_scores, query)
        + 3.0 * weights[..., None],
        rtol=1e-4,
        atol=1e-4,
    )
    np.testing.assert_allclose(
        d_weights, 3.0 * key.sum(-1), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("layer_class", [DotAttention, MultiplicativeAttention])
@pytest.mark.parametrize("batch", [2, LARGE[0]], ids=["small", "large"])
def test_single_step_attend_equals_the_sequence_call(layer_class, batch):
    """A step's context and weights equal those of a one-row query call,
    with a masked position holding large values that must not count."""
    rng = np.random.default_rng(2)
    source, dim = 5, 8
    query = rng.normal(size=(batch, dim)).astype("float32")
    value = rng.normal(size=(batch, source, dim)).astype("float32")
    value[:, -1] = 1e6
    mask = np.ones((batch, source), bool)
    mask[:, -1] = False
    layer = layer_class()
    want_context, want_weights = layer(query[:, None], value, value_mask=mask)
    memory = layer.prepare_memory(value, value_mask=mask)
    context, weights = layer.attend(
        query,
        memory["memory"],
        memory["keys"],
        value_mask=memory["memory_mask"],
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(context),
        ops.convert_to_numpy(want_context)[:, 0],
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(weights),
        ops.convert_to_numpy(want_weights)[:, 0],
        rtol=1e-5,
        atol=1e-6,
    )
    assert np.all(ops.convert_to_numpy(weights)[:, -1] == 0.0)
