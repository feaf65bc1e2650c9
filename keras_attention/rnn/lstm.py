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

from keras_attention.rnn import loops
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
    inputs, h0, c0, kernel, recurrent_kernel = (
        ops.convert_to_tensor(t)
        for t in (inputs, h0, c0, kernel, recurrent_kernel)
    )
    units = ops.shape(recurrent_kernel)[0]
    # Time-major, and the input projection of all steps in one matmul.
    x = ops.transpose(inputs, (1, 0, 2))
    steps, batch = ops.shape(x)[0], ops.shape(x)[1]
    # tanh(x) = 2 sigmoid(2 x) - 1: with the cell-gate columns scaled by 2,
    # one sigmoid gives all four gates (and the loop runs on the scaled
    # weights; autodiff of the scaling gives the real weights' gradients).
    scale = ops.concatenate(
        [ops.ones((2 * units,)), 2 * ops.ones((units,)), ops.ones((units,))]
    )
    scale = ops.cast(scale, kernel.dtype)
    xw = ops.matmul(ops.reshape(x, (-1, ops.shape(x)[-1])), kernel * scale)
    if bias is not None:
        xw = xw + ops.convert_to_tensor(bias) * scale
    xw = ops.reshape(xw, (steps, batch, 4 * units))
    keep = None
    if mask is not None:
        keep = ops.expand_dims(ops.transpose(ops.cast(mask, "bool")), -1)
    if go_backwards:
        xw = ops.flip(xw, axis=0)
        keep = None if keep is None else ops.flip(keep, axis=0)
    loop_inputs = (xw, h0, c0, recurrent_kernel * scale)
    if keep is None:
        states = _lstm_loop(*loop_inputs)
    else:
        states = _masked_lstm_loop(*loop_inputs, ops.cast(keep, xw.dtype))
    hs, c = states[:-1], states[-1]
    if keep is None:
        outputs = hs
    elif zero_output_for_mask:
        outputs = ops.where(keep, hs, 0)
    elif keras.backend.backend() == "jax":
        outputs = hs
    else:
        # The output of a masked step is the last output: the state h
        # once a step was kept, zeros before.
        seen = ops.cumsum(ops.cast(keep, "int32"), axis=0) > 0
        outputs = ops.where(seen, hs, 0)
    outputs = ops.cast(outputs, inputs.dtype)
    return outputs[-1], ops.transpose(outputs, (1, 0, 2)), [hs[-1], c]


def _forward(
    xw: Tensor,
    h0: Tensor,
    c0: Tensor,
    recurrent_kernel: Tensor,
    keep: Optional[Tensor] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    """The forward loop on scaled weights: `(hs, cs, gates)`, time-major.

    Keras' TensorFlow `scan` stacks outputs of the carry's structure only
    (so the carry holds the step's gates too), and takes one sequence where
    the length is not static (so the keep flags ride on `xw`)."""
    sequence = xw if keep is None else ops.concatenate([xw, keep], axis=-1)

    def step(carry: Tuple[Tensor, ...], inputs: Tensor):
        h, c = carry[:2]
        x_t = inputs if keep is None else inputs[:, :-1]
        a = ops.sigmoid(x_t + ops.matmul(h, recurrent_kernel))
        i, f, s, o = ops.split(a, 4, axis=-1)
        c_new = f * c + i * (2 * s - 1)
        h_new = o * ops.tanh(c_new)
        if keep is not None:
            keep_t = inputs[:, -1:] > 0.5
            h_new = ops.where(keep_t, h_new, h)
            c_new = ops.where(keep_t, c_new, c)
        carry = (h_new, c_new, a)
        return carry, carry

    start = (h0, c0, ops.zeros_like(xw[0]))
    if loops.portable():
        # No TensorList ops (LiteRT's runtime has no kernels for them when
        # the batch size is unknown): the loop writes into buffers.
        def carry_step(carry: dict, inputs: Tensor) -> dict:
            new, _ = step(tuple(carry[k] for k in "hca"), inputs)
            return dict(zip("hca", new))

        _, history = loops.scan_steps(
            carry_step, dict(zip("hca", start)), sequence, "hca"
        )
        return history["h"], history["c"], history["a"]
    _, (hs, cs, gates) = ops.scan(step, start, sequence)
    return hs, cs, gates


def _backward(
    upstream: Tensor,
    hs: Tensor,
    cs: Tensor,
    gates: Tensor,
    h0: Tensor,
    c0: Tensor,
    recurrent_kernel: Tensor,
    keep: Optional[Tensor] = None,
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """The gradients of the loop's inputs, given `upstream`, the gradient
    of `[h_1 .. h_T; c_T]`.

    Everything that does not depend on the gradient flowing back is
    computed for all steps at once before the loop; a step is then a
    handful of ops and one matmul: with `a` the sigmoids of the scaled
    pre-activations `z`, `P = o (1 - tanh^2 c)` and `Q = a (1 - a) [g;
    c_{t-1}; 2 i; tanh c]`,

        dh <- dh + dH_t,   dc <- dc + dh P,
        dz = [dc; dc; dc; dh] Q,   dh_{t-1} = dz U^T,   dc_{t-1} = dc f.

    A masked step has `P = Q = 0`, `f = 1` and passes `dh` through.
    """
    units = ops.shape(recurrent_kernel)[0]
    c_prev = ops.concatenate([c0[None], cs[:-1]], axis=0)
    i, f, s, o = ops.split(gates, 4, axis=-1)
    tanh_c = ops.tanh(cs)
    p = o * (1 - tanh_c * tanh_c)
    q = gates * (1 - gates) * ops.concatenate(
        [2 * s - 1, c_prev, 2 * i, tanh_c], axis=-1
    )
    parts = [upstream[:-1], p, f, q]
    if keep is not None:
        p, q = p * keep, q * keep
        parts = [upstream[:-1], p, ops.where(keep > 0.5, f, 1), q, 1 - keep]
    sequence = ops.concatenate(parts, axis=-1)
    transposed_kernel = ops.transpose(recurrent_kernel)
    ends = [units, 2 * units, 3 * units, 7 * units]

    def step(carry: Tuple[Tensor, ...], inputs: Tensor):
        dh, dc = carry[:2]
        pieces = ops.split(inputs, ends, axis=-1)
        dh = dh + pieces[0]
        dc = dc + dh * pieces[1]
        dz = ops.concatenate([dc, dc, dc, dh], axis=-1) * pieces[3]
        dh_before = ops.matmul(dz, transposed_kernel)
        if keep is not None:
            dh_before = dh_before + dh * pieces[4]
        carry = (dh_before, dc * pieces[2], dz)
        return carry, carry

    start = (ops.zeros_like(h0), upstream[-1], ops.zeros_like(gates[0]))
    (dh0, dc0, _), (_, _, dz) = ops.scan(step, start, sequence, reverse=True)
    # The recurrent kernel's gradient of every step in one matmul.
    h_prev = ops.concatenate([h0[None], hs[:-1]], axis=0)
    d_kernel = ops.matmul(
        ops.transpose(ops.reshape(h_prev, (-1, units))),
        ops.reshape(dz, (-1, 4 * units)),
    )
    return dz, dh0, dc0, d_kernel


@ops.custom_gradient
def _lstm_loop(
    xw: Tensor, h0: Tensor, c0: Tensor, recurrent_kernel: Tensor
) -> Tuple[Tensor, Callable]:
    """The recurrence on time-major, scaled `xw` `(T, batch, 4 units)` ->
    `(T + 1, batch, units)`: `h_1 .. h_T` and `c_T` (one tensor: Keras'
    custom gradients take one output on every backend)."""
    hs, cs, gates = _forward(xw, h0, c0, recurrent_kernel)

    def grad(*args: Tensor, upstream: Optional[Tensor] = None):
        if upstream is None:
            (upstream,) = args
        return _backward(upstream, hs, cs, gates, h0, c0, recurrent_kernel)

    return ops.concatenate([hs, cs[-1:]], axis=0), grad


@ops.custom_gradient
def _masked_lstm_loop(
    xw: Tensor, h0: Tensor, c0: Tensor, recurrent_kernel: Tensor, keep: Tensor
) -> Tuple[Tensor, Callable]:
    """`_lstm_loop` with `keep` `(T, batch, 1)`, 1 = keep (a float, so that
    every input has a gradient): a masked step carries the state over."""
    hs, cs, gates = _forward(xw, h0, c0, recurrent_kernel, keep)

    def grad(*args: Tensor, upstream: Optional[Tensor] = None):
        if upstream is None:
            (upstream,) = args
        grads = _backward(
            upstream, hs, cs, gates, h0, c0, recurrent_kernel, keep
        )
        return (*grads, ops.zeros_like(keep))

    return ops.concatenate([hs, cs[-1:]], axis=0), grad
