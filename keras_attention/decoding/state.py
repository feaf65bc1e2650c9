"""Tiling and re-gathering of nested decoder states, one helper each.

Beam search lays out the `beam_width` hypotheses of sentence `b` as rows
`b * beam_width` to `b * beam_width + beam_width - 1` (`tile_state`) and,
after every step, re-gathers every row from the hypothesis it extends
(`gather_state`). Both work on any nested structure (dict, tuple, list) of
tensors with a leading row axis, so a new piece of state (coverage, a
previous alignment) needs no new plumbing; `None` leaves stay `None`.
"""

import numbers

import keras
from keras import ops

from keras_attention.checks import check_positive_int
from keras_attention.checks import check_scalar_tensor
from keras_attention.checks import concrete_value
from keras_attention.checks import shape_str
from keras_attention.checks import to_tensor
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import Tensor


def tile_state(
    state: NestedTensor, multiplier: IntOrTensor
) -> NestedTensor:
    """Repeats every tensor of a nested state `multiplier` times on axis 0.

    Entry `b` of the batch becomes entries `b * multiplier` to
    `b * multiplier + multiplier - 1`, the layout beam search uses. Beam
    search calls this itself; it is public for step functions that need to
    tile something of their own.

    Args:
        state: Nested structure of tensors with a leading batch dimension
            (`None` leaves are kept).
        multiplier: Positive Python integer, or a scalar int tensor (on
            TensorFlow, for a beam width given as a graph input).

    Returns:
        The same structure, every tensor of shape
        `(batch_size * multiplier, ...)`.

    Raises:
        ValueError: if `multiplier` is not a positive integer or a scalar
            integer tensor.
    """
    if isinstance(multiplier, (numbers.Number, bool)):
        multiplier = check_positive_int("multiplier", multiplier)
    else:
        multiplier = check_scalar_tensor(
            "multiplier", to_tensor("multiplier", multiplier), "int"
        )
    return keras.tree.map_structure(
        lambda x: None if x is None else ops.repeat(x, multiplier, axis=0),
        state,
    )


def gather_state(state: NestedTensor, indices: Tensor) -> NestedTensor:
    """Row `i` of every tensor of a nested state becomes row `indices[i]`.

    Args:
        state: Nested structure of tensors with a leading row dimension
            (`None` leaves are kept).
        indices: int `(num_rows,)` tensor of row indices.

    Returns:
        The same structure, every tensor gathered on axis 0.

    Raises:
        ValueError: for `indices` that are not 1-D integers, or, where
            their values are known, outside the rows of `state`.
    """
    indices = to_tensor("indices", indices)
    dtype = keras.backend.standardize_dtype(indices.dtype)
    if "int" not in dtype or len(indices.shape) != 1:
        raise ValueError(
            "`indices` must be integer row indices of shape (num_rows,). "
            f"Received: indices.shape={shape_str(indices.shape)}, "
            f"indices.dtype={dtype}"
        )
    values = concrete_value(indices)
    leaves = [x for x in keras.tree.flatten(state) if x is not None]
    rows = leaves[0].shape[0] if leaves else None
    if values is not None and values.size and rows is not None and (
        values.min() < 0 or values.max() >= rows
    ):
        raise ValueError(
            f"`indices` must be row indices in [0, {rows}), the rows of "
            f"`state`. Received: indices={values.tolist()}"
        )
    return take_rows(state, indices)


def take_rows(state: NestedTensor, indices: Tensor) -> NestedTensor:
    """`gather_state` without its checks, for the decoders' loops (their
    indices are right by construction, and reading them at every step
    would cost a device sync)."""
    return keras.tree.map_structure(
        lambda x: None if x is None else gather(x, indices), state
    )


def gather(x: Tensor, indices: IntOrTensor, axis: int = 0) -> Tensor:
    """`keras.ops.take(x, indices, axis)` for indices known to lie in
    `[0, x.shape[axis])`, as the decoding loops' are by construction.

    On TensorFlow a plain `GatherV2`: `ops.take` first maps negative
    indices (`Less`, `Shape`, `StridedSlice`, `AddV2`, `SelectV2`), five
    ops per call, at every step of a loop, for indices that are never
    negative. Elsewhere `ops.take` (under XLA the extra ops fuse).
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.gather(x, indices, axis=axis)
    return ops.take(x, indices, axis=axis)


def take_per_row(x: Tensor, indices: Tensor) -> Tensor:
    """`x[b, indices[b]]` for every row `b` of a `(rows, n)` tensor, the
    indices int32 `(rows,)` in `[0, n)` by construction. On TensorFlow one
    batched `GatherV2` (`ops.take_along_axis` makes a dozen ops there, at
    every step of a loop)."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.gather(x, indices, axis=1, batch_dims=1)
    return ops.take_along_axis(x, ops.expand_dims(indices, 1), 1)[:, 0]
