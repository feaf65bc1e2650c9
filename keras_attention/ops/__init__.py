"""Pure attention functions, written with `keras.ops` and owning no weights.

The layers of `keras_attention` hold the weights and call these functions,
which can also be used, tested against numpy and composed on their own, on
every Keras backend:

- `dot_score`, `multiplicative_key_projection`, `additive_score`,
  `additive_block_shape`: unnormalised scores `(batch_size, Tq, S)`.
- `masked_softmax`: the softmax that gives masked positions exactly zero.
- `monotonic_attention`, `safe_cumprod`: the monotonic alignment of Raffel
  et al. (2017) and the cumulative product it needs.
"""

from keras_attention.ops.masking import masked_softmax
from keras_attention.ops.monotonic import monotonic_attention
from keras_attention.ops.monotonic import safe_cumprod
from keras_attention.ops.scores import additive_block_shape
from keras_attention.ops.scores import additive_score
from keras_attention.ops.scores import dot_score
from keras_attention.ops.scores import multiplicative_key_projection

__all__ = [
    "additive_block_shape",
    "additive_score",
    "dot_score",
    "masked_softmax",
    "monotonic_attention",
    "multiplicative_key_projection",
    "safe_cumprod",
]
