"""`keras_attention.seq2seq.losses.sparse_cross_entropy`, the token
cross-entropy `MaskedLoss` trains with (a hand-written gradient on TensorFlow
and PyTorch, Keras' loss on JAX), against
a float64 numpy reference and against Keras' own loss, on every backend."""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.seq2seq.losses import sparse_cross_entropy
from tests.layer_harness import gradients
from tests.layer_harness import to_np


def _reference(labels, logits):
    """Loss and `softmax - onehot`, in float64."""
    x = logits.astype(np.float64)
    shifted = x - x.max(-1, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(-1))
    picked = np.take_along_axis(shifted, labels[..., None], -1)[..., 0]
    probs = np.exp(shifted - log_sum[..., None])
    onehot = np.eye(x.shape[-1])[labels]
    return log_sum - picked, probs - onehot


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3),
    steps=st.integers(1, 4),
    vocab=st.integers(2, 40),
    scale=st.sampled_from([0.1, 1.0, 30.0]),
    offset=st.sampled_from([0.0, -500.0, 1000.0]),
    seed=st.integers(0, 2**16),
)
def test_loss_and_gradient_match_numpy(batch, steps, vocab, scale, offset, seed):
    rng = np.random.default_rng(seed)
    logits = (rng.normal(size=(batch, steps, vocab)) * scale + offset).astype(
        "float32"
    )
    labels = rng.integers(0, vocab, size=(batch, steps)).astype("int32")
    loss, (grad,) = gradients(lambda x: sparse_cross_entropy(labels, x), logits)
    expected, softmax_minus_onehot = _reference(labels, logits)
    # Relative to the logits' size: float32 holds them to ~1e-7 of it.
    tolerance = 1e-5 * (1.0 + abs(offset) + scale)
    np.testing.assert_allclose(to_np(loss), expected, atol=tolerance, rtol=1e-5)
    # The harness differentiates the sum of squares: 2 loss (p - onehot).
    np.testing.assert_allclose(
        to_np(grad),
        2.0 * expected[..., None] * softmax_minus_onehot,
        atol=1e-4 * (1.0 + expected.max()),
        rtol=1e-4,
    )


def test_the_same_as_keras_loss_and_its_gradient():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 6, 50)).astype("float32") * 4
    labels = rng.integers(0, 50, size=(4, 6)).astype("int32")
    ours, (our_grad,) = gradients(
        lambda x: sparse_cross_entropy(labels, x), logits
    )
    theirs, (their_grad,) = gradients(
        lambda x: keras.losses.sparse_categorical_crossentropy(
            labels, x, from_logits=True
        ),
        logits,
    )
    np.testing.assert_allclose(to_np(ours), to_np(theirs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        to_np(our_grad), to_np(their_grad), rtol=1e-4, atol=1e-5
    )


def test_one_dominant_logit_and_equal_logits():
    # The largest probability is 1 (the rest underflow to 0) or 1 / V.
    logits = np.array([[0.0, 1e4, -1e4], [7.0, 7.0, 7.0]], "float32")
    labels = np.array([1, 2], "int32")
    loss = to_np(sparse_cross_entropy(labels, logits))
    np.testing.assert_allclose(loss, [0.0, np.log(3.0)], atol=1e-6)
    wrong = to_np(sparse_cross_entropy(np.array([0, 0], "int32"), logits))
    np.testing.assert_allclose(wrong, [1e4, np.log(3.0)], rtol=1e-6)


def test_both_ways_to_the_loss_agree_with_numpy():
    """A batch whose label probabilities are all normal floats takes
    `-log(softmax[label])`; one where a label's underflows (a loss of
    about 200 nats) takes the log-sum-exp for every row. Both give the
    float64 reference, and the same values for the rows they share."""
    rng = np.random.default_rng(7)
    logits = (rng.normal(size=(3, 50)) * 4).astype("float32")
    labels = np.array([4, 17, 30], "int32")
    common = to_np(sparse_cross_entropy(labels, logits))
    far = logits.copy()
    far[2, 30] = far[2].max() - 200.0   # p[label] ~ exp(-200): underflows
    mixed = to_np(sparse_cross_entropy(labels, far))
    for value, x in ((common, logits), (mixed, far)):
        expected, _ = _reference(labels, x)
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-5)
    assert mixed[2] > 190.0
    np.testing.assert_allclose(mixed[:2], common[:2], rtol=1e-6, atol=1e-6)


def test_masked_loss_gives_padding_no_gradient_whatever_its_logits():
    rng = np.random.default_rng(2)
    labels = np.array([[5, 3, 0, 0], [1, 0, 0, 0]], "int32")
    logits = rng.normal(size=(2, 4, 8)).astype("float32")
    logits[labels == 0] = rng.normal(size=(5, 8)) * 1e4
    loss = MaskedLoss()
    value, (grad,) = gradients(lambda x: loss.call(labels, x), logits)
    grad = to_np(grad)
    assert np.all(np.isfinite(grad))
    assert not grad[labels == 0].any()
    assert grad[labels != 0].any()
    expected, _ = _reference(labels, logits)
    np.testing.assert_allclose(
        to_np(value)[0], expected[labels != 0].mean(), rtol=1e-5
    )


def test_mixed_precision_logits():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(2, 3, 9)).astype("float32") * 3
    labels = np.array([[1, 2, 3], [4, 0, 0]], "int32")
    full = float(ops.mean(MaskedLoss()(labels, logits)))
    for dtype in ("float16", "bfloat16"):
        half = float(MaskedLoss()(labels, ops.cast(logits, dtype)))
        assert np.isfinite(half)
        assert half == pytest.approx(full, rel=2e-2)


@pytest.mark.parametrize("label", [-1, 9])
def test_a_label_outside_the_vocabulary_raises_on_tensorflow(label):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("JAX and PyTorch gather without a bounds check")
    import tensorflow as tf

    logits = np.zeros((2, 9), "float32")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"not in \[0, 9\)"):
        sparse_cross_entropy(np.array([1, label], "int32"), logits)
