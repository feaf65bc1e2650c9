"""The scores of the fused step-wise decoder, forward and backward.

`loop` runs the loop; a class here holds one score's maths in the
layout that loop needs, for a query `h_t` `(batch_size, U)` and the keys
projected once per memory:

- `inputs(state)`: the tensors of the score, from the wrapper state (the
  keys projected by `prepare_memory`) and the layer's weights, computed
  outside the loop, so that autodiff carries their gradients to the
  weights (the key projection, a scale, weight normalization);
- `prepare(inputs)`: loop constants derived from them;
- `step(h, inputs, constants, score_state)`: `(scores, saved)`, scores
  `(batch_size, S)` in the score dtype and a tuple of values the backward
  pass needs (zeros like them: `saved_like(inputs, batch_size)`);
- `weights(scores, mask, states, inputs)`: the step's weights (a masked
  softmax), and `weights_backward(...)` the scores' gradient from theirs;
- `backward_step(d_e, saved_t, inputs, constants, memory_mask)`: the
  gradient of `h_t` from that of the scores, a tuple of per-step values
  for `grads` (zeros like them: `outs_like(inputs, batch_size)`) and the
  gradient of the score state before the step (a stateful score's);
- `grads(d_e, outs, queries, saved, inputs, previous_states)`: the
  gradients of `inputs` over all steps, from the stacked `(T, ...)`
  gradients of the scores and the rest, one matmul or one reduction each.

A stateful score (`state_count > 0`, `location.FusedLocation`) also
carries `state_count` `(batch_size, S)` tensors from step to step:
`initial_state(state)` before the first step, `advance(weights, states)`
after each from the step's weights, `state_backward(d_states)` the
gradients of those weights and of the previous states that `advance`
gives, and `final_state(states)` the layer's alignment state. The
stateless scores here carry none.
"""

import keras
from keras import ops

from keras_attention.ops.masking import masked_softmax
from keras_attention.typing import Tensor


class Stateless:
    """What a score without a state carries from step to step: nothing."""

    state_count = 0

    def __init__(self, attention: keras.layers.Layer):
        self.attention = attention

    def initial_state(self, state: dict) -> tuple:
        return ()

    def advance(self, weights: Tensor, states: tuple) -> tuple:
        return ()

    def state_backward(self, d_states: tuple) -> tuple:
        return 0.0, ()

    def weights(
        self, scores: Tensor, mask: Tensor, states: tuple, inputs: tuple
    ) -> Tensor:
        """The step's weights: the softmax of the scores over the kept
        positions, in float32 (float64 for float64 scores)."""
        return masked_softmax(scores, mask)

    def weights_backward(
        self, d_weights: Tensor, weights: Tensor, saved_t: tuple,
        previous_t: tuple, memory_mask: Tensor, inputs: tuple,
    ) -> tuple:
        """The gradient of the scores from that of the weights (float32),
        and of the previous states (none here)."""
        weights = ops.cast(weights, "float32")
        d_e = weights * (
            d_weights - ops.sum(weights * d_weights, axis=-1, keepdims=True)
        )
        return d_e, ()


def _matvec(vectors: Tensor, matrices: Tensor) -> Tensor:
    """`(B, n) x (B, n, m) -> (B, m)`, one batched matmul."""
    return ops.squeeze(ops.matmul(ops.expand_dims(vectors, 1), matrices), 1)


class FusedDot(Stateless):
    """`e = h . (s K)`: the dot and multiplicative (Luong) scores.

    The keys come projected (`W k` for multiplicative) and are scaled once
    here: `s` is the layer's score of a one-feature query and key of 1, so
    every scale the layer has (learned, `1 / sqrt(Dk)`) is its own, with its
    gradient. Nothing is saved; the gradient of the keys is one matmul of
    the scores' gradients and the queries after the loop.
    """

    def inputs(self, state: dict) -> tuple:
        keys = state["keys"]
        one = ops.ones((1, 1, 1), dtype=keys.dtype)
        scale = ops.reshape(self.attention.score(one, one), ())
        return (keys * scale,)

    def saved_like(self, inputs: tuple, batch: Tensor) -> tuple:
        return ()

    def outs_like(self, inputs: tuple, batch: Tensor) -> tuple:
        return ()

    def prepare(self, inputs: tuple) -> tuple:
        """Loop constants: the keys transposed."""
        return (ops.transpose(inputs[0], (0, 2, 1)),)

    def step(
        self, h: Tensor, inputs: tuple, constants: tuple, states: tuple
    ) -> tuple:
        return _matvec(ops.cast(h, constants[0].dtype), constants[0]), ()

    def backward_step(
        self, d_e: Tensor, saved_t: tuple, inputs: tuple, constants: tuple,
        memory_mask: Tensor,
    ) -> tuple:
        return _matvec(d_e, inputs[0]), (), ()

    def grads(
        self, d_e: Tensor, outs: tuple, queries: Tensor, saved: tuple,
        inputs: tuple, previous_states: tuple,
    ) -> tuple:
        # d_e: (T, B, S) -> (B, S, T); queries: (T, B, U) -> (B, T, U).
        d_keys = ops.matmul(
            ops.transpose(d_e, (1, 2, 0)),
            ops.transpose(ops.cast(queries, d_e.dtype), (1, 0, 2)),
        )
        return (d_keys,)


class FusedAdditive(Stateless):
    """`e_i = v^T tanh(W1 k_i + W2 h + b)`: the additive (Bahdanau) score.

    `W1 k` comes from `prepare_memory` (one matmul per memory, whose
    gradient autodiff gives from that of the projected keys); `v` is the
    layer's `score_vector`, weight-normalized with `normalize=True` outside
    the loop. A step computes `W2 h + b`, the `tanh` term `H`
    `(batch_size, S, units)` and `H v`, and keeps `H`; a backward step only
    `dL/dh = W2^T (v * sum_i d_e_i (1 - H_i^2))`. After the loop, over
    all steps: `dW2` one matmul, `db` and `dv` one reduction and one
    matmul, and the projected keys' gradient
    `v * sum_t d_e_t (1 - H_t^2)`.
    """

    def inputs(self, state: dict) -> tuple:
        attention = self.attention
        keys = state["keys"]
        dtype = keys.dtype
        w2 = ops.cast(attention.query_kernel, dtype)
        if attention.bias is not None:
            b = ops.cast(attention.bias, dtype)
        else:
            b = ops.zeros((attention.units,), dtype)
        return keys, w2, b, attention.score_vector(dtype)

    def saved_like(self, inputs: tuple, batch: Tensor) -> tuple:
        return (ops.zeros_like(inputs[0]),)

    def outs_like(self, inputs: tuple, batch: Tensor) -> tuple:
        return (ops.zeros((batch, inputs[2].shape[0]), inputs[2].dtype),)

    def prepare(self, inputs: tuple) -> tuple:
        """Loop constants: `v` as a column."""
        return (ops.expand_dims(inputs[3], -1),)

    def step(
        self, h: Tensor, inputs: tuple, constants: tuple, states: tuple
    ) -> tuple:
        return self.energy_of(h, inputs[0], inputs, constants)

    def energy_of(
        self, h: Tensor, keys: Tensor, inputs: tuple, constants: tuple
    ) -> tuple:
        """`(v^T tanh(keys + W2 h + b), (tanh term,))` for keys
        `(batch_size, S, units)` (the projected keys, plus location
        features in `FusedLocation`)."""
        w2, b = inputs[1:3]
        query = ops.matmul(ops.cast(h, keys.dtype), w2) + b
        hidden = ops.tanh(keys + ops.expand_dims(query, 1))
        scores = ops.squeeze(ops.matmul(hidden, constants[0]), -1)
        return scores, (hidden,)

    def backward_step(
        self, d_e: Tensor, saved_t: tuple, inputs: tuple, constants: tuple,
        memory_mask: Tensor,
    ) -> tuple:
        (hidden,) = saved_t
        _, w2, _, v = inputs[:4]
        # sum_i d_e_i (1 - H_i^2) = sum_i d_e_i - sum_i d_e_i H_i^2.
        d_query = v * (
            ops.sum(d_e, axis=-1, keepdims=True)
            - _matvec(d_e, hidden * hidden)
        )
        return ops.matmul(d_query, ops.transpose(w2)), (d_query,), ()

    def grads(
        self, d_e: Tensor, outs: tuple, queries: Tensor, saved: tuple,
        inputs: tuple, previous_states: tuple,
    ) -> tuple:
        (d_query,) = outs
        (hidden,) = saved
        _, w2, _, v = inputs[:4]
        units = hidden.shape[-1]
        # Sums over all steps as matmuls (reductions over a leading axis
        # are slow on some backends).
        d_v = ops.matmul(
            ops.reshape(d_e, (1, -1)), ops.reshape(hidden, (-1, units))
        )[0]
        steps = ops.shape(d_e)[0]
        weighted = ops.reshape(
            ops.expand_dims(d_e, -1) * (hidden * hidden), (steps, -1)
        )
        d_squares = ops.reshape(
            ops.matmul(ops.ones((1, steps), d_e.dtype), weighted),
            ops.shape(hidden)[1:],
        )
        d_keys = v * (ops.expand_dims(ops.sum(d_e, axis=0), -1) - d_squares)
        d_w2 = ops.matmul(
            ops.transpose(
                ops.reshape(ops.cast(queries, w2.dtype), (-1, w2.shape[0]))
            ),
            ops.reshape(d_query, (-1, units)),
        )
        return d_keys, d_w2, ops.sum(d_query, axis=(0, 1)), d_v
