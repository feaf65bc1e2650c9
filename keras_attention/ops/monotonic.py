"""Monotonic attention distributions (Raffel et al., 2017), pure functions.

Written with `keras.ops` only and owning no weights, so they can be tested
against numpy and against TensorFlow Addons 0.23's functions of the same
names (`tfa.seq2seq.safe_cumprod`, `tfa.seq2seq.monotonic_attention`).

Reference:
    - [Raffel et al., 2017](https://arxiv.org/abs/1704.00784)
"""

from typing import Tuple

import keras
import numpy as np
from keras import ops

from keras_attention.typing import Tensor

MODES = ("parallel", "recursive", "hard")


def check_mode(mode: str) -> str:
    """`mode` if it is one of `MODES`, else a `ValueError`."""
    if mode not in MODES:
        raise ValueError(
            "`mode` must be one of 'parallel', 'recursive' or 'hard'. "
            f"Received: mode={mode!r}"
        )
    return mode


def exclusive_cumsum(x: Tensor, axis: int = -1) -> Tensor:
    """`cumsum` shifted right by one: `[0, x0, x0 + x1, ...]`."""
    return ops.cumsum(x, axis=axis) - x


def safe_cumprod(x: Tensor, axis: int = -1, exclusive: bool = False) -> Tensor:
    """Cumulative product computed in log space, `exp(cumsum(log(x)))`.

    `x` is clipped to `[tiny, 1]` first (`tiny` the dtype's smallest normal
    number), so neither the product nor its gradient underflows to `0 * inf`
    as `cumprod` of very small values does. Same as TFA's `safe_cumprod`.

    Args:
        x: Tensor with values in `[0, 1]`.
        axis: Axis of the product. Defaults to `-1`.
        exclusive: If `True`, the product is shifted right by one, starting
            with `1`. Defaults to `False`.

    Returns:
        The cumulative product, same shape and dtype as `x`.
    """
    x = ops.convert_to_tensor(x)
    dtype = keras.backend.standardize_dtype(x.dtype)
    tiny = float(np.finfo(dtype).tiny)
    logs = ops.log(ops.clip(x, tiny, 1.0))
    if exclusive:
        return ops.exp(exclusive_cumsum(logs, axis=axis))
    return ops.exp(ops.cumsum(logs, axis=axis))


def monotonic_attention(
    p_choose: Tensor, previous_attention: Tensor, mode: str
) -> Tensor:
    """The expected monotonic alignment given the choosing probabilities.

    With `p_i` the probability of stopping at source position `i` and
    `a_prev` the previous step's alignment, the expected alignment is
    (Raffel et al., 2017, eq. 9-12):

        q_i = (1 - p_{i-1}) q_{i-1} + a_prev_i,   q_0 = a_prev_0
        a_i = p_i q_i

    - `"recursive"`: the recurrence itself, in a scan over the source
      positions: exact, slowest.
    - `"parallel"`: its closed form with cumulative sums and products,
      `a = p * cumprod(1 - p) * cumsum(a_prev / cumprod(1 - p))` with the
      exclusive `safe_cumprod`, and the divisor clipped to `[1e-10, 1]`: fast,
      inexact where the products get tiny.
    - `"hard"`: `p` must be 0 or 1; the first chosen position at or after
      the previous one gets weight 1.

    Same maths and numbers as TFA 0.23's `monotonic_attention`.

    Args:
        p_choose: `(batch_size, S)` choosing probabilities in `[0, 1]`.
        previous_attention: `(batch_size, S)` alignment of the previous step;
            one-hot on position 0 before the first step.
        mode: `"parallel"`, `"recursive"` or `"hard"`.

    Returns:
        The `(batch_size, S)` alignment, in the dtype of `p_choose`. Each row
        is non-negative and sums to at most 1 (the rest is the probability
        of attending to no position).

    Raises:
        ValueError: if `mode` is not one of the three modes.
    """
    check_mode(mode)
    p_choose = ops.convert_to_tensor(p_choose)
    previous_attention = ops.cast(previous_attention, p_choose.dtype)
    if mode == "recursive":
        return _recursive(p_choose, previous_attention)
    if mode == "parallel":
        cumprod = safe_cumprod(1.0 - p_choose, axis=1, exclusive=True)
        return (
            p_choose
            * cumprod
            * ops.cumsum(
                previous_attention / ops.clip(cumprod, 1e-10, 1.0), axis=1
            )
        )
    # Hard: drop the positions before the previous one, then keep the first
    # chosen position: p * exclusive_cumprod(1 - p).
    p_choose = p_choose * ops.cumsum(previous_attention, axis=1)
    return p_choose * _exclusive_cumprod(1.0 - p_choose)


def _exclusive_cumprod(x: Tensor):
    """Exact exclusive `cumprod` along axis 1 (`keras.ops` has no cumprod
    with `exclusive`): shift right by one, with a leading 1."""
    shifted = ops.concatenate([ops.ones_like(x[:, :1]), x[:, :-1]], axis=1)
    return ops.cumprod(shifted, axis=1)


def _recursive(p_choose: Tensor, previous_attention: Tensor):
    """The recurrence of `monotonic_attention`, in a scan over positions.

    The scan runs over one extra position at the end (`p = 0`, `a_prev =
    0`), cut off after: the recurrence never looks ahead, so the values are
    the same, and a zero-length memory gives a `(batch_size, 0)` result on
    every backend instead of indexing an empty axis.
    """
    pad = [[0, 0], [0, 1]]
    p_choose = ops.pad(p_choose, pad)
    previous_attention = ops.pad(previous_attention, pad)
    shifted = ops.concatenate(
        [ops.ones_like(p_choose[:, :1]), 1.0 - p_choose[:, :-1]], axis=1
    )

    def step(q: Tensor, inputs: Tuple[Tensor, Tensor]):
        keep, prev = inputs
        q = keep * q + prev
        return q, q

    _, q = ops.scan(
        step,
        ops.zeros_like(p_choose[:, 0]),
        (ops.transpose(shifted), ops.transpose(previous_attention)),
    )
    return (p_choose * ops.transpose(q))[:, :-1]
