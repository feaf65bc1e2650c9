"""The fused step-wise decoder: `AttentionRNN`'s loop over an LSTM or GRU
cell with Luong attention and input feeding, with a hand-written backward
pass.

Autodiff of the generic loop differentiates a Keras cell, the attention
and the attentional layer at every step, weight gradients included. This
loop computes the same step (`[x_t; a_{t-1}]` through the cell, the score
of `h_t` against the keys, the masked softmax, the context, `a_t =
tanh(W_c [c_t; h_t] + b)`) and keeps what its backward pass needs; the
backward loop computes only the gradient that flows to the previous step,
and the gradients of the recurrent kernel, of `W_c`, of the memory and of
the score's weights and keys are single matmuls or reductions over all
steps after it. The input projection of all steps and the key projection
are computed before the loop (their gradients by autodiff, one matmul
each). Same weights, same results and masks as the generic loop;
`keras.ops` only.

The cells' maths is in `cells` (`FusedLSTM`, `FusedGRU`), the scores' in
`scores` (`FusedDot`, `FusedAdditive`), `location` (`FusedLocation`) and
`monotonic` (`FusedMonotonic`; those two carry a state from step to
step), which of them applies in `applies`, the scans and the packing of
the outputs in `packing`; this module holds the loop, the attention and
the attentional layer around them.
"""

from typing import Callable
from typing import Optional

import keras
from keras import ops
from keras import tree

from keras_attention.rnn.fused_decoder.applies import fused_score
from keras_attention.rnn.fused_decoder.cells import fused_cell
from keras_attention.rnn.fused_decoder.packing import add
from keras_attention.rnn.fused_decoder.packing import join_sources
from keras_attention.rnn.fused_decoder.packing import scan
from keras_attention.rnn.fused_decoder.packing import split_sources
from keras_attention.rnn.fused_decoder.packing import unpack
from keras_attention.typing import Tensor

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
    cell = fused_cell(wrapper.cell, False)
    score = fused_score(wrapper.attention, False)
    layer = wrapper.attention_layer
    dtype = wrapper.cell.compute_dtype
    xw = ops.transpose(cell.project(inputs), (1, 0, 2))
    cell_weights = cell.weights(inputs.shape[-1])
    state0 = tuple(
        ops.cast(t, dtype) for t in tree.flatten(state["cell_state"])
    )
    a0 = ops.cast(state["attention"], dtype)
    memory = ops.cast(state["memory"], dtype)
    memory_mask = ops.cast(state["memory_mask"], dtype)
    score_inputs = score.inputs(state)
    score_state0 = score.initial_state(state)
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
        cell,
        score,
        (len(cell_weights), len(score_inputs), len(score_state0)),
        layer is not None,
        wrapper.output_attention,
        masked,
        layer is not None and layer.activation is keras.activations.tanh,
    )
    packed = loop(xw, keep, a0, memory, memory_mask, w_c, b_c, *state0,
                  *cell_weights, *score_inputs, *score_state0)
    size = wrapper.output_size(memory.shape[-1])
    widths = [size] + [t.shape[-1] for t in state0] + [a0.shape[-1]]
    out, *states, a_s, rest = unpack(packed, widths)
    alpha, *score_states = split_sources(rest, 1 + len(score_state0))
    final_state = {
        "cell_state": tree.pack_sequence_as(
            state["cell_state"], [ops.cast(s[-1], dtype) for s in states]
        ),
        "attention": ops.cast(a_s[-1], wrapper.compute_dtype),
    }
    if score_state0:
        final_state["alignment_state"] = score.final_state(
            [s[-1] for s in score_states]
        )
    out = ops.cast(out, dtype)
    return (ops.transpose(out, (1, 0, 2)), ops.transpose(alpha, (1, 0, 2)),
            final_state)


def _make_loop(
    cell: object,
    score: object,
    counts: tuple,
    has_layer: bool,
    output_attention: bool,
    masked: bool,
    tanh: bool,
) -> Callable:
    """The loop with its gradient, for one configuration.

    Inputs, time-major: `xw` (`cell.project` of the inputs, `(T, B, X)`),
    `keep` `(T, B, 1)` 0/1, the initial `a0`, `memory` `(B, S, D)`,
    `memory_mask` `(B, S)` 0/1, `w_c`, `b_c`, then the initial cell state
    (`cell.state_count` tensors), the cell's `weights`, the score's
    `inputs` and its initial state (`counts`: how many of the last three).
    `tanh`: whether the attentional layer has `tanh` (else no activation).
    Output `(T, B, O + N + A + S (1 + M))`: per step the output, the cell
    state (`N` features), `a`, then the weights and the score's `M` states
    (`_join_sources`); in the states' dtype where there are any.
    """
    n = cell.state_count
    n_cell, n_score, n_states = counts

    def split(args: tuple) -> tuple:
        fixed, rest = args[:7], args[7:]
        end = n + n_cell + n_score
        return (fixed, rest[:n], rest[n : n + n_cell],
                rest[n + n_cell : end], rest[end : end + n_states])

    def forward(*args: Tensor) -> tuple:
        fixed, state0, cell_w, score_in, score_state0 = split(args)
        xw, keep, a0, memory, memory_mask, w_c, b_c = fixed
        mask = memory_mask > 0.5
        constants = score.prepare(score_in)

        def step(carry: tuple, inputs: tuple):
            x_t, keep_t = inputs
            state, a = carry[:n], carry[n]
            score_state = carry[len(carry) - n_states :]
            h_new, new_state, saved = cell.step(x_t, state, a, cell_w)
            scores, score_saved = score.step(
                h_new, score_in, constants, score_state
            )
            weights = score.weights(scores, mask, score_state, score_in)
            new_score_state = score.advance(weights, score_state)
            alpha = ops.cast(weights, h_new.dtype)
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
            kept, a_s = new_state, attn
            if masked:
                k = keep_t > 0.5
                kept = tuple(
                    ops.where(k, new, old) for new, old in zip(new_state, state)
                )
                a_s = ops.where(k, attn, a)
                out = ops.where(k, out, 0)
                alpha = ops.where(k, alpha, 0)
                new_score_state = tuple(
                    ops.where(k, new, old)
                    for new, old in zip(new_score_state, score_state)
                )
            carry = (*kept, a_s, saved, h_new, context, attn, out, alpha,
                     *score_saved, *new_score_state)
            return carry, carry

        batch = ops.shape(a0)[0]
        h0 = state0[0]
        start = (
            *state0, a0, ops.zeros((batch, cell.saved_width), h0.dtype),
            ops.zeros_like(h0), ops.zeros((batch, memory.shape[-1]), h0.dtype),
            ops.zeros_like(a0),
            ops.zeros_like(a0) if output_attention else ops.zeros_like(h0),
            ops.zeros_like(memory_mask),
            *score.saved_like(score_in, batch),
            *score_state0,
        )
        _, stacked = scan(step, start, (xw, keep))
        return stacked

    @ops.custom_gradient
    def loop(*args: Tensor) -> tuple:
        stacked = forward(*args)
        states, (a_s, _, _, _, _, out, alpha) = stacked[:n], stacked[n : n + 7]
        score_states = stacked[len(stacked) - n_states :]
        parts = [out, *states, a_s]
        if n_states:
            # The states keep their precision (float32 under mixed
            # precision) in the packed output.
            parts = [ops.cast(p, score_states[0].dtype) for p in parts]
            alpha = ops.cast(alpha, score_states[0].dtype)
        packed = ops.concatenate(
            [*parts, join_sources([alpha, *score_states])], axis=-1
        )

        def grad(*grad_args: Tensor, upstream: Optional[Tensor] = None):
            if upstream is None:
                (upstream,) = grad_args
            return _backward(
                upstream, stacked, split(args), cell, score,
                has_layer=has_layer, output_attention=output_attention,
                masked=masked, tanh=tanh,
            )

        return packed, grad

    return loop


def _backward(
    upstream: Tensor,
    stacked: tuple,
    args: tuple,
    cell: object,
    score: object,
    has_layer: bool,
    output_attention: bool,
    masked: bool,
    tanh: bool,
) -> tuple:
    """The gradients of the loop's inputs, given `upstream`, the gradient
    of its packed output, and `stacked`, what the forward loop kept. See
    `_make_loop` for the layout.

    A step is then a few ops and a few matmuls, the gradient flowing back
    through the attentional layer, the context, the score and the cell; a
    padded step (`keep` 0) passes the gradient of the state through."""
    fixed, state0, cell_w, score_in, score_state0 = args
    _, keep, a0, memory, memory_mask, w_c, b_c = fixed
    n = len(state0)
    n_states = len(score_state0)
    states = stacked[:n]
    a_s, saved, h_new, context, attn, out, alpha = stacked[n : n + 7]
    score_saved = stacked[n + 7 : len(stacked) - n_states]
    score_states = stacked[len(stacked) - n_states :]
    # The gradients of each packed output.
    widths = [out.shape[-1]] + [t.shape[-1] for t in state0] + [a0.shape[-1]]
    g_out, *g_states, g_a, g_rest = unpack(upstream, widths)
    g_alpha, *g_score_states = split_sources(g_rest, 1 + n_states)
    g_out = ops.cast(g_out, out.dtype)
    g_states = [ops.cast(g, s.dtype) for g, s in zip(g_states, states)]
    g_a = ops.cast(g_a, a_s.dtype)
    g_alpha = ops.cast(g_alpha, alpha.dtype)
    if masked:
        g_out = g_out * keep
        g_alpha = g_alpha * ops.cast(keep, g_alpha.dtype)
    # What does not depend on the gradient flowing back, for all steps.
    prev_states = tuple(
        ops.concatenate([s0[None], s[:-1]], axis=0)
        for s0, s in zip(state0, states)
    )
    prev_a = ops.concatenate([a0[None], a_s[:-1]], axis=0)
    prev_score_states = tuple(
        ops.concatenate([s0[None], s[:-1]], axis=0)
        for s0, s in zip(score_state0, score_states)
    )
    cell_static = cell.backward_static(saved, prev_states)
    attn_d = 1 - attn * attn if tanh else ops.ones_like(attn[..., :1])
    # Per step, one tensor of the static-width parts (slices are cheap).
    parts = [g_out, *g_states, g_a, cell_static, attn_d, keep]
    cuts = [0]
    for part in parts:
        cuts.append(cuts[-1] + part.shape[-1])
    static = ops.concatenate(parts, axis=-1)
    memory_t = ops.transpose(memory, (0, 2, 1))
    cell_w_t = cell.transposed(cell_w)
    w_c_t = ops.transpose(w_c)
    c_size = memory.shape[-1]
    score_dtype = score_in[0].dtype
    constants = score.prepare(score_in)
    n_saved = len(score_saved)

    def step(carry: tuple, inputs: tuple):
        d_state, da = carry[:n], carry[n]
        saved_t = inputs[3 : 3 + n_saved]
        g_score_t = inputs[3 + n_saved : 3 + n_saved + n_states]
        previous_t = inputs[3 + n_saved + n_states :]
        d_score_state = [
            d + g for d, g in zip(carry[len(carry) - n_states :], g_score_t)
        ]
        static_t, ga_t, alpha_t = inputs[:3]
        go, *g_s, g_a_t, static_c, attn_d_t, k = [
            static_t[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])
        ]
        d_state = [d + g for d, g in zip(d_state, g_s)]
        d_a_state = da + g_a_t
        if masked:
            d_new = [k * d for d in d_state]
            d_attn = k * d_a_state
        else:
            d_new, d_attn = list(d_state), d_a_state
        if output_attention:
            d_attn = d_attn + go
        else:
            d_new[0] = d_new[0] + go
        if has_layer:
            d_pre = d_attn * attn_d_t if tanh else d_attn
            d_cat = ops.matmul(d_pre, w_c_t)
            d_ctx = d_cat[:, :c_size]
            d_new[0] = d_new[0] + d_cat[:, c_size:]
        else:
            d_pre = d_ctx = d_attn
        d_alpha = ops.squeeze(
            ops.matmul(ops.expand_dims(d_ctx, 1), memory_t), 1
        )
        d_alpha = ops.cast(d_alpha + ga_t, "float32")
        d_previous = ()
        if n_states:
            own = d_score_state
            if masked:
                own = [ops.cast(k, d.dtype) * d for d in d_score_state]
            d_weights, d_previous = score.state_backward(own)
            d_alpha = d_alpha + ops.cast(d_weights, "float32")
        d_e, d_from_weights = score.weights_backward(
            d_alpha, alpha_t, saved_t, previous_t, memory_mask, score_in
        )
        d_e = ops.cast(d_e, score_dtype)
        d_query, score_outs, d_from_score = score.backward_step(
            d_e, saved_t, score_in, constants, memory_mask
        )
        d_new[0] = d_new[0] + ops.cast(d_query, d_new[0].dtype)
        d_gates, d_prev, da_prev = cell.backward_step(
            d_new[0], d_new[1:], static_c, cell_w_t
        )
        d_prev = list(d_prev)
        if masked:
            d_prev = [p + (1 - k) * d for p, d in zip(d_prev, d_state)]
            da_prev = da_prev + (1 - k) * d_a_state
        d_score_prev = []
        if n_states:
            d_score_prev = add(d_previous, d_from_score, d_from_weights)
            if masked:
                d_score_prev = [
                    p + ops.cast(1 - k, d.dtype) * d
                    for p, d in zip(d_score_prev, d_score_state)
                ]
        carry = (*d_prev, da_prev, d_gates, d_pre, d_ctx, d_e, *score_outs,
                 *d_score_prev)
        return carry, carry

    batch = ops.shape(a0)[0]
    start = (
        *[ops.zeros_like(s) for s in state0], ops.zeros_like(a0),
        ops.zeros((batch, cell.gate_width), a0.dtype),
        ops.zeros_like(attn[0]), ops.zeros_like(context[0]),
        ops.zeros_like(ops.cast(alpha[0], score_dtype)),
        *score.outs_like(score_in, batch),
        *[ops.zeros_like(s) for s in score_state0],
    )
    final, history = scan(
        step, start,
        (static, g_alpha, alpha, *score_saved, *g_score_states,
         *prev_score_states),
        reverse=True,
    )
    d_state0, d_a0 = final[:n], final[n]
    d_score_state0 = final[len(final) - n_states :]
    d_gates, d_pre, d_ctx, d_e = history[n + 1 : n + 5]
    score_outs = history[n + 5 : len(history) - n_states]
    # The weight gradients of all steps, one matmul each.
    d_xw, d_cell_w = cell.weight_grads(d_gates, prev_states, prev_a, saved)
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
    d_score = score.grads(
        d_e, score_outs, h_new, score_saved, score_in, prev_score_states
    )
    return (
        d_xw, ops.zeros_like(keep), d_a0, d_memory,
        ops.zeros_like(memory_mask), d_w_c, d_b_c, *d_state0, *d_cell_w,
        *d_score, *d_score_state0,
    )
