"""`keras_attention.LSTM`: `keras.layers.LSTM` with a hand-written backward
pass.

Autodiff of an RNN loop computes, at every step, the gradient of the
recurrent kernel (a `(units, batch) x (batch, 4 units)` matmul) and of the
input kernel, then adds the per-step gradients up. `LSTM` runs the same
forward loop, keeps the gates, and in its backward loop computes only what
must be sequential (the gradient that flows to the previous state); the
weight gradients of all steps are then one `(units, batch * T) x
(batch * T, 4 units)` matmul, and the input projection `x W + b` of all
steps is one matmul before the loop. Same weights (`layer.cell.kernel`,
`recurrent_kernel`, `bias`), same results, same masking as
`keras.layers.LSTM`; written with `keras.ops` only. The class has Keras'
name so that checkpoints are interchangeable: Keras names a layer's
weights in a `.weights.h5` file after its class.
"""

from typing import Callable
from typing import List
from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.typing import Tensor


class _FusedLoop(keras.layers.RNN):
    """The loop `keras.layers.LSTM.inner_loop` falls back to, in our `LSTM`.

    `LSTM(keras.layers.LSTM, _FusedLoop)` puts this class between
    `keras.layers.LSTM` and `keras.layers.RNN` in the method resolution
    order: Keras' `LSTM.inner_loop` tries its cuDNN kernel as before and,
    where there is none, calls `super().inner_loop`, which is this one,
    instead of `RNN`'s generic loop.
    """

    def inner_loop(
        self,
        sequences: Tensor,
        initial_state: List[Tensor],
        mask: Optional[Tensor],
        training: Optional[bool] = False,
    ) -> Tuple[Tensor, Tensor, List[Tensor]]:
        if not self.fuses(training):
            return super().inner_loop(
                sequences, initial_state, mask=mask, training=training
            )
        cell = self.cell
        dtype = sequences.dtype
        return lstm_sequence(
            sequences,
            ops.cast(initial_state[0], dtype),
            ops.cast(initial_state[1], dtype),
            ops.cast(cell.kernel, dtype),
            ops.cast(cell.recurrent_kernel, dtype),
            ops.cast(cell.bias, dtype) if cell.use_bias else None,
            mask=mask,
            go_backwards=self.go_backwards,
            zero_output_for_mask=self.zero_output_for_mask,
        )


@keras.saving.register_keras_serializable(package="keras_attention")
class LSTM(keras.layers.LSTM, _FusedLoop):
    """Long Short-Term Memory layer, trained with a fused backward pass.

    A drop-in `keras.layers.LSTM` (same arguments, weights, outputs, masks,
    `Bidirectional` and checkpoint layout): where the layer would run its
    generic loop (no cuDNN kernel for this backend and configuration),
    it runs the loop of `lstm_sequence`, whose backward pass takes
    the weight gradients of all time steps in one matmul. Measured by
    `benchmarks/peers.py` on a CPU: docs/benchmarks.md.

    The fused loop needs the default activations (`tanh`, `sigmoid`), no
    `recurrent_dropout`, no input `dropout` in training, and `unroll=False`
    (`fuses(training)` says whether a call runs it); other configurations
    run `keras.layers.LSTM`'s own loop, unchanged. A cuDNN kernel, where
    the backend has one for the configuration, is still preferred.

    Args:
        units: Positive integer, dimensionality of the output space.
        **kwargs: Every other argument of `keras.layers.LSTM`.

    Example:

    ```python
    source = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(5000, 256, mask_zero=True)(source)
    memory, h, c = keras_attention.LSTM(
        256, return_sequences=True, return_state=True)(x)
    ```
    """

    def fuses(self, training: Optional[bool] = False) -> bool:
        """Whether a call (with `training`) runs the fused loop."""
        cell = self.cell
        return (
            not self.unroll
            and not cell.recurrent_dropout
            and not (training and cell.dropout)
            and cell.activation is keras.activations.tanh
            and cell.recurrent_activation is keras.activations.sigmoid
        )


def lstm_sequence(
    inputs: Tensor,
    h0: Tensor,
    c0: Tensor,
    kernel: Tensor,
    recurrent_kernel: Tensor,
    bias: Optional[Tensor] = None,
    mask: Optional[Tensor] = None,
    go_backwards: bool = False,
    zero_output_for_mask: bool = False,
) -> Tuple[Tensor, Tensor, List[Tensor]]:
    """An LSTM over a sequence, as `keras.backend.rnn` runs `LSTMCell`.

    Gates `i, f, g, o` in Keras' order (`kernel` columns), `c_t = f c + i
    g`, `h_t = o tanh(c_t)`. Where `mask` is False the state is carried
    over unchanged; the output there is the last output, or zeros with
    `zero_output_for_mask`. Before the first kept step, the last output is
    zeros on TensorFlow and PyTorch and the initial `h0` on JAX: Keras'
    loops differ there, and `keras.layers.LSTM`'s results are kept on each
    backend.

    Args:
        inputs: `(batch, T, dim)`.
        h0, c0: `(batch, units)`, the initial state.
        kernel: `(dim, 4 units)`; recurrent_kernel: `(units, 4 units)`;
            bias: `(4 units,)` or None.
        mask: Optional boolean `(batch, T)`, True = keep.
        go_backwards: Process the steps last to first; the outputs are
            returned in that order, as Keras does.
        zero_output_for_mask: Zero outputs at masked steps.

    Returns:
        `(last_output, outputs, [h, c])`: `(batch, units)`,
        `(batch, T, units)`, the final state.
    """
    batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
    units = ops.shape(recurrent_kernel)[0]
    # The input projection of all steps: one matmul.
    xw = ops.matmul(ops.reshape(inputs, (-1, ops.shape(inputs)[-1])), kernel)
    if bias is not None:
        xw = xw + bias
    xw = ops.transpose(ops.reshape(xw, (batch, steps, 4 * units)), (1, 0, 2))
    if mask is None:
        keep = ops.ones((steps, batch, 1), "bool")
    else:
        keep = ops.expand_dims(ops.transpose(ops.cast(mask, "bool")), -1)
    if go_backwards:
        xw = ops.flip(xw, axis=0)
        keep = ops.flip(keep, axis=0)
    states = _lstm_loop(
        xw, ops.cast(keep, xw.dtype), h0, c0, recurrent_kernel
    )
    hs, cs = states[..., :units], states[..., units:]
    if zero_output_for_mask:
        outputs = ops.where(keep, hs, 0)
    elif keras.backend.backend() == "jax":
        outputs = hs
    else:
        # The output of a masked step is the last output: the state h
        # once a step was kept, zeros before.
        seen = ops.cumsum(ops.cast(keep, "int32"), axis=0) > 0
        outputs = ops.where(seen, hs, 0)
    outputs = ops.cast(outputs, inputs.dtype)
    return (
        outputs[-1],
        ops.transpose(outputs, (1, 0, 2)),
        [hs[-1], cs[-1]],
    )


def _split_gates(gates: Tensor) -> List[Tensor]:
    return ops.split(gates, 4, axis=-1)


@ops.custom_gradient
def _lstm_loop(
    xw: Tensor,
    keep_weight: Tensor,
    h0: Tensor,
    c0: Tensor,
    recurrent_kernel: Tensor,
) -> Tuple[Tensor, Callable]:
    """The recurrence: time-major `xw` `(T, batch, 4 units)`, `keep_weight`
    `(T, batch, 1)` (1 = keep; a float, so that every input has a
    gradient) -> `(T, batch, 2 units)`, `[h_t; c_t]` of every step (one
    tensor: Keras' custom gradients take one output on every backend)."""
    # Keras' TensorFlow `scan` stacks outputs of the carry's structure only
    # (so the carry holds the step's gates too), and takes one sequence
    # where the length is not static (so the sequences are concatenated).
    units = ops.shape(recurrent_kernel)[0]

    def step(carry: Tuple[Tensor, ...], inputs: Tensor):
        h, c = carry[:2]
        x_t, keep_t = inputs[:, :-1], inputs[:, -1:] > 0.5
        z = x_t + ops.matmul(h, recurrent_kernel)
        i, f, g, o = _split_gates(z)
        i, f, o = ops.sigmoid(i), ops.sigmoid(f), ops.sigmoid(o)
        g = ops.tanh(g)
        c_new = f * c + i * g
        tanh_c = ops.tanh(c_new)
        h_new = ops.where(keep_t, o * tanh_c, h)
        c_new = ops.where(keep_t, c_new, c)
        gates = ops.concatenate([i, f, g, o], axis=-1)
        carry = (h_new, c_new, gates, tanh_c)
        return carry, carry

    start = (h0, c0, ops.zeros_like(xw[0]), ops.zeros_like(c0))
    _, (hs, cs, gates, tanh_cs) = ops.scan(
        step, start, ops.concatenate([xw, keep_weight], axis=-1)
    )
    h_prev = ops.concatenate([h0[None], hs[:-1]], axis=0)
    c_prev = ops.concatenate([c0[None], cs[:-1]], axis=0)
    transposed_kernel = ops.transpose(recurrent_kernel)

    def grad(*args: Tensor, upstream: Optional[Tensor] = None):
        if upstream is None:
            (upstream,) = args
        # Each step reads [dh_t, dc_t, gates, tanh c_t, c_{t-1}, keep].
        ends = [units * k for k in (1, 2, 6, 7, 8)]

        def back_step(carry: Tuple[Tensor, ...], inputs: Tensor):
            dh, dc = carry[:2]
            dh_out, dc_out, gates_t, tanh_c, c_before, keep_t = ops.split(
                inputs, ends, axis=-1
            )
            keep_t = keep_t > 0.5
            dh = dh + dh_out
            dc = dc + dc_out
            # A masked step passes the gradient to the state before it.
            dh_new = ops.where(keep_t, dh, 0)
            dc_new = ops.where(keep_t, dc, 0)
            i, f, g, o = _split_gates(gates_t)
            dc_new = dc_new + dh_new * o * (1 - tanh_c * tanh_c)
            dz = ops.concatenate(
                [
                    dc_new * g * i * (1 - i),
                    dc_new * c_before * f * (1 - f),
                    dc_new * i * (1 - g * g),
                    dh_new * tanh_c * o * (1 - o),
                ],
                axis=-1,
            )
            dh_before = ops.where(keep_t, 0, dh) + ops.matmul(
                dz, transposed_kernel
            )
            dc_before = ops.where(keep_t, dc_new * f, dc)
            carry = (dh_before, dc_before, dz)
            return carry, carry

        (dh0, dc0, _), (_, _, dz) = ops.scan(
            back_step,
            (ops.zeros_like(h0), ops.zeros_like(c0), ops.zeros_like(xw[0])),
            ops.concatenate(
                [upstream, gates, tanh_cs, c_prev, keep_weight], axis=-1
            ),
            reverse=True,
        )
        # The recurrent kernel's gradient of every step in one matmul.
        d_kernel = ops.matmul(
            ops.transpose(ops.reshape(h_prev, (-1, units))),
            ops.reshape(dz, (-1, 4 * units)),
        )
        return dz, ops.zeros_like(keep_weight), dh0, dc0, d_kernel

    return ops.concatenate([hs, cs], axis=-1), grad
