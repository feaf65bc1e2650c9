"""The cells of the fused step-wise decoder: LSTM and GRU steps, forward
and backward.

`loop` runs `AttentionRNN`'s Luong loop with input feeding, whose
cell input is `[x_t; a_{t-1}]`, for a plain `keras.layers.LSTMCell` or
`keras.layers.GRUCell`. A class here holds one cell's maths in the layout
that loop needs, so the loop itself knows no gate:

- `project(inputs)`: the part of the gates that depends on `x_t` alone,
  for all steps in one matmul before the loop (autodiff differentiates it);
- `weights(input_size)`: the matrices a step multiplies
  `[h_{t-1}; a_{t-1}]` by (the recurrent kernel and the rows of the kernel
  that take `a_{t-1}`, one matrix), and the other tensors of a step;
- `step(x_t, state, a, weights)`: `(h_t, new_state, saved)`, the state a
  tuple of `state_count` tensors (`h` first), `saved` the
  `(batch_size, saved_width)` values the backward pass needs;
- `backward_static(saved, prev_state)`: what a backward step needs that
  does not depend on the gradient flowing back, for all steps at once;
- `backward_step(d_h, d_rest, static_t, weights_t)`: the gradient of the
  previous state and of `a_{t-1}` from that of `h_t` (and of the rest of
  the state), and the gradient of the gates' pre-activations
  (`(batch_size, gate_width)`); `weights_t` are `transposed(weights)`;
- `weight_grads(d_gates, prev_state, prev_a, saved)`: the gradients of
  `project`'s output and of `weights`, one matmul each over all steps.

The cells' own maths, gate order and biases are Keras' (`LSTMCell`:
`i, f, c, o`; `GRUCell`: `z, r, h`, `h_t = z h_{t-1} + (1 - z) n`, with
`reset_after` either way). `keras.ops` only.
"""

from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.rnn.rnn_cells import can_project_inputs
from keras_attention.rnn.rnn_cells import project_inputs
from keras_attention.typing import Tensor


def fused_cell(
    cell: keras.layers.Layer, training: Optional[bool]
) -> Optional["FusedLSTM | FusedGRU"]:
    """The fused form of `cell` for a call with `training`, or `None`.

    A plain `keras.layers.LSTMCell` or `keras.layers.GRUCell` (not a
    subclass, whose call may differ) with the default activations (`tanh`,
    `sigmoid`) and no dropout in this call.
    """
    default = (
        getattr(cell, "activation", None) is keras.activations.tanh
        and getattr(cell, "recurrent_activation", None)
        is keras.activations.sigmoid
    )
    if not default:
        return None
    if can_project_inputs(cell, bool(training)):
        return FusedLSTM(cell)
    if type(cell) is keras.layers.GRUCell and not (
        training and (cell.dropout > 0 or cell.recurrent_dropout > 0)
    ):
        return FusedGRU(cell)
    return None


def _flat(x: Tensor) -> Tensor:
    """`(T, B, n)` -> `(T * B, n)`."""
    return ops.reshape(x, (-1, x.shape[-1]))


def _outer(left: Tensor, right: Tensor) -> Tensor:
    """`sum_t left_t^T right_t` of two `(T, B, .)` tensors: one matmul."""
    return ops.matmul(ops.transpose(_flat(left)), _flat(right))


class FusedLSTM:
    """`keras.layers.LSTMCell`: state `(h, c)`, saved `[i, f, g, o, c_t]`."""

    def __init__(self, cell: keras.layers.Layer):
        self.cell = cell
        self.units = cell.units
        self.state_count = 2
        self.saved_width = 5 * cell.units
        self.gate_width = 4 * cell.units

    def project(self, inputs: Tensor) -> Tensor:
        return project_inputs(self.cell, inputs)

    def weights(self, input_size: int) -> Tuple[Tensor, ...]:
        dtype = self.cell.compute_dtype
        kernel = ops.cast(self.cell.kernel, dtype)
        recurrent = ops.cast(self.cell.recurrent_kernel, dtype)
        return (ops.concatenate([recurrent, kernel[input_size:]], axis=0),)

    def transposed(self, weights: Tuple[Tensor, ...]) -> Tuple[Tensor, ...]:
        return (ops.transpose(weights[0]),)

    def step(
        self, x_t: Tensor, state: tuple, a: Tensor, weights: tuple
    ) -> tuple:
        h, c = state
        z = x_t + ops.matmul(ops.concatenate([h, a], axis=-1), weights[0])
        z_i, z_f, z_g, z_o = ops.split(z, 4, axis=-1)
        i, f, o = ops.sigmoid(z_i), ops.sigmoid(z_f), ops.sigmoid(z_o)
        g = ops.tanh(z_g)
        c_new = f * c + i * g
        h_new = o * ops.tanh(c_new)
        saved = ops.concatenate([i, f, g, o, c_new], axis=-1)
        return h_new, (h_new, c_new), saved

    def backward_static(self, saved: Tensor, prev_state: tuple) -> Tensor:
        """`[p, q, f]`: `dc += dh p`, `d_z = [dc, dc, dc, dh] q`."""
        i, f, g, o, c_new = ops.split(saved, 5, axis=-1)
        tanh_c = ops.tanh(c_new)
        p = o * (1 - tanh_c * tanh_c)
        q = [g * i * (1 - i), prev_state[1] * f * (1 - f), i * (1 - g * g),
             tanh_c * o * (1 - o)]
        return ops.concatenate([p] + q + [f], axis=-1)

    def backward_step(
        self, d_h: Tensor, d_rest: tuple, static_t: Tensor, weights_t: tuple
    ) -> tuple:
        u = self.units
        p, q, f = static_t[:, :u], static_t[:, u : 5 * u], static_t[:, 5 * u :]
        d_c = d_rest[0] + d_h * p
        d_z = ops.concatenate([d_c, d_c, d_c, d_h], axis=-1) * q
        d_prev = ops.matmul(d_z, weights_t[0])
        return d_z, (d_prev[:, :u], d_c * f), d_prev[:, u:]

    def weight_grads(
        self, d_gates: Tensor, prev_state: tuple, prev_a: Tensor,
        saved: Tensor,
    ) -> tuple:
        prev = ops.concatenate([prev_state[0], prev_a], axis=-1)
        return d_gates, (_outer(prev, d_gates),)


class FusedGRU:
    """`keras.layers.GRUCell`: state `(h,)`.

    With `reset_after=True` (Keras' default) a step multiplies `h` by the
    recurrent kernel, columns reordered `[R_h, R_z, R_r]`, and `a` by the
    kernel's rows that take it, `[W_z, W_r, W_h]` (one matmul of `[h; a]`
    would multiply a zero block as large as a quarter of it); `r`
    multiplies `R_h h + b_rh`. Saved `[z, r, n, R_h h + b_rh]`; the gates'
    gradients in the order `[R_h h, z, r, n]`, so that the rows of each
    transposed matrix take a contiguous slice. With `reset_after=False`
    the candidate's recurrent part is `R_h (r h)`: one matmul of `[h; a]`
    by `[[R_z, R_r, 0], [W_z, W_r, W_h]]` (a sixth of it zeros), then one
    of `r h`; saved `[z, r, n]`, gradients `[z, r, n]`.
    """

    def __init__(self, cell: keras.layers.Layer):
        self.cell = cell
        self.units = cell.units
        self.reset_after = cell.reset_after
        self.state_count = 1
        self.saved_width = (4 if cell.reset_after else 3) * cell.units
        self.gate_width = self.saved_width

    def _biases(self) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        """The input bias and the recurrent bias (or `None`s)."""
        cell = self.cell
        if not cell.use_bias:
            return None, None
        bias = ops.cast(cell.bias, cell.compute_dtype)
        if not self.reset_after:
            return bias, None
        return bias[0], bias[1]

    def project(self, inputs: Tensor) -> Tensor:
        cell = self.cell
        dtype = cell.compute_dtype
        u = self.units
        kernel = ops.cast(cell.kernel, dtype)[: inputs.shape[-1]]
        projected = ops.matmul(ops.cast(inputs, dtype), kernel)
        input_bias, recurrent_bias = self._biases()
        if input_bias is not None:
            projected = projected + input_bias
        if recurrent_bias is not None:
            # The recurrent biases of `z` and `r` add to the gates as the
            # input's do; that of the candidate is multiplied by `r`.
            projected = projected + ops.concatenate(
                [recurrent_bias[: 2 * u], ops.zeros((u,), dtype)], axis=0
            )
        return projected

    def weights(self, input_size: int) -> Tuple[Tensor, ...]:
        cell = self.cell
        dtype = cell.compute_dtype
        u = self.units
        recurrent = ops.cast(cell.recurrent_kernel, dtype)
        feed = ops.cast(cell.kernel, dtype)[input_size:]
        if self.reset_after:
            reordered = ops.concatenate(
                [recurrent[:, 2 * u :], recurrent[:, : 2 * u]], axis=1
            )
            recurrent_bias = self._biases()[1]
            if recurrent_bias is None:
                return reordered, feed, ops.zeros((u,), dtype)
            return reordered, feed, recurrent_bias[2 * u :]
        matrix = ops.concatenate(
            [
                ops.concatenate(
                    [recurrent[:, : 2 * u], ops.zeros((u, u), dtype)], axis=1
                ),
                feed,
            ],
            axis=0,
        )
        return matrix, recurrent[:, 2 * u :]

    def transposed(self, weights: Tuple[Tensor, ...]) -> Tuple[Tensor, ...]:
        return tuple(ops.transpose(w) for w in weights[:2])

    def step(
        self, x_t: Tensor, state: tuple, a: Tensor, weights: tuple
    ) -> tuple:
        u = self.units
        (h,) = state
        if self.reset_after:
            m_h = ops.matmul(h, weights[0])
            m_a = ops.matmul(a, weights[1])
            zr = ops.sigmoid(
                x_t[:, : 2 * u] + m_h[:, u:] + m_a[:, : 2 * u]
            )
            rh = m_h[:, :u] + weights[2]
            z, r = zr[:, :u], zr[:, u:]
            n = ops.tanh(x_t[:, 2 * u :] + m_a[:, 2 * u :] + r * rh)
            saved = [zr, n, rh]
        else:
            m = ops.matmul(ops.concatenate([h, a], axis=-1), weights[0])
            zr = ops.sigmoid(x_t[:, : 2 * u] + m[:, : 2 * u])
            z, r = zr[:, :u], zr[:, u:]
            n = ops.tanh(
                x_t[:, 2 * u :] + m[:, 2 * u :]
                + ops.matmul(r * h, weights[1])
            )
            saved = [zr, n]
        h_new = z * h + (1 - z) * n
        return h_new, (h_new,), ops.concatenate(saved, axis=-1)

    def backward_static(self, saved: Tensor, prev_state: tuple) -> Tensor:
        """`reset_after`: `[q, z]`, the gates' gradients `[dh, dh, dh, dh]
        q`; else `[d_z, d_n, h r (1 - r), r, z]` (per unit of `dh`)."""
        u = self.units
        h_prev = prev_state[0]
        z, r, n = (saved[..., i * u : (i + 1) * u] for i in range(3))
        d_z = (h_prev - n) * z * (1 - z)
        d_n = (1 - z) * (1 - n * n)
        if self.reset_after:
            rh = saved[..., 3 * u :]
            parts = [d_n * r, d_z, d_n * rh * r * (1 - r), d_n, z]
        else:
            parts = [d_z, d_n, h_prev * r * (1 - r), r, z]
        return ops.concatenate(parts, axis=-1)

    def backward_step(
        self, d_h: Tensor, d_rest: tuple, static_t: Tensor, weights_t: tuple
    ) -> tuple:
        u = self.units
        z = static_t[:, 4 * u :]
        if self.reset_after:
            d_m = ops.concatenate([d_h, d_h, d_h, d_h], axis=-1) * static_t[
                :, : 4 * u
            ]
            d_h_prev = d_h * z + ops.matmul(d_m[:, : 3 * u], weights_t[0])
            return d_m, (d_h_prev,), ops.matmul(d_m[:, u:], weights_t[1])
        d_pz = d_h * static_t[:, :u]
        d_pn = d_h * static_t[:, u : 2 * u]
        d_rh = ops.matmul(d_pn, weights_t[1])
        d_pr = d_rh * static_t[:, 2 * u : 3 * u]
        d_m = ops.concatenate([d_pz, d_pr, d_pn], axis=-1)
        d_prev = ops.matmul(d_m, weights_t[0])
        r = static_t[:, 3 * u : 4 * u]
        d_h_prev = d_h * z + d_rh * r + d_prev[:, :u]
        return d_m, (d_h_prev,), d_prev[:, u:]

    def weight_grads(
        self, d_gates: Tensor, prev_state: tuple, prev_a: Tensor,
        saved: Tensor,
    ) -> tuple:
        u = self.units
        h_prev = prev_state[0]
        if self.reset_after:
            d_xw = d_gates[..., u:]
            return d_xw, (
                _outer(h_prev, d_gates[..., : 3 * u]),
                _outer(prev_a, d_xw),
                ops.sum(d_gates[..., :u], axis=(0, 1)),
            )
        prev = ops.concatenate([h_prev, prev_a], axis=-1)
        r = saved[..., u : 2 * u]
        return d_gates, (
            _outer(prev, d_gates),
            _outer(r * h_prev, d_gates[..., 2 * u :]),
        )
