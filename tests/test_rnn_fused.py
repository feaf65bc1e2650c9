"""The fused step-wise decoder against the generic loop of `AttentionRNN`.

Same weights, same inputs: outputs, alignments, final states and the
gradients of the inputs, the memory, the initial states and every weight
agree, with and without source and target masks, on every backend.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention.rnn import attention_rnn
from tests.layer_harness import gradients
from tests.layer_harness import to_np

B, T, S, E, U = 3, 4, 5, 3, 6
TARGET_MASK = np.array(
    [[True] * 4, [True, True, False, False], [False, True, True, False]]
)
SOURCE_MASK = np.array(
    [[True] * 5, [True, True, True, False, False], [False] * 5]
)


def _decoder(attention, layer_size=5, output_attention=True, bias=False,
             memory_dim=U, dtype=None, activation="tanh", **kwargs):
    wrapper = keras_attention.AttentionWrapper(
        keras.layers.LSTMCell(U, dtype=dtype),
        attention,
        attention_layer_size=layer_size,
        attention_use_bias=bias,
        attention_activation=activation,
        output_attention=output_attention,
        dtype=dtype,
    )
    decoder = keras_attention.AttentionRNN(
        wrapper, return_state=True, dtype=dtype, **kwargs
    )
    decoder.build((B, T, E), (B, S, memory_dim))
    # Non-trivial scales and biases.
    rng = np.random.default_rng(0)
    for w in decoder.trainable_weights:
        if len(w.shape) <= 1:
            w.assign(rng.uniform(0.5, 1.5, size=w.shape).astype(w.dtype))
    return decoder


def _data(memory_dim, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=shape).astype("float32")
        for shape in [(B, T, E), (B, S, memory_dim), (B, U), (B, U)]
    ]


def _run(decoder, fused, inputs_mask=None, memory_mask=None, seed=0):
    memory_dim = decoder.wrapper.attention_layer.kernel.shape[0] - U if (
        decoder.wrapper.attention_layer is not None
    ) else decoder.wrapper.cell.kernel.shape[0] - E
    data = _data(memory_dim, seed)
    weights = [ops.convert_to_tensor(w) for w in decoder.trainable_variables]
    position = ops.convert_to_tensor(
        np.arange(1, T + 1, dtype="float32")[None, :, None]
    )
    frozen = [ops.convert_to_tensor(w) for w in decoder.non_trainable_variables]
    decoder.fused = fused

    def fn(x, memory, h0, c0, *values):
        (outputs, alignments, final), _ = decoder.stateless_call(
            list(values), frozen, x, memory, initial_state=[h0, c0],
            inputs_mask=inputs_mask, memory_mask=memory_mask,
        )
        # Every step gets its own gradient.
        return (outputs * position, alignments * position,
                *final["cell_state"], final["attention"])

    return gradients(fn, *data, *weights)


CASES = {
    "dot": dict(attention=keras_attention.DotAttention()),
    "dot_scaled_no_layer": dict(
        attention=keras_attention.DotAttention(
            use_scale=True, scale_by_dim=True
        ),
        layer_size=None,
    ),
    "general_bias": dict(
        attention=keras_attention.MultiplicativeAttention(use_scale=True),
        bias=True,
        memory_dim=4,
    ),
    "general_linear_layer": dict(
        attention=keras_attention.MultiplicativeAttention(use_scale=True),
        activation=None,
        memory_dim=4,
    ),
    "general_cell_output": dict(
        attention=keras_attention.MultiplicativeAttention(),
        output_attention=False,
        memory_dim=4,
    ),
}


@pytest.mark.parametrize(
    "case,masks",
    [("dot", "none"), ("dot", "target")]
    + [(case, "both") for case in sorted(CASES)],
)
def test_fused_matches_generic(case, masks):
    kwargs = dict(CASES[case])
    kwargs["attention"] = kwargs["attention"].__class__.from_config(
        kwargs["attention"].get_config()
    )
    decoder = _decoder(**kwargs)
    assert decoder.fuses()
    inputs_mask = TARGET_MASK if masks in ("target", "both") else None
    memory_mask = SOURCE_MASK if masks in ("source", "both") else None
    got_out, got = _run(decoder, True, inputs_mask, memory_mask)
    want_out, want = _run(decoder, False, inputs_mask, memory_mask)
    names = ["outputs", "alignments", "h", "c", "attention"]
    for name, g, w in zip(names, got_out, want_out):
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-5, atol=1e-5, err_msg=name
        )
    names = ["inputs", "memory", "h0", "c0"] + [
        w.path for w in decoder.trainable_weights
    ]
    assert len(got) == len(names)
    for name, g, w in zip(names, got, want):
        assert g is not None, name
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-4, atol=1e-4, err_msg=name
        )


def test_fused_loop_runs_where_it_applies(monkeypatch):
    calls = []
    real = attention_rnn.fused_decode

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(attention_rnn, "fused_decode", spy)
    x, memory, h0, c0 = _data(U)
    decoder = _decoder(keras_attention.DotAttention(dropout=0.5))
    decoder(x, memory, initial_state=[h0, c0])
    assert len(calls) == 1
    # Attention dropout in training: the generic loop.
    assert not decoder.fuses(training=True)
    decoder(x, memory, initial_state=[h0, c0], training=True)
    assert len(calls) == 1
    decoder.fused = False
    decoder(x, memory, initial_state=[h0, c0])
    assert len(calls) == 1
    others = [
        keras_attention.AttentionWrapper(
            keras.layers.SimpleRNNCell(U), keras_attention.DotAttention()
        ),
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(U),
            keras_attention.DotAttention(),
            wiring="bahdanau",
        ),
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(U),
            keras_attention.DotAttention(),
            input_feeding=False,
        ),
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(U, activation="relu"),
            keras_attention.DotAttention(),
        ),
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(U),
            keras_attention.DotAttention(),
            attention_layer_size=4,
            attention_activation="relu",
        ),
    ]
    for wrapper in others:
        generic = keras_attention.AttentionRNN(wrapper)
        assert not generic.fuses()
        generic(x, memory)
        with pytest.raises(ValueError, match="fused=True"):
            keras_attention.AttentionRNN(wrapper, fused=True)(x, memory)
    assert len(calls) == 1
    dropout_cell = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(U, dropout=0.3),
            keras_attention.DotAttention(),
        )
    )
    assert dropout_cell.fuses(training=False)
    assert not dropout_cell.fuses(training=True)


def test_bad_fused_argument():
    wrapper = keras_attention.AttentionWrapper(
        keras.layers.LSTMCell(U), keras_attention.DotAttention()
    )
    with pytest.raises(ValueError, match="`fused` must be"):
        keras_attention.AttentionRNN(wrapper, fused="yes")


def assert_mixed_close(decoder, reference, data, target_mask, source_mask):
    """The outputs, alignments and their gradients of a mixed-precision
    `decoder` are finite and close to those of the float32 `reference`
    (same weights); `data` is `(x, memory, *initial_state)`."""

    def fn(layer):
        def call(x, memory, *state):
            outputs, alignments, final = layer(
                x, memory, initial_state=list(state),
                inputs_mask=target_mask, memory_mask=source_mask,
            )
            return (ops.cast(outputs, "float32"),
                    ops.cast(alignments, "float32"))

        return call

    got_out, got = gradients(fn(decoder), *data)
    want_out, want = gradients(fn(reference), *data)
    for g, w in zip(list(got_out) + list(got), list(want_out) + list(want)):
        g = to_np(ops.cast(g, "float32"))
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, to_np(w), rtol=0.1, atol=0.1)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_close_to_float32(policy):
    x, memory, h0, c0 = _data(4)
    kwargs = dict(bias=True, memory_dim=4)
    reference = _decoder(keras_attention.MultiplicativeAttention(), **kwargs)
    decoder = _decoder(
        keras_attention.MultiplicativeAttention(dtype=policy),
        dtype=policy,
        **kwargs,
    )
    decoder.set_weights(reference.get_weights())
    assert decoder.fuses()
    data = [ops.convert_to_tensor(t) for t in (x, memory, h0, c0)]

    assert_mixed_close(decoder, reference, data, TARGET_MASK, SOURCE_MASK)


def assert_keras_round_trip(cell, attention, memory_dim, tmp_path):
    """A model around `AttentionRNN(AttentionWrapper(cell, attention))`
    saved to a `.keras` file and loaded: the loaded decoder fuses and gives
    the same outputs. Returns the original decoder."""
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory = keras.layers.Embedding(20, memory_dim, mask_zero=True)(source)
    y = keras.layers.Embedding(20, E, mask_zero=True)(target)
    decoder = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            cell, attention, attention_layer_size=5
        ),
        name="decoder",
    )
    outputs, _ = decoder(y, memory)
    model = keras.Model([source, target], keras.layers.Dense(20)(outputs))
    ids = np.array([[3, 4, 5, 0, 0], [1, 2, 0, 0, 0]], "int32")
    path = str(tmp_path / "fused.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.get_layer("decoder").fused == "auto"
    assert loaded.get_layer("decoder").fuses()
    np.testing.assert_allclose(
        to_np(loaded([ids, ids[:, :4]])),
        to_np(model([ids, ids[:, :4]])),
        atol=1e-6,
    )
    return decoder


def test_keras_round_trip(tmp_path):
    decoder = assert_keras_round_trip(
        keras.layers.LSTMCell(U),
        keras_attention.MultiplicativeAttention(),
        4,
        tmp_path,
    )
    config = decoder.get_config()
    assert config["fused"] == "auto"
    off = keras_attention.AttentionRNN.from_config(
        dict(config, fused=False)
    )
    assert off.fused is False and not off.fuses()
