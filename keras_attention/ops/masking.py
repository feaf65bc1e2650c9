"""Masks of the attention layers: the masked softmax and the causal mask."""

from typing import Optional

import keras
import numpy as np
from keras import ops

from keras_attention.typing import Tensor


def masked_softmax(scores: Tensor, mask: Optional[Tensor] = None) -> Tensor:
    """Softmax over the last axis that gives masked positions exactly zero.

    Runs in float32 (or float64 for float64 scores). Masked scores are
    replaced by the dtype's lowest finite value, so `exp(lowest - max)` is
    exactly zero next to any kept score; a row whose positions are all
    masked comes out uniform and is then set to zeros. No `0 * inf` appears
    in either pass: the final `where` sends no gradient to masked
    positions, and the softmax's own gradient is zero where its output is.

    Args:
        scores: `(..., S)` unnormalised scores.
        mask: Optional boolean tensor broadcastable to `scores`, `True` = keep.

    Returns:
        Weights in float32 (float64 for float64 scores), same shape as `scores`.
    """
    if scores.dtype != "float64":
        scores = ops.cast(scores, "float32")
    if mask is None:
        return ops.softmax(scores, axis=-1)
    lowest = float(np.finfo(keras.backend.standardize_dtype(scores.dtype)).min)
    weights = ops.softmax(ops.where(mask, scores, lowest), axis=-1)
    return ops.where(mask, weights, 0.0)


def score_mask(
    scores: Tensor,
    value_mask: Optional[Tensor] = None,
    use_causal_mask: bool = False,
) -> Optional[Tensor]:
    """The boolean mask of `(batch_size, Tq, S)` scores, or `None`.

    Args:
        scores: `(batch_size, Tq, S)` scores (only their shape is used).
        value_mask: Optional boolean `(batch_size, S)`, `True` = keep.
        use_causal_mask: Whether query `i` only sees source positions
            `j <= i`.

    Returns:
        A boolean tensor broadcastable to `scores`, or `None` for no mask.
    """
    mask = None
    if value_mask is not None:
        mask = ops.expand_dims(value_mask, 1)  # (batch, 1, S)
    if use_causal_mask:
        shape = ops.shape(scores)
        rows = ops.expand_dims(ops.arange(shape[1]), -1)
        cols = ops.expand_dims(ops.arange(shape[2]), 0)
        causal = ops.expand_dims(rows >= cols, 0)  # (1, Tq, S)
        mask = causal if mask is None else ops.logical_and(mask, causal)
    return mask


def zero_masked_positions(tensor: Tensor, mask: Optional[Tensor]) -> Tensor:
    """`tensor` `(batch_size, S, D)` with zeros where `mask` is `False`.

    Weights are exactly zero at masked positions, but `0 * nan` is `nan`:
    a NaN or inf stored at a masked position would reach the context (and
    the gradients) through `weights @ value`. With `ops.where` it never
    does, forward or backward.
    """
    if mask is None:
        return tensor
    return ops.where(
        ops.expand_dims(mask, -1), tensor, ops.zeros_like(tensor)
    )
