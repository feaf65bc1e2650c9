"""The location-sensitive score of the fused step-wise decoder.

`e_i = v^T tanh(W1 k_i + W2 h + U conv([w_prev; w_cum])_i + b)`
(`LocationSensitiveAttention`): the additive score with location features
of the previous step's weights and their running sum, the state this score
carries from step to step. The convolution and `U` are linear, so a
backward step sends the gradient of the `tanh` term back to the previous
state through `U^T` and the convolution with the kernel flipped (its
transpose, "same" padding, an odd width); the gradients of `U` and of the
kernel are one matmul each over all steps after the loop, from the states
the forward loop kept. The states are in the layer's `state_dtype`
(float32 under mixed precision), as the layer keeps them.
"""

import keras
from keras import ops

from keras_attention.layers.location_sensitive_attention import (
    location_conv,
)
from keras_attention.rnn.fused_decoder.scores import FusedAdditive
from keras_attention.typing import Tensor


class FusedLocation(FusedAdditive):
    """`FusedAdditive` plus the location features and their state.

    The inputs are the additive score's, then the location kernel
    `(k, C, F)` and the projection `U` `(F, units)` in the state dtype;
    the state is the previous weights (and, with `cumulative`, their sum),
    zero at masked source positions.
    """

    def __init__(self, attention: keras.layers.Layer):
        super().__init__(attention)
        self.state_count = 2 if attention.cumulative else 1
        self.state_dtype = attention.state_dtype

    def inputs(self, state: dict) -> tuple:
        dtype = self.state_dtype
        return super().inputs(state) + (
            ops.cast(self.attention.location_kernel, dtype),
            ops.cast(self.attention.location_projection, dtype),
        )

    def initial_state(self, state: dict) -> tuple:
        previous = state["alignment_state"]
        names = ("weights", "cumulative")[: self.state_count]
        # Whatever the state holds at masked positions never reaches a step.
        return tuple(
            ops.where(
                state["memory_mask"],
                ops.cast(previous[name], self.state_dtype),
                0.0,
            )
            for name in names
        )

    def advance(self, weights: Tensor, states: tuple) -> tuple:
        weights = ops.cast(weights, self.state_dtype)
        if self.state_count == 2:
            return weights, states[1] + weights
        return (weights,)

    def final_state(self, states: list) -> dict:
        return dict(zip(("weights", "cumulative"), states))

    def state_backward(self, d_states: tuple) -> tuple:
        zero = ops.zeros_like(d_states[0])
        if self.state_count == 2:
            d_weights, d_cumulative = d_states
            return d_weights + d_cumulative, (zero, d_cumulative)
        return d_states[0], (zero,)

    def prepare(self, inputs: tuple) -> tuple:
        """Loop constants: `v` as a column, the kernel flipped and
        transposed `(k, F, C)` (the convolution's transpose), `U^T`."""
        kernel, projection = inputs[4:]
        flipped = ops.transpose(ops.flip(kernel, 0), (0, 2, 1))
        return (
            ops.expand_dims(inputs[3], -1), flipped, ops.transpose(projection)
        )

    def step(
        self, h: Tensor, inputs: tuple, constants: tuple, states: tuple
    ) -> tuple:
        keys, kernel, projection = inputs[0], inputs[4], inputs[5]
        features = ops.matmul(
            location_conv(ops.stack(states, axis=-1), kernel), projection
        )
        keys = keys + ops.cast(features, keys.dtype)
        return self.energy_of(h, keys, inputs, constants)

    def backward_step(
        self, d_e: Tensor, saved_t: tuple, inputs: tuple, constants: tuple,
        memory_mask: Tensor,
    ) -> tuple:
        (hidden,) = saved_t
        w2, v = inputs[1], inputs[3]
        _, flipped, projection_t = constants
        # The gradient of the tanh term `(batch_size, S, units)`: of the
        # keys, of the location features and, summed over S, of the query.
        d_term = ops.expand_dims(d_e, -1) * v * (1 - hidden * hidden)
        d_query = ops.sum(d_term, axis=1)
        d_conv = ops.matmul(ops.cast(d_term, self.state_dtype), projection_t)
        d_inputs = location_conv(d_conv, flipped)
        d_inputs = d_inputs * ops.expand_dims(
            ops.cast(memory_mask, d_inputs.dtype), -1
        )
        d_previous = tuple(
            d_inputs[..., c] for c in range(self.state_count)
        )
        return ops.matmul(d_query, ops.transpose(w2)), (d_query,), d_previous

    def grads(
        self, d_e: Tensor, outs: tuple, queries: Tensor, saved: tuple,
        inputs: tuple, previous_states: tuple,
    ) -> tuple:
        additive = super().grads(
            d_e, outs, queries, saved, inputs, previous_states
        )
        (hidden,) = saved
        v, kernel, projection = inputs[3:]
        width, channels, filters = kernel.shape
        units = hidden.shape[-1]
        d_term = ops.cast(
            ops.expand_dims(d_e, -1) * v * (1 - hidden * hidden),
            self.state_dtype,
        )
        d_term = ops.reshape(d_term, (-1, units))
        # The previous states of every step: (T, B, S, C) -> (T B, S, C).
        stacked = ops.stack(previous_states, axis=-1)
        source = ops.shape(stacked)[2]
        states = ops.reshape(stacked, (-1, source, channels))
        conv = ops.reshape(location_conv(states, kernel), (-1, filters))
        d_projection = ops.matmul(ops.transpose(conv), d_term)
        d_conv = ops.matmul(d_term, ops.transpose(projection))
        # The kernel's gradient: the windows of the zero-padded states
        # `(T B S, k C)` against the convolution's gradient.
        half = (width - 1) // 2
        padded = ops.pad(states, [[0, 0], [half, half], [0, 0]])
        windows = ops.stack(
            [
                padded[:, j : j - width + 1 if j < width - 1 else None]
                for j in range(width)
            ],
            axis=2,
        )
        windows = ops.reshape(windows, (-1, width * channels))
        d_kernel = ops.reshape(
            ops.matmul(ops.transpose(windows), d_conv),
            (width, channels, filters),
        )
        return additive + (d_kernel, d_projection)
