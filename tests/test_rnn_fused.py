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
             memory_dim=U, dtype=None, **kwargs):
    wrapper = keras_attention.AttentionWrapper(
        keras.layers.LSTMCell(U, dtype=dtype),
        attention,
        attention_layer_size=layer_size,
        attention_use_bias=bias,
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
    "general_cell_output": dict(
        attention=keras_attention.MultiplicativeAttention(),
        output_attention=False,
        memory_dim=4,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("masks", ["none", "target", "source", "both"])
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
