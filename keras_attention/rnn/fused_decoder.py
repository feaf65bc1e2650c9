"""The fused step-wise decoder: `AttentionRNN`'s loop over an LSTM cell
with Luong attention and input feeding, with a hand-written backward pass.

Autodiff of the generic loop differentiates a Keras cell, the attention
and the attentional layer at every step, weight gradients included. This
loop computes the same step (`[x_t; a_{t-1}]` through the LSTM, a dot
score of `h_t` against the keys, the masked softmax, the context, `a_t =
tanh(W_c [c_t; h_t] + b)`) and keeps what its backward pass needs; the
backward loop computes only the gradient that flows to the previous step,
and the gradients of the recurrent kernel, of `W_c`, of the memory and of
the keys are single matmuls over all steps after it. The input projection
`x_t W_x + b` of all steps and the key projection are computed before the
loop (their gradients by autodiff, one matmul each). Same weights, same
results and masks as the generic loop; `keras.ops` only.
"""

from typing import Callable
from typing import Optional

import keras
from keras import ops
from keras import tree

from keras_attention.layers.dot_attention import DotAttention
from keras_attention.layers.multiplicative_attention import (
    MultiplicativeAttention,
)
from keras_attention.ops.masking import masked_softmax
from keras_attention.rnn.rnn_cells import can_project_inputs
from keras_attention.rnn.rnn_cells import project_inputs
from keras_attention.typing import Tensor

# Scores linear in the query (`e = q . (s K)`), whose keys the fused loop
# takes once scaled.
FUSED_ATTENTIONS = (DotAttention, MultiplicativeAttention)


def fuses(wrapper: keras.layers.Layer, training: Optional[bool]) -> bool:
    """Whether `fused_decode` can run `wrapper` (in a call with `training`).

    It needs a plain `keras.layers.LSTMCell` with its default activations
    and no dropout in the call, a `DotAttention` or
    `MultiplicativeAttention` without dropout in the call, the Luong wiring
    with input feeding, and no attentional layer or one with `tanh` or no
    activation (TFA's linear attention layer).
    """
    cell = wrapper.cell
    attention = wrapper.attention
    layer = wrapper.attention_layer
    return (
        can_project_inputs(cell, bool(training))
        and cell.activation is keras.activations.tanh
        and cell.recurrent_activation is keras.activations.sigmoid
        and type(attention) in FUSED_ATTENTIONS
        and not (training and attention.dropout > 0)
        and wrapper.feeds_attention
        and (layer is None or layer.activation in _LAYER_ACTIVATIONS)
    )


# The attentional layer's activations the fused loop knows.
_LAYER_ACTIVATIONS = (keras.activations.tanh, keras.activations.linear)


def _scaled_keys(attention: keras.layers.Layer, keys: Tensor) -> Tensor:
    """`s K` such that `attention.score(q, K) = q . (s K)`, `(B, S, Dk)`.

    The scores of `FUSED_ATTENTIONS` are `s q . k`: `s` is the score of
    a one-feature query and key of 1, so that every scale the layer has
    (learned, `1 / sqrt(Dk)`) is the layer's own, with its gradient."""
    one = ops.ones((1, 1, 1), dtype=keys.dtype)
    return keys * ops.reshape(attention.score(one, one), ())


def fused_decode(
    wrapper: keras.layers.Layer,
    inputs: Tensor,
    state: dict,
    inputs_mask: Optional[Tensor],
) -> tuple:
    """Runs a built wrapper (`fuses(wrapper, training)`) over all steps.

    Args:
        wrapper: The `AttentionWrapper`.
        inputs: `(batch_size, T, E)` target inputs.
        state: `wrapper.get_initial_state(...)`.
        inputs_mask: Optional boolean `(batch_size, T)`.

    Returns:
        `(outputs, alignments, final_state)` as `AttentionRNN` returns
        them, in the wrapper's compute dtype.
    """
    cell = wrapper.cell
    layer = wrapper.attention_layer
    dtype = cell.compute_dtype
    units = cell.units
    xw = ops.transpose(project_inputs(cell, inputs), (1, 0, 2))
    kernel = ops.cast(cell.kernel, dtype)
    recurrent = ops.concatenate(
        [
            ops.cast(cell.recurrent_kernel, dtype),
            kernel[inputs.shape[-1] :],
        ],
        axis=0,
    )
    h0, c0 = (ops.cast(t, dtype) for t in tree.flatten(state["cell_state"]))
    a0 = ops.cast(state["attention"], dtype)
    memory = ops.cast(state["memory"], dtype)
    keys = _scaled_keys(wrapper.attention, state["keys"])
    memory_mask = ops.cast(state["memory_mask"], dtype)
    if layer is not None:
        w_c = ops.cast(layer.kernel, dtype)
        b_c = ops.zeros((layer.units,), dtype)
        if layer.bias is not None:
            b_c = ops.cast(layer.bias, dtype)
    else:
        w_c, b_c = ops.zeros((1, 1), dtype), ops.zeros((1,), dtype)
    masked = inputs_mask is not None
    if masked:
        keep = ops.cast(ops.expand_dims(ops.transpose(inputs_mask), -1), dtype)
    else:
        keep = ops.ones((ops.shape(xw)[0], ops.shape(xw)[1], 1), dtype)
    loop = _make_loop(
        units,
        layer is not None,
        wrapper.output_attention,
        masked,
        layer is not None and layer.activation is keras.activations.tanh,
    )
    packed = loop(xw, h0, c0, a0, recurrent, memory, keys, memory_mask,
                  w_c, b_c, keep)
    size = wrapper.output_size(memory.shape[-1])
    a_size = a0.shape[-1]
    ends = [size, size + units, size + 2 * units, size + 2 * units + a_size]
    outputs = ops.transpose(packed[..., : ends[0]], (1, 0, 2))
    alignments = ops.transpose(packed[..., ends[3] :], (1, 0, 2))
    last = packed[-1]
    final_state = {
        "cell_state": tree.pack_sequence_as(
            state["cell_state"],
            [last[:, ends[0] : ends[1]], last[:, ends[1] : ends[2]]],
        ),
        "attention": ops.cast(last[:, ends[2] : ends[3]], wrapper.compute_dtype),
    }
    return outputs, alignments, final_state


def _make_loop(
    units: int,
    has_layer: bool,
    output_attention: bool,
    masked: bool,
    tanh: bool,
) -> Callable:
    """The loop with its gradient, for one configuration.

    Inputs, time-major: `xw` `(T, B, 4U)`, the initial `h0`, `c0`, `a0`,
    `recurrent` `[U; W_a]` `(U + A, 4U)` (the recurrent kernel and the
    rows of the kernel that take `a_{t-1}`), `memory` `(B, S, D)`, `keys`
    `(B, S, U)` (scaled), `memory_mask` `(B, S)` 0/1, `w_c`, `b_c` and
    `keep` `(T, B, 1)` 0/1. `tanh`: whether the attentional layer has
    `tanh` (else no activation). Output `(T, B, O + 2U + A + S)`: per step the
    output, `h`, `c`, `a` and the weights.
    """

    def forward(*loop_inputs: Tensor) -> tuple:
        (xw, h0, c0, a0, recurrent, memory, keys, memory_mask, w_c, b_c,
         keep) = loop_inputs
        keys_t = ops.transpose(keys, (0, 2, 1))
        mask = memory_mask > 0.5
        sequence = ops.concatenate([xw, keep], axis=-1) if masked else xw

        def step(carry: tuple, inputs: Tensor):
            h, c, a = carry[:3]
            x_t = inputs[:, : 4 * units]
            z = x_t + ops.matmul(ops.concatenate([h, a], axis=-1), recurrent)
            z_i, z_f, z_g, z_o = ops.split(z, 4, axis=-1)
            i, f, o = ops.sigmoid(z_i), ops.sigmoid(z_f), ops.sigmoid(z_o)
            g = ops.tanh(z_g)
            c_new = f * c + i * g
            h_new = o * ops.tanh(c_new)
            scores = ops.squeeze(
                ops.matmul(
                    ops.expand_dims(ops.cast(h_new, keys.dtype), 1), keys_t
                ),
                1,
            )
            alpha = ops.cast(masked_softmax(scores, mask), h.dtype)
            context = ops.squeeze(
                ops.matmul(ops.expand_dims(alpha, 1), memory), 1
            )
            attn = context
            if has_layer:
                attn = (
                    ops.matmul(ops.concatenate([context, h_new], -1), w_c)
                    + b_c
                )
                if tanh:
                    attn = ops.tanh(attn)
            out = attn if output_attention else h_new
            h_s, c_s, a_s = h_new, c_new, attn
            if masked:
                keep_t = inputs[:, -1:] > 0.5
                h_s = ops.where(keep_t, h_new, h)
                c_s = ops.where(keep_t, c_new, c)
                a_s = ops.where(keep_t, attn, a)
                out = ops.where(keep_t, out, 0)
                alpha = ops.where(keep_t, alpha, 0)
            gates = ops.concatenate([i, f, g, o], axis=-1)
            carry = (h_s, c_s, a_s, gates, c_new, h_new, context, attn,
                     out, alpha)
            return carry, carry

        batch = ops.shape(h0)[0]
        start = (
            h0, c0, a0, ops.zeros((batch, 4 * units), h0.dtype),
            ops.zeros_like(c0), ops.zeros_like(h0),
            ops.zeros((batch, memory.shape[-1]), h0.dtype),
            ops.zeros_like(a0),
            ops.zeros_like(a0) if output_attention else ops.zeros_like(h0),
            ops.zeros_like(memory_mask),
        )
        _, stacked = ops.scan(step, start, sequence)
        return stacked

    @ops.custom_gradient
    def loop(
        xw: Tensor, h0: Tensor, c0: Tensor, a0: Tensor, recurrent: Tensor,
        memory: Tensor, keys: Tensor, memory_mask: Tensor, w_c: Tensor,
        b_c: Tensor, keep: Tensor,
    ) -> tuple:
        loop_inputs = (xw, h0, c0, a0, recurrent, memory, keys, memory_mask,
                       w_c, b_c, keep)
        stacked = forward(*loop_inputs)
        hs, cs, as_, gates, c_new, h_new, context, attn, out, alpha = stacked
        packed = ops.concatenate([out, hs, cs, as_, alpha], axis=-1)

        def grad(*args: Tensor, upstream: Optional[Tensor] = None):
            if upstream is None:
                (upstream,) = args
            return _backward(
                upstream, stacked, loop_inputs,
                units=units, has_layer=has_layer,
                output_attention=output_attention, masked=masked, tanh=tanh,
            )

        return packed, grad

    return loop


def _backward(
    upstream: Tensor,
    stacked: tuple,
    loop_inputs: tuple,
    units: int,
    has_layer: bool,
    output_attention: bool,
    masked: bool,
    tanh: bool,
) -> tuple:
    """The gradients of the loop's inputs, given `upstream`, the gradient
    of its packed output, and `stacked`, what the forward loop kept. See
    `_make_loop` for the layout.

    A step is then a few ops and four matmuls, the gradient flowing back
    through the attentional layer, the context, the score and the LSTM; a
    padded step (`keep` 0) passes the gradient of the state through."""
    (_, h0, c0, a0, recurrent, memory, keys, memory_mask, w_c, b_c,
     keep) = loop_inputs
    hs, cs, as_, gates, c_new, h_new, context, attn, _, alpha = stacked
    size = out_size = attn.shape[-1] if output_attention else units
    a_size = a0.shape[-1]
    g_out = upstream[..., :size]
    g_h = upstream[..., size : size + units]
    g_c = upstream[..., size + units : size + 2 * units]
    g_a = upstream[..., size + 2 * units : size + 2 * units + a_size]
    g_alpha = upstream[..., size + 2 * units + a_size :]
    if masked:
        g_out = g_out * keep
        g_alpha = g_alpha * ops.cast(keep, g_alpha.dtype)
    # What does not depend on the gradient flowing back, for all steps.
    i, f, g, o = ops.split(gates, 4, axis=-1)
    c_prev = ops.concatenate([c0[None], cs[:-1]], axis=0)
    tanh_c = ops.tanh(c_new)
    p = o * (1 - tanh_c * tanh_c)
    q = ops.concatenate(
        [g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g),
         tanh_c * o * (1 - o)],
        axis=-1,
    )
    attn_d = 1 - attn * attn if tanh else ops.ones_like(attn[..., :1])
    parts = [g_out, g_h, g_c, g_a, p, q, f, attn_d]
    widths = [out_size, units, units, a_size, units, 4 * units, units,
              attn_d.shape[-1]]
    if masked:
        parts.append(keep)
        widths.append(1)
    ends = []
    total = 0
    for w in widths:
        total += w
        ends.append(total)
    static = ops.concatenate(parts, axis=-1)
    sequence = ops.concatenate(
        [static, ops.cast(g_alpha, static.dtype), alpha], axis=-1
    )
    source_len = ops.shape(alpha)[-1]
    memory_t = ops.transpose(memory, (0, 2, 1))
    recurrent_t = ops.transpose(recurrent)
    w_c_t = ops.transpose(w_c)
    c_size = memory.shape[-1]

    def step(carry: tuple, inputs: Tensor):
        dh, dc, da = carry[:3]
        pieces = [inputs[:, a:b] for a, b in zip([0] + ends[:-1], ends)]
        go, gh, gc, ga, p_t, q_t, f_t, attn_d_t = pieces[:8]
        ga_t = inputs[:, total : total + source_len]
        alpha_t = inputs[:, total + source_len :]
        d_a_state = da + ga
        d_h_state = dh + gh
        d_c_state = dc + gc
        if masked:
            k = pieces[8]
            d_attn = k * d_a_state
            d_h_new = k * d_h_state
            d_c_new = k * d_c_state
        else:
            d_attn, d_h_new, d_c_new = d_a_state, d_h_state, d_c_state
        if output_attention:
            d_attn = d_attn + go
        else:
            d_h_new = d_h_new + go
        if has_layer:
            d_pre = d_attn * attn_d_t if tanh else d_attn
            d_cat = ops.matmul(d_pre, w_c_t)
            d_ctx, d_h_attn = d_cat[:, :c_size], d_cat[:, c_size:]
            d_h_new = d_h_new + d_h_attn
        else:
            d_pre = d_attn
            d_ctx = d_attn
        d_alpha = ops.squeeze(
            ops.matmul(ops.expand_dims(d_ctx, 1), memory_t), 1
        )
        d_alpha = ops.cast(d_alpha + ga_t, "float32")
        alpha32 = ops.cast(alpha_t, "float32")
        d_e = alpha32 * (
            d_alpha - ops.sum(alpha32 * d_alpha, axis=-1, keepdims=True)
        )
        d_e = ops.cast(d_e, keys.dtype)
        d_h_new = d_h_new + ops.cast(
            ops.squeeze(ops.matmul(ops.expand_dims(d_e, 1), keys), 1),
            d_h_new.dtype,
        )
        d_c_new = d_c_new + d_h_new * p_t
        d_z = ops.concatenate([d_c_new, d_c_new, d_c_new, d_h_new], -1) * q_t
        d_prev = ops.matmul(d_z, recurrent_t)
        dh_prev, da_prev = d_prev[:, :units], d_prev[:, units:]
        dc_prev = d_c_new * f_t
        if masked:
            dh_prev = dh_prev + (1 - k) * d_h_state
            dc_prev = dc_prev + (1 - k) * d_c_state
            da_prev = da_prev + (1 - k) * d_a_state
        carry = (dh_prev, dc_prev, da_prev, d_z, d_pre, d_ctx, d_e)
        return carry, carry

    batch = ops.shape(h0)[0]
    start = (
        ops.zeros_like(h0), ops.zeros_like(c0), ops.zeros_like(a0),
        ops.zeros((batch, 4 * units), h0.dtype),
        ops.zeros_like(attn[0]), ops.zeros_like(context[0]),
        ops.zeros_like(ops.cast(alpha[0], keys.dtype)),
    )
    (dh0, dc0, da0, _, _, _, _), (_, _, _, d_z, d_pre, d_ctx, d_e) = ops.scan(
        step, start, sequence, reverse=True
    )
    # The weight gradients of all steps, one matmul each.
    h_prev = ops.concatenate([h0[None], hs[:-1]], axis=0)
    a_prev = ops.concatenate([a0[None], as_[:-1]], axis=0)
    prev = ops.concatenate([h_prev, a_prev], axis=-1)
    d_recurrent = ops.matmul(
        ops.transpose(ops.reshape(prev, (-1, prev.shape[-1]))),
        ops.reshape(d_z, (-1, 4 * units)),
    )
    if has_layer:
        cat = ops.concatenate([context, h_new], axis=-1)
        d_w_c = ops.matmul(
            ops.transpose(ops.reshape(cat, (-1, cat.shape[-1]))),
            ops.reshape(d_pre, (-1, d_pre.shape[-1])),
        )
        d_b_c = ops.sum(d_pre, axis=(0, 1))
    else:
        d_w_c, d_b_c = ops.zeros_like(w_c), ops.zeros_like(b_c)
    # alpha: (T, B, S) -> (B, S, T); d_ctx: (T, B, D) -> (B, T, D).
    d_memory = ops.matmul(
        ops.transpose(alpha, (1, 2, 0)), ops.transpose(d_ctx, (1, 0, 2))
    )
    d_keys = ops.matmul(
        ops.transpose(d_e, (1, 2, 0)),
        ops.transpose(ops.cast(h_new, keys.dtype), (1, 0, 2)),
    )
    return (
        d_z, dh0, dc0, da0, d_recurrent, d_memory, d_keys,
        ops.zeros_like(memory_mask), d_w_c, d_b_c, ops.zeros_like(keep),
    )
