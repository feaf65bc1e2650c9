"""`keras_attention.LSTM`: Keras' LSTM results, a hand-written gradient.

The forward pass against a numpy LSTM (Keras' gate order, masking and
`go_backwards` conventions); the gradients of `lstm_sequence` (the custom
gradient) against autodiff of a plain `keras.ops` loop; the layer against
`keras.layers.LSTM` with the same weights (outputs, states, gradients,
`Bidirectional` over an `Embedding(mask_zero=True)`, saved weights loaded
across the two classes); random masks (hypothesis); which configurations
fall back to Keras' loop; the layer harness (config, `.keras`, `fit`, mixed
precision). Runs on every backend (`make test`).
"""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import LSTM
from keras_attention.rnn import lstm
from tests.layer_harness import gradients
from tests.layer_harness import run_layer_test
from tests.layer_harness import to_np

B, T, D, U = 3, 6, 4, 5
START_OUTPUT = "state" if keras.backend.backend() == "jax" else "zeros"


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstm(x, h, c, kernel, recurrent_kernel, bias, mask=None,
               go_backwards=False, zero_output_for_mask=False,
               start_output="zeros"):
    """Keras' LSTM, one step at a time: `(last_output, outputs, h, c)`.

    The output of a masked step is the last output; before the first kept
    step that is zeros on TensorFlow and PyTorch, the initial state `h` on
    JAX (`start_output="state"`), as Keras' loops of those backends do."""
    x = np.asarray(x, np.float64)
    steps = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    mask = np.ones(x.shape[:2], bool) if mask is None else mask
    output = h if start_output == "state" else np.zeros_like(h)
    outputs = []
    for t in steps:
        z = x[:, t] @ kernel + h @ recurrent_kernel + bias
        i, f, g, o = np.split(z, 4, axis=-1)
        c_new = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h_new = _sigmoid(o) * np.tanh(c_new)
        keep = mask[:, t : t + 1]
        h = np.where(keep, h_new, h)
        c = np.where(keep, c_new, c)
        if zero_output_for_mask:
            output = np.where(keep, h_new, 0)
        else:
            output = np.where(keep, h_new, output)
        outputs.append(output)
    return output, np.stack(outputs, axis=1), h, c


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(B, T, D)).astype("float32")
    h0 = rng.normal(size=(B, U)).astype("float32")
    c0 = rng.normal(size=(B, U)).astype("float32")
    weights = [
        rng.normal(scale=0.5, size=s).astype("float32")
        for s in ((D, 4 * U), (U, 4 * U), (4 * U,))
    ]
    return x, h0, c0, weights


# Trailing padding, a masked start (the output stays zero until the first
# kept step), a hole in the middle, a fully masked row.
MASK = np.ones((B, T), bool)
MASK[0, 4:] = False
MASK[1, :2] = False
MASK[2, 2] = False
MASKS = {"none": None, "mixed": MASK, "empty_row": np.concatenate(
    [MASK[:2], np.zeros((1, T), bool)])}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("zero_output", [False, True])
def test_forward_matches_numpy(mask, go_backwards, zero_output):
    x, h0, c0, weights = _data()
    mask = MASKS[mask]
    last, outputs, (h, c) = lstm.lstm_sequence(
        x, h0, c0, *weights, mask=mask, go_backwards=go_backwards,
        zero_output_for_mask=zero_output,
    )
    want = numpy_lstm(x, h0, c0, *weights, mask=mask,
                      go_backwards=go_backwards,
                      zero_output_for_mask=zero_output,
                      start_output=START_OUTPUT)
    for got, ref in zip((last, outputs, h, c), want):
        np.testing.assert_allclose(to_np(got), ref, atol=2e-5)


def _autodiff_lstm(x, h, c, kernel, recurrent_kernel, bias, mask):
    """The same LSTM as a plain `keras.ops` loop, differentiated by the
    backend."""
    outputs = []
    output = h if START_OUTPUT == "state" else ops.zeros_like(h)
    for t in range(x.shape[1]):
        z = ops.matmul(x[:, t], kernel) + ops.matmul(h, recurrent_kernel)
        i, f, g, o = ops.split(z + bias, 4, axis=-1)
        c_new = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h_new = ops.sigmoid(o) * ops.tanh(c_new)
        keep = mask[:, t : t + 1]
        h = ops.where(keep, h_new, h)
        c = ops.where(keep, c_new, c)
        output = ops.where(keep, h_new, output)
        outputs.append(output)
    return ops.stack(outputs, axis=1), h, c


@pytest.mark.parametrize("mask", ["none", "mixed", "empty_row"])
def test_custom_gradient_matches_autodiff(mask):
    x, h0, c0, weights = _data(1)
    mask = MASKS[mask]
    keep = np.ones((B, T), bool) if mask is None else mask

    def weigh(outputs):
        # Every position gets its own gradient.
        scale = np.arange(1, T + 1, dtype="float32")[:, None]
        return ops.multiply(outputs, ops.convert_to_tensor(scale))

    def fast(*args):
        _, outputs, (h, c) = lstm.lstm_sequence(*args, mask=mask)
        return weigh(outputs), h, c

    def reference(*args):
        outputs, h, c = _autodiff_lstm(*args, keep)
        return weigh(outputs), h, c

    got_out, got = gradients(fast, x, h0, c0, *weights)
    want_out, want = gradients(reference, x, h0, c0, *weights)
    for g, w in zip(got_out, want_out):
        np.testing.assert_allclose(to_np(g), to_np(w), atol=1e-5)
    names = ["inputs", "h0", "c0", "kernel", "recurrent_kernel", "bias"]
    for name, g, w in zip(names, got, want):
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-4, atol=1e-4, err_msg=name
        )


def _pair(**kwargs):
    """Our `LSTM` and `keras.layers.LSTM` with the same weights."""
    x, _, _, _ = _data()
    fast = LSTM(U, **kwargs)
    ref = keras.layers.LSTM(U, **kwargs)
    ref(x)
    fast(x)
    fast.set_weights(ref.get_weights())
    return fast, ref


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_layer_matches_keras_lstm(go_backwards, return_sequences):
    fast, ref = _pair(return_sequences=return_sequences, return_state=True,
                      go_backwards=go_backwards)
    x, h0, c0, _ = _data(2)

    def call(layer):
        return lambda x, h, c: layer(x, initial_state=[h, c], mask=MASK)

    got_out, got = gradients(call(fast), x, h0, c0)
    want_out, want = gradients(call(ref), x, h0, c0)
    for g, w in zip([*got_out, *got], [*want_out, *want]):
        np.testing.assert_allclose(to_np(g), to_np(w), atol=1e-5)


def _masked_encoder(layer_class, bidirectional):
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, D, mask_zero=True, name="emb")(ids)
    layer = layer_class(U, return_sequences=True, return_state=True,
                        name="rnn")
    if bidirectional:
        layer = keras.layers.Bidirectional(layer, name="rnn")
    outputs = layer(x)
    pooled = keras.layers.GlobalAveragePooling1D()(outputs[0])
    return keras.Model(ids, [pooled, *outputs])


@pytest.mark.parametrize("bidirectional", [False, True])
def test_saved_weights_load_across_classes(tmp_path, bidirectional):
    # The checkpoint layout is keras.layers.LSTM's: weights saved by a model
    # of one class load into the same model of the other, and the outputs
    # agree, masks from the embedding included (padding of 0 ids, the
    # pooled output uses the propagated mask).
    ids = np.array([[3, 4, 5, 0, 0], [6, 7, 8, 9, 2], [1, 0, 0, 0, 0]])
    keras.utils.set_random_seed(0)
    ref = _masked_encoder(keras.layers.LSTM, bidirectional)
    path = str(tmp_path / "ref.weights.h5")
    ref.save_weights(path)
    fast = _masked_encoder(LSTM, bidirectional)
    fast.load_weights(path)
    for g, w in zip(fast(ids), ref(ids)):
        np.testing.assert_allclose(to_np(g), to_np(w), atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 5), min_size=3, max_size=3),
    go_backwards=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_random_padding_matches_keras_lstm(lengths, go_backwards, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), 5, D)).astype("float32")
    # Padded positions hold large values: they must not influence anything.
    mask = np.arange(5)[None] < np.array(lengths)[:, None]
    x = np.where(mask[..., None], x, 1e4).astype("float32")
    fast, ref = _pair(return_sequences=True, return_state=True,
                      go_backwards=go_backwards)
    got = fast(x, mask=mask)
    want = ref(x, mask=mask)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_np(g), to_np(w), atol=1e-5)
        assert np.isfinite(to_np(g)).all()


def test_fused_loop_runs_where_it_can(monkeypatch):
    calls = []
    real = lstm.lstm_sequence

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(lstm, "lstm_sequence", spy)
    x, _, _, _ = _data()
    LSTM(U)(x, mask=MASK)
    assert len(calls) == 1
    dropout = LSTM(U, dropout=0.5, recurrent_dropout=0.0)
    assert dropout.fuses(training=False) and not dropout.fuses(training=True)
    dropout(x, mask=MASK, training=True)
    assert len(calls) == 1
    assert not LSTM(U, recurrent_dropout=0.2).fuses()
    assert not LSTM(U, activation="relu").fuses()
    assert not LSTM(U, unroll=True).fuses()


def test_fallback_configuration_matches_keras_lstm():
    # A configuration the fused loop does not cover runs Keras' own loop.
    fast, ref = _pair(return_sequences=True, activation="relu")
    x, _, _, _ = _data(3)
    np.testing.assert_allclose(
        to_np(fast(x, mask=MASK)), to_np(ref(x, mask=MASK)), atol=1e-6
    )


def test_layer_harness(tmp_path):
    run_layer_test(
        lambda **kw: LSTM(U, return_sequences=True, return_state=True,
                              **kw),
        input_shapes={"sequences": (B, T, D)},
        expected_output_shapes=[(B, T, U), (B, U), (B, U)],
        expected_num_trainable_weights=3,
        masks={"mask": MASK},
        tmp_path=tmp_path,
    )


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="a tf.function traced with unknown shapes")
def test_gradient_traced_with_unknown_length():
    # A tf.data pipeline of padded batches traces the step with the batch
    # and time dimensions unknown (Keras' TensorFlow `scan` needs a single
    # sequence there).
    import tensorflow as tf

    layer = LSTM(U, return_sequences=True, return_state=True)
    x, h0, c0, _ = _data(4)
    layer(x)

    @tf.function(input_signature=[tf.TensorSpec([None, None, D]),
                                  tf.TensorSpec([None, None], tf.bool)])
    def step(x, mask):
        with tf.GradientTape() as tape:
            outputs, h, c = layer(x, mask=mask)
            loss = tf.reduce_sum(outputs ** 2) + tf.reduce_sum(c)
        return loss, tape.gradient(loss, layer.trainable_variables)

    loss, grads = step(x, MASK)
    assert np.isfinite(float(loss))
    assert all(np.all(np.isfinite(to_np(g))) for g in grads)
