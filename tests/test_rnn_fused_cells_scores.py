"""The fused step-wise decoder with the additive score and the GRU cell.

Against the generic loop of `AttentionRNN` (`fused=False`), same weights,
same inputs: outputs, alignments, final states and the gradients of the
inputs, the memory, the initial state and every weight agree, with source
masks (padding in the middle of the batch, a row with nothing to attend),
target padding, mixed precision and a `.keras` round trip; and the fused
loop runs exactly where `fuses` says. Tiny sizes, few cases: each compiles
on JAX.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention.rnn import attention_rnn
from tests.layer_harness import gradients
from tests.layer_harness import to_np
from tests.test_rnn_fused import assert_keras_round_trip
from tests.test_rnn_fused import assert_mixed_close

B, T, S, E, U, D = 3, 4, 5, 3, 6, 4
TARGET_MASK = np.array(
    [[True] * 4, [True, True, False, False], [False, True, True, False]]
)
SOURCE_MASK = np.array(
    [[True] * 5, [True, False, True, True, False], [False] * 5]
)


def _cell(kind, dtype=None):
    if kind == "lstm":
        return keras.layers.LSTMCell(U, dtype=dtype)
    return keras.layers.GRUCell(
        U,
        reset_after=kind != "gru_reset_before",
        use_bias=kind != "gru_no_bias",
        dtype=dtype,
    )


def _decoder(cell="lstm", attention=None, layer_size=5, bias=False,
             activation="tanh", output_attention=True, dtype=None):
    wrapper = keras_attention.AttentionWrapper(
        _cell(cell, dtype),
        attention or keras_attention.AdditiveAttention(4, dtype=dtype),
        attention_layer_size=layer_size,
        attention_use_bias=bias,
        attention_activation=activation,
        output_attention=output_attention,
        dtype=dtype,
    )
    decoder = keras_attention.AttentionRNN(
        wrapper, return_state=True, dtype=dtype
    )
    decoder.build((B, T, E), (B, S, D))
    # Non-trivial scales and biases.
    rng = np.random.default_rng(0)
    for w in decoder.trainable_weights:
        if len(w.shape) <= 1 or "bias" in w.path:
            w.assign(rng.uniform(0.5, 1.5, size=w.shape).astype(w.dtype))
    return decoder


def _data(decoder, seed=0, source=S):
    rng = np.random.default_rng(seed)
    states = len(decoder.wrapper.initial_cell_state(1))
    shapes = [(B, T, E), (B, source, D)] + [(B, U)] * states
    return [rng.normal(size=shape).astype("float32") for shape in shapes]


def _run(decoder, fused, inputs_mask=None, memory_mask=None, source=S):
    data = _data(decoder, source=source)
    weights = [ops.convert_to_tensor(w) for w in decoder.trainable_variables]
    position = ops.convert_to_tensor(
        np.arange(1, T + 1, dtype="float32")[None, :, None]
    )
    frozen = [ops.convert_to_tensor(w) for w in decoder.non_trainable_variables]
    decoder.fused = fused
    states = len(data) - 2

    def fn(x, memory, *values):
        (outputs, alignments, final), _ = decoder.stateless_call(
            list(values[states:]), frozen, x, memory,
            initial_state=list(values[:states]),
            inputs_mask=inputs_mask, memory_mask=memory_mask,
        )
        # Every step gets its own gradient.
        return (outputs * position, alignments * position,
                *final["cell_state"], final["attention"])

    return gradients(fn, *data, *weights)


def _assert_same_as_generic(decoder, inputs_mask=None, memory_mask=None,
                            source=S):
    got_out, got = _run(decoder, True, inputs_mask, memory_mask, source)
    want_out, want = _run(decoder, False, inputs_mask, memory_mask, source)
    names = ["outputs", "alignments", "state", "attention"]
    names[2:3] = [f"state{i}" for i in range(len(got_out) - 3)]
    for name, g, w in zip(names, got_out, want_out):
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-5, atol=1e-5, err_msg=name
        )
    states = len(got_out) - 3
    names = ["inputs", "memory"] + [f"initial_state{i}" for i in range(
        states)] + [w.path for w in decoder.trainable_weights]
    assert len(got) == len(names)
    for name, g, w in zip(names, got, want):
        assert g is not None, name
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-4, atol=1e-4, err_msg=name
        )


CASES = {
    # The G2P example's decoder: LSTM, additive score, tanh layer.
    "lstm_additive": dict(),
    # TFA's normed Bahdanau without bias, its linear attention layer.
    "lstm_additive_normed_linear": dict(
        attention=keras_attention.AdditiveAttention(
            4, use_bias=False, normalize=True
        ),
        activation=None,
        bias=True,
    ),
    "gru_additive_no_layer": dict(cell="gru", layer_size=None),
    "gru_general_cell_output": dict(
        cell="gru",
        attention=keras_attention.MultiplicativeAttention(use_scale=True),
        output_attention=False,
    ),
    "gru_reset_before_additive": dict(cell="gru_reset_before"),
}


def _fresh(case):
    kwargs = dict(CASES[case])
    if "attention" in kwargs:
        attention = kwargs["attention"]
        kwargs["attention"] = attention.__class__.from_config(
            attention.get_config()
        )
    return _decoder(**kwargs)


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_matches_generic(case):
    decoder = _fresh(case)
    assert decoder.fuses()
    _assert_same_as_generic(decoder, TARGET_MASK, SOURCE_MASK)


def test_gru_without_bias_and_a_zero_length_memory():
    decoder = _decoder(cell="gru_no_bias")
    assert decoder.fuses()
    _assert_same_as_generic(decoder, TARGET_MASK, source=0)


@pytest.mark.parametrize(
    "cell,policy", [("lstm", "mixed_float16"), ("gru", "mixed_bfloat16")]
)
def test_mixed_precision_close_to_float32(cell, policy):
    reference = _decoder(cell, bias=True)
    decoder = _decoder(cell, bias=True, dtype=policy)
    decoder.set_weights(reference.get_weights())
    assert decoder.fuses()
    data = [ops.convert_to_tensor(t) for t in _data(reference)]

    assert_mixed_close(decoder, reference, data, TARGET_MASK, SOURCE_MASK)


def test_fused_loop_runs_where_it_applies(monkeypatch):
    calls = []
    real = attention_rnn.fused_decode

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(attention_rnn, "fused_decode", spy)
    fused = [
        (keras.layers.LSTMCell(U), keras_attention.AdditiveAttention(4)),
        (keras.layers.GRUCell(U), keras_attention.AdditiveAttention(
            4, normalize=True)),
        (keras.layers.GRUCell(U, reset_after=False),
         keras_attention.MultiplicativeAttention()),
        (keras.layers.GRUCell(U), keras_attention.LocationSensitiveAttention(
            4, filters=2, kernel_size=3)),
        (keras.layers.LSTMCell(U), keras_attention.LuongMonotonicAttention(U)),
    ]
    x, memory = _data(_decoder())[:2]
    for cell, attention in fused:
        decoder = keras_attention.AttentionRNN(
            keras_attention.AttentionWrapper(cell, attention)
        )
        assert decoder.fuses()
        decoder(x, memory)
    assert len(calls) == len(fused)
    others = [
        (keras.layers.GRUCell(U, activation="relu"),
         keras_attention.AdditiveAttention(4), {}),
        (keras.layers.GRUCell(U, recurrent_activation="hard_sigmoid"),
         keras_attention.MultiplicativeAttention(), {}),
        (keras.layers.GRUCell(U), keras_attention.BahdanauMonotonicAttention(
            4, mode="hard"), {}),
        (keras.layers.GRUCell(U), keras_attention.AdditiveAttention(4),
         {"wiring": "bahdanau"}),
        (keras.layers.LSTMCell(U), keras_attention.AdditiveAttention(4),
         {"input_feeding": False}),
        (keras.layers.SimpleRNNCell(U), keras_attention.AdditiveAttention(4),
         {}),
        (keras.layers.StackedRNNCells([keras.layers.GRUCell(U)]),
         keras_attention.AdditiveAttention(4), {}),
    ]
    for cell, attention, kwargs in others:
        wrapper = keras_attention.AttentionWrapper(cell, attention, **kwargs)
        generic = keras_attention.AttentionRNN(wrapper)
        assert not generic.fuses(), (cell, attention, kwargs)
        with pytest.raises(ValueError, match="fused=True"):
            keras_attention.AttentionRNN(wrapper, fused=True)(x, memory)
    # One call of each kind runs the generic loop (each compiles on JAX).
    generic(x, memory)
    assert len(calls) == len(fused)
    # Dropout of the cell or of the additive attention, in training only.
    for cell, attention in [
        (keras.layers.GRUCell(U, dropout=0.3),
         keras_attention.AdditiveAttention(4)),
        (keras.layers.GRUCell(U, recurrent_dropout=0.3),
         keras_attention.AdditiveAttention(4)),
        (keras.layers.LSTMCell(U),
         keras_attention.AdditiveAttention(4, dropout=0.3)),
    ]:
        decoder = keras_attention.AttentionRNN(
            keras_attention.AttentionWrapper(cell, attention)
        )
        assert decoder.fuses(training=False)
        assert not decoder.fuses(training=True)
    decoder(x, memory, training=True)
    assert len(calls) == len(fused)


def test_keras_round_trip(tmp_path):
    assert_keras_round_trip(
        keras.layers.GRUCell(U),
        keras_attention.AdditiveAttention(4, normalize=True),
        D,
        tmp_path,
    )


def assert_traces_with_unknown_lengths(decoder):
    """In a `tf.function` with `None` batch, target and source lengths
    (`fit` retracing, `model.export`), the fused loop's loss (outputs,
    alignments and any final alignment state) and gradients (inputs,
    memory, initial state, weights) equal the generic loop's run eagerly.
    """
    import tensorflow as tf

    x, memory, *state = (tf.constant(t) for t in _data(decoder))
    variables = decoder.trainable_variables

    def loss_and_grads(x, memory, inputs_mask, memory_mask, *state):
        with tf.GradientTape() as tape:
            tape.watch([x, memory, *state])
            outputs, alignments, final = decoder(
                x, memory, initial_state=list(state),
                inputs_mask=inputs_mask, memory_mask=memory_mask,
            )
            loss = tf.reduce_sum(outputs**2) + tf.reduce_sum(alignments**2)
            for tensor in tf.nest.flatten(final.get("alignment_state", [])):
                loss = loss + tf.reduce_sum(tensor)
        return loss, tape.gradient(loss, [x, memory, *state] + variables)

    traced = tf.function(
        loss_and_grads,
        input_signature=[
            tf.TensorSpec((None, None, E)),
            tf.TensorSpec((None, None, D)),
            tf.TensorSpec((None, None), tf.bool),
            tf.TensorSpec((None, None), tf.bool),
        ] + [tf.TensorSpec((None, U))] * len(state),
    )
    decoder.fused = "auto"
    got = traced(x, memory, TARGET_MASK, SOURCE_MASK, *state)
    decoder.fused = False
    want = loss_and_grads(x, memory, TARGET_MASK, SOURCE_MASK, *state)
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        np.testing.assert_allclose(to_np(g), to_np(w), rtol=1e-4, atol=1e-4)


@pytest.mark.tf_only
def test_gradients_trace_with_unknown_lengths():
    """The fused loops' scans, forward and backward, and the additive
    score's sums over steps."""
    assert_traces_with_unknown_lengths(_decoder(cell="gru"))
