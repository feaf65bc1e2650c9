"""Helpers of the fused loop (`loop`): its scans, and the packing of its
per-step outputs into one tensor (a custom gradient has one output) with
static widths where the source length is unknown when traced."""

from typing import Callable

import keras
from keras import ops

from keras_attention.typing import Tensor


def scan(
    step: Callable, init: tuple, sequences: tuple, reverse: bool = False
) -> tuple:
    """`ops.scan` over several time-major tensors of any dtypes.

    On TensorFlow `ops.scan` fails on several scanned tensors whose length
    is unknown when traced (a `tf.function` with a `None` time dimension):
    there it scans the step index and takes each tensor's slice."""
    if keras.backend.backend() != "tensorflow":
        return ops.scan(step, init, sequences, reverse=reverse)

    def indexed(carry: tuple, t: Tensor):
        return step(carry, tuple(ops.take(s, t, axis=0) for s in sequences))

    steps = ops.arange(ops.shape(sequences[0])[0])
    return ops.scan(indexed, init, steps, reverse=reverse)


def add(*parts: tuple) -> list:
    """The sums of the tensors of `parts` position by position; an empty
    part adds nothing."""
    parts = [p for p in parts if len(p)]
    return [sum(tensors[1:], tensors[0]) for tensors in zip(*parts)]


def join_sources(parts: list) -> Tensor:
    """`(T, B, S)` tensors as one `(T, B, S n)`, position by position (the
    source length may be unknown when traced)."""
    if len(parts) == 1:
        return parts[0]
    stacked = ops.stack(parts, axis=-1)
    shape = ops.shape(stacked)
    return ops.reshape(stacked, (shape[0], shape[1], -1))


def split_sources(joined: Tensor, count: int) -> list:
    """The `count` `(T, B, S)` tensors `_join_sources` joined."""
    if count == 1:
        return [joined]
    shape = ops.shape(joined)
    stacked = ops.reshape(joined, (shape[0], shape[1], -1, count))
    return [stacked[..., i] for i in range(count)]


def unpack(packed: Tensor, widths: list) -> list:
    """The slices of `packed`'s last axis of `widths`, and the rest.

    Each slice keeps its static width, which slicing a tensor of unknown
    width (the source length is unknown in a traced function) loses."""
    pieces = []
    start = 0
    for width in widths:
        piece = packed[..., start : start + width]
        pieces.append(
            ops.reshape(piece, tuple(ops.shape(piece)[:-1]) + (width,))
        )
        start += width
    return pieces + [packed[..., start:]]
