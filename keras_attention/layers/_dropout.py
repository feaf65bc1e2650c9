"""Dropout of the attention weights: the one implementation.

`BaseAttention` applies it; loops that must not draw random numbers
inside (`AttentionRNN`'s scan) draw all steps' keep masks at once with
`draw_dropout_mask` and pass each step's mask to `attend`.
"""

from typing import Optional

import keras
from keras import ops

from keras_attention.typing import Shape
from keras_attention.typing import Tensor


class AttentionDropout:
    """Dropout of the weights of an attention layer (a `BaseAttention` part).

    Uses the layer's `dropout` rate and `seed_generator`.
    """

    def draw_dropout_mask(self, shape: Shape) -> Tensor:
        """A boolean keep mask of `shape` for `attention_dropout`.

        Each entry is `True` with probability `1 - dropout`, drawn from the
        layer's seed generator. Loops that must not draw random numbers
        inside (`AttentionRNN`'s scan) draw the masks of all steps at once.
        """
        return (
            keras.random.uniform(shape, seed=self.seed_generator)
            >= self.dropout
        )

    def attention_dropout(
        self,
        weights: Tensor,
        training: Optional[bool] = None,
        keep_mask: Optional[Tensor] = None,
    ) -> Tensor:
        """The weights with dropout: dropped entries 0, the others scaled.

        Kept entries are divided by `1 - dropout`. Outside training, or with
        `dropout=0`, the weights are returned unchanged.

        Args:
            weights: Attention weights, any shape.
            training: Python boolean, whether dropout is applied.
            keep_mask: Optional boolean mask of the shape of `weights`
                (`True` = keep). Defaults to `draw_dropout_mask(shape)`.
        """
        if not training or self.dropout == 0:
            return weights
        if keep_mask is None:
            keep_mask = self.draw_dropout_mask(ops.shape(weights))
        scale = ops.cast(1.0 / (1.0 - self.dropout), weights.dtype)
        return ops.where(keep_mask, weights * scale, ops.zeros_like(weights))

