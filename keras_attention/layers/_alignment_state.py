"""Checks and helpers of the alignment state of `StatefulAttention`.

A stateful attention layer (monotonic, location-sensitive) carries an
alignment state from one decoder step to the next: a tensor, or a dict of
tensors, each of shape `(batch_size, S, ...)`. These functions check the
step-wise call and the state, and keep the state of masked rows.
"""

from typing import Any

import keras
from keras import ops
from keras import tree

from keras_attention.checks import is_floating
from keras_attention.checks import shape_str
from keras_attention.checks import shapes_compatible
from keras_attention.typing import NestedTensor
from keras_attention.typing import Tensor


def state_dtype(compute_dtype: str) -> str:
    """The dtype of an alignment state: float32, or float64 for float64.

    Cumulative sums and products of alignments lose too much precision in
    float16 and bfloat16, so mixed precision policies keep the state in
    float32.
    """
    if keras.backend.standardize_dtype(compute_dtype) == "float64":
        return "float64"
    return "float32"


def check_stateful_step(
    owner: str, query: Tensor, use_causal_mask: bool = False
) -> None:
    """Raises a `ValueError` unless `query` is one step, `(batch_size, Dq)`.

    Args:
        owner: The class name that prefixes the message.
        query: The query (or its `KerasTensor`).
        use_causal_mask: Must be `False` (one step has no causal order).
    """
    if len(query.shape) != 2 or use_causal_mask:
        raise ValueError(
            f"{owner} is stateful: it runs one decoder step at a time "
            "(AttentionWrapper / AttentionRNN), with a query of shape "
            "(batch_size, Dq) and no causal mask. Received: "
            f"query.shape={shape_str(query.shape)}, "
            f"use_causal_mask={use_causal_mask}"
        )


def check_state_structure(
    owner: str, state: NestedTensor, expected: NestedTensor
) -> NestedTensor:
    """`state` if it has the structure and shapes of `expected`.

    Args:
        owner: The class name that prefixes the message.
        state: The alignment state received, or `None`.
        expected: The expected structure of `keras.KerasTensor`s (`None`
            for sizes that are not known).

    Raises:
        ValueError: if `state` is `None`, has another structure, a tensor of
            another shape (where both are known) or a non-floating tensor.
    """
    if state is None:
        raise ValueError(
            f"{owner} is stateful: `attend` needs the previous step's "
            "`alignment_state` (start from `initial_alignment_state(mask)` "
            "or `prepare_memory(...)['alignment_state']`). Received: "
            "alignment_state=None"
        )
    try:
        tree.assert_same_structure(state, expected)
    except (TypeError, ValueError):
        raise ValueError(
            f"{owner}: `alignment_state` must have the structure of "
            f"{_describe(expected)}. Received: alignment_state="
            f"{_describe(state)}"
        ) from None
    for got, want in zip(tree.flatten(state), tree.flatten(expected)):
        if not shapes_compatible(got.shape, want.shape):
            raise ValueError(
                f"{owner}: every tensor of `alignment_state` must have shape "
                f"{shape_str(want.shape)}. Received: alignment_state="
                f"{_describe(state)}"
            )
        if not is_floating(got.dtype):
            raise ValueError(
                f"{owner}: `alignment_state` must hold floating point "
                f"tensors. Received: alignment_state={_describe(state)}"
            )
    return state


def _describe(structure: NestedTensor):
    def one(x: Any):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            dtype = keras.backend.standardize_dtype(x.dtype)
            return f"<tensor shape={shape_str(x.shape)} dtype={dtype}>"
        return repr(x)

    if isinstance(structure, dict):
        items = ", ".join(f"{k!r}: {one(v)}" for k, v in structure.items())
        return "{" + items + "}"
    if isinstance(structure, (list, tuple)):
        return "(" + ", ".join(one(x) for x in structure) + ")"
    return one(structure)


def keep_rows(
    keep: Tensor, new_state: NestedTensor, old_state: NestedTensor
) -> NestedTensor:
    """`new_state` where `keep` `(batch_size,)` is `True`, else `old_state`."""

    def select(new: Tensor, old: Tensor):
        shape = (-1,) + (1,) * (len(old.shape) - 1)
        return ops.where(ops.reshape(keep, shape), new, old)

    return tree.map_structure(select, new_state, old_state)


def keep_positions(mask: Tensor, state: NestedTensor) -> NestedTensor:
    """`state` with zeros where `mask` `(batch_size, S)` is `False`."""

    def select(tensor: Tensor):
        keep = ops.reshape(
            mask, tuple(ops.shape(mask)) + (1,) * (len(tensor.shape) - 2)
        )
        return ops.where(keep, tensor, ops.zeros_like(tensor))

    return tree.map_structure(select, state)
