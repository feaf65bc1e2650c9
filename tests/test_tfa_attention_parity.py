"""Our attention layers and AttentionWrapper reproduce TFA 0.23's.

The reference arrays and the weights were written by
tests/parity/make_attention_reference.py with tensorflow-addons 0.23.0
(`LuongAttention`, `BahdanauAttention`, `AttentionWrapper` around an
`LSTMCell`, memory_sequence_length [5, 3]); this test needs no TFA. The
weight conventions (written down in docs/migrating_from_tfa.md):

- `LuongAttention.memory_layer` kernel `(D, units)` is the transpose of
  our `MultiplicativeAttention.kernel` `(Dq, Dk)`; `attention_g` (scale)
  is our `scale`.
- `BahdanauAttention`'s `memory_layer`, `query_layer`, `attention_v`,
  `attention_g`, `attention_b` are our `key_kernel`, `query_kernel`,
  `score_kernel`, `score_gain`, `bias`; TFA has the bias only with
  `normalize=True`, so `use_bias=normalize`.
- TFA's attention layer multiplies `[cell_output; context]`, our
  `AttentionalOutput` `[context; cell_output]`: the kernel's two row blocks
  swap.
"""

import os

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention

REF = np.load(
    os.path.join(os.path.dirname(__file__), "parity", "attention_reference.npz")
)
MEMORY = REF["memory"]
BATCH, SOURCE, MEMORY_DIM = MEMORY.shape
UNITS = REF["query"].shape[-1]
INPUT_DIM = REF["inputs"].shape[-1]
MASK = np.arange(SOURCE)[None, :] < REF["lengths"][:, None]
ATOL = 1e-5

# name -> (kind, option), as in the generating script.
MECHANISMS = {
    "luong": ("luong", False),
    "luong_scaled": ("luong", True),
    "bahdanau": ("bahdanau", False),
    "bahdanau_normed": ("bahdanau", True),
}
# name -> (mechanism, attention_layer_size, output_attention).
WRAPPERS = {
    "wrap_luong": ("luong_scaled", 5, True),
    "wrap_luong_cell_out": ("luong", 5, False),
    "wrap_bahdanau": ("bahdanau_normed", None, True),
    "wrap_bahdanau_cell_out": ("bahdanau", 3, False),
}


def np_(x):
    return ops.convert_to_numpy(x)


def attention_from_tfa(name, kind, option):
    """Our layer with the weights TFA's mechanism had under `name`."""
    if kind == "luong":
        layer = keras_attention.MultiplicativeAttention(use_scale=option)
    else:
        layer = keras_attention.AdditiveAttention(
            UNITS, use_bias=option, normalize=option
        )
    layer.build((BATCH, UNITS), MEMORY.shape)
    if kind == "luong":
        layer.kernel.assign(REF[f"{name}/memory_layer"].T)
        if option:
            layer.scale.assign(REF[f"{name}/g"])
    else:
        layer.key_kernel.assign(REF[f"{name}/memory_layer"])
        layer.query_kernel.assign(REF[f"{name}/query_layer"])
        layer.score_kernel.assign(REF[f"{name}/v"])
        if option:
            layer.score_gain.assign(REF[f"{name}/g"])
            layer.bias.assign(REF[f"{name}/b"])
    return layer


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_alignments_match_tfa(name):
    layer = attention_from_tfa(name, *MECHANISMS[name])
    context, weights = layer(
        ops.convert_to_tensor(REF["query"]),
        ops.convert_to_tensor(MEMORY),
        value_mask=ops.convert_to_tensor(MASK),
    )
    expected = REF[f"{name}/alignments"]
    np.testing.assert_allclose(np_(weights), expected, atol=ATOL)
    assert np.all(expected[~MASK] == 0.0)
    np.testing.assert_allclose(
        np_(context), np.einsum("bs,bsd->bd", expected, MEMORY), atol=ATOL
    )


def wrapper_from_tfa(name, attention_activation=None):
    mech_name, layer_size, output_attention = WRAPPERS[name]
    wrapper = keras_attention.AttentionWrapper(
        keras.layers.LSTMCell(UNITS),
        attention_from_tfa(name, *MECHANISMS[mech_name]),
        attention_layer_size=layer_size,
        attention_activation=attention_activation,
        attention_use_bias=False,
        output_attention=output_attention,
        wiring="luong",
    )
    wrapper.build((BATCH, INPUT_DIM), MEMORY.shape)
    wrapper.cell.kernel.assign(REF[f"{name}/kernel"])
    wrapper.cell.recurrent_kernel.assign(REF[f"{name}/recurrent_kernel"])
    wrapper.cell.bias.assign(REF[f"{name}/bias"])
    if layer_size is not None:
        tfa_kernel = REF[f"{name}/attention_layer"]  # rows [cell_output; ctx]
        wrapper.attention_layer.kernel.assign(
            np.concatenate([tfa_kernel[UNITS:], tfa_kernel[:UNITS]])
        )
    state = wrapper.get_initial_state(
        ops.convert_to_tensor(MEMORY),
        ops.convert_to_tensor(MASK),
        cell_state=[
            ops.convert_to_tensor(REF["h0"]),
            ops.convert_to_tensor(REF["c0"]),
        ],
    )
    return wrapper, state


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_attention_wrapper_steps_match_tfa(name):
    wrapper, state = wrapper_from_tfa(name)
    for t in range(REF["inputs"].shape[0]):
        output, state, weights = wrapper.step(
            ops.convert_to_tensor(REF["inputs"][t]), state
        )
        np.testing.assert_allclose(
            np_(output), REF[f"{name}/outputs"][t], atol=ATOL
        )
        np.testing.assert_allclose(
            np_(state["attention"]), REF[f"{name}/attention"][t], atol=ATOL
        )
        np.testing.assert_allclose(
            np_(weights), REF[f"{name}/alignment_history"][t], atol=ATOL
        )
        h, c = state["cell_state"]
        np.testing.assert_allclose(np_(h), REF[f"{name}/h"][t], atol=ATOL)
        np.testing.assert_allclose(np_(c), REF[f"{name}/c"][t], atol=ATOL)
    np.testing.assert_allclose(
        np_(weights), REF[f"{name}/alignments"], atol=ATOL
    )


def test_default_tanh_attention_layer_differs_from_tfa():
    """Our default `attention_activation="tanh"` (Luong's eq. 5) is not
    TFA's linear layer: on the first step (same cell input, zero previous
    attention) our attention vector is tanh of TFA's; the later steps feed
    it back, so they differ further."""
    wrapper, state = wrapper_from_tfa("wrap_luong", "tanh")
    output, state, _ = wrapper.step(
        ops.convert_to_tensor(REF["inputs"][0]), state
    )
    tfa_first = REF["wrap_luong/attention"][0]
    np.testing.assert_allclose(np_(output), np.tanh(tfa_first), atol=ATOL)
    assert np.max(np.abs(np.tanh(tfa_first) - tfa_first)) > 1e-3
    output, state, _ = wrapper.step(
        ops.convert_to_tensor(REF["inputs"][1]), state
    )
    assert not np.allclose(
        np_(output), np.tanh(REF["wrap_luong/attention"][1]), atol=ATOL
    )


def test_unnormalized_bahdanau_bias_is_ours_only():
    """TFA's unnormalized BahdanauAttention has no bias; ours has one by
    default (`use_bias=True`): a non-zero bias changes the alignments, so
    pass `use_bias=False` to reproduce TFA."""
    layer = keras_attention.AdditiveAttention(UNITS)
    layer.build((BATCH, UNITS), MEMORY.shape)
    layer.key_kernel.assign(REF["bahdanau/memory_layer"])
    layer.query_kernel.assign(REF["bahdanau/query_layer"])
    layer.score_kernel.assign(REF["bahdanau/v"])
    args = (
        ops.convert_to_tensor(REF["query"]),
        ops.convert_to_tensor(MEMORY),
    )
    mask = ops.convert_to_tensor(MASK)
    _, weights = layer(*args, value_mask=mask)  # zero bias: TFA's
    np.testing.assert_allclose(
        np_(weights), REF["bahdanau/alignments"], atol=ATOL
    )
    layer.bias.assign(np.full((UNITS,), 0.5, np.float32))
    _, weights = layer(*args, value_mask=mask)
    assert not np.allclose(
        np_(weights), REF["bahdanau/alignments"], atol=1e-3
    )
