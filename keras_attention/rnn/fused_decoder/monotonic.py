"""The monotonic scores of the fused step-wise decoder ("parallel" mode).

`BahdanauMonotonicAttention` and `LuongMonotonicAttention`: the energy
`e` of the additive or the dot score, the choosing probabilities `p =
sigmoid(e + r)` (zero at masked positions) and the expected alignment of
Raffel et al. (2017) in its closed form,

    c = exclusive cumprod(1 - p)      (in log space, `safe_cumprod`)
    alpha = p c cumsum(alpha_prev / clip(c, 1e-10, 1))

which depends on the previous step's alignment, the state this score
carries. The forward step is `ops.monotonic.monotonic_attention`; a
backward step recomputes `p` and `c` from the energies the forward loop
kept and sends the gradient of `alpha` to the energies and to
`alpha_prev` through the cumulative sums (reverse cumulative sums) and
the clips (zero where a clip is active), as autodiff of the same ops does.
The state is in the layer's `state_dtype` (float32 under mixed precision).
"""

import keras
import numpy as np
from keras import ops

from keras_attention.ops.monotonic import monotonic_attention
from keras_attention.ops.monotonic import safe_cumprod
from keras_attention.rnn.fused_decoder.scores import FusedAdditive
from keras_attention.rnn.fused_decoder.scores import FusedDot
from keras_attention.typing import Tensor


class _LuongEnergy(FusedDot):
    """`e = g q . (W k)` (`g` with `scale=True`): the dot score's maths with
    the keys scaled by the layer's gain."""

    def inputs(self, state: dict) -> tuple:
        keys = state["keys"]
        if self.attention.scale:
            keys = keys * ops.cast(self.attention.score_gain, keys.dtype)
        return (keys,)


def _reverse_cumsum(x: Tensor) -> Tensor:
    """`sum_{j >= i} x_j` along the last axis (summed from the end, as
    autodiff of `cumsum` does: no cancellation)."""
    return ops.flip(ops.cumsum(ops.flip(x, -1), axis=-1), -1)


class FusedMonotonic:
    """A monotonic score: an energy (`FusedAdditive` or the dot score's),
    the score bias `r` (the last input) and the alignment as its state."""

    state_count = 1

    def __init__(self, attention: keras.layers.Layer, additive: bool):
        self.attention = attention
        self.state_dtype = attention.state_dtype
        self.energy = (FusedAdditive if additive else _LuongEnergy)(attention)

    # The energy's maths, with the score bias as a last input and the
    # energies kept for the backward step.
    def inputs(self, state: dict) -> tuple:
        bias = ops.cast(self.attention.score_bias, self.state_dtype)
        return self.energy.inputs(state) + (bias,)

    def saved_like(self, inputs: tuple, batch: Tensor) -> tuple:
        keys = inputs[0]
        return self.energy.saved_like(inputs[:-1], batch) + (
            ops.zeros_like(keys[..., 0]),
        )

    def outs_like(self, inputs: tuple, batch: Tensor) -> tuple:
        return self.energy.outs_like(inputs[:-1], batch)

    def prepare(self, inputs: tuple) -> tuple:
        return self.energy.prepare(inputs[:-1])

    def step(
        self, h: Tensor, inputs: tuple, constants: tuple, states: tuple
    ) -> tuple:
        energies, saved = self.energy.step(h, inputs[:-1], constants, ())
        return energies, saved + (energies,)

    def backward_step(
        self, d_e: Tensor, saved_t: tuple, inputs: tuple, constants: tuple,
        memory_mask: Tensor,
    ) -> tuple:
        return self.energy.backward_step(
            d_e, saved_t[:-1], inputs[:-1], constants, memory_mask
        )

    def grads(
        self, d_e: Tensor, outs: tuple, queries: Tensor, saved: tuple,
        inputs: tuple, previous_states: tuple,
    ) -> tuple:
        energy = self.energy.grads(
            d_e, outs, queries, saved[:-1], inputs[:-1], previous_states
        )
        d_bias = ops.sum(ops.cast(d_e, self.state_dtype))
        return energy + (d_bias,)

    # The state: the previous alignment.
    def initial_state(self, state: dict) -> tuple:
        # Whatever the state holds at masked positions never reaches a step.
        previous = ops.cast(state["alignment_state"], self.state_dtype)
        return (ops.where(state["memory_mask"], previous, 0.0),)

    def advance(self, weights: Tensor, states: tuple) -> tuple:
        return (ops.cast(weights, self.state_dtype),)

    def final_state(self, states: list) -> Tensor:
        return states[0]

    def state_backward(self, d_states: tuple) -> tuple:
        return d_states[0], (ops.zeros_like(d_states[0]),)

    def _choose(self, energies: Tensor, mask: Tensor, bias: Tensor) -> tuple:
        sigmoid = ops.sigmoid(ops.cast(energies, self.state_dtype) + bias)
        return sigmoid, ops.where(mask, sigmoid, 0.0)

    def weights(
        self, scores: Tensor, mask: Tensor, states: tuple, inputs: tuple
    ) -> Tensor:
        _, p_choose = self._choose(scores, mask, inputs[-1])
        return monotonic_attention(p_choose, states[0], "parallel")

    def weights_backward(
        self, d_weights: Tensor, weights: Tensor, saved_t: tuple,
        previous_t: tuple, memory_mask: Tensor, inputs: tuple,
    ) -> tuple:
        dtype = self.state_dtype
        keep = memory_mask > 0.5
        sigmoid, p = self._choose(saved_t[-1], keep, inputs[-1])
        previous = previous_t[0]
        d_weights = ops.cast(d_weights, dtype)
        # The forward's intermediate values (`monotonic_attention`).
        tiny = float(np.finfo(keras.backend.standardize_dtype(dtype)).tiny)
        x = 1.0 - p
        cumprod = safe_cumprod(x, axis=1, exclusive=True)
        clipped = ops.clip(cumprod, 1e-10, 1.0)
        ratio = previous / clipped
        sums = ops.cumsum(ratio, axis=1)
        # alpha = p * cumprod * sums.
        d_p = d_weights * cumprod * sums
        d_cumprod = d_weights * p * sums
        d_ratio = _reverse_cumsum(d_weights * p * cumprod)
        d_previous = d_ratio / clipped
        inside = ops.logical_and(cumprod >= 1e-10, cumprod <= 1.0)
        d_cumprod = d_cumprod - ops.where(inside, d_ratio * ratio / clipped, 0)
        # cumprod = exp(exclusive cumsum(log(clip(x, tiny, 1)))).
        d_sum = d_cumprod * cumprod
        d_logs = _reverse_cumsum(d_sum) - d_sum
        inside = ops.logical_and(x >= tiny, x <= 1.0)
        d_p = d_p - ops.where(inside, d_logs / ops.clip(x, tiny, 1.0), 0)
        d_e = ops.where(keep, d_p * sigmoid * (1.0 - sigmoid), 0.0)
        return d_e, (d_previous,)
