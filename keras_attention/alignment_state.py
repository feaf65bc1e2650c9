"""Checks of the alignment state of the stateful attention layers.

Internal: not re-exported by `keras_attention`. A stateful layer (monotonic,
location-sensitive) carries the previous step's alignment from one decoder
step to the next; every tensor of that state has the batch size as leading
dimension and the number of source positions `S` as the second.
"""

import keras
from keras import tree

from keras_attention.checks import is_floating
from keras_attention.checks import shape_str
from keras_attention.checks import shapes_compatible


def state_dtype(compute_dtype: str) -> str:
    """The dtype of an alignment state: float32, or float64 for float64.

    Cumulative sums and products of alignments lose too much precision in
    float16 and bfloat16, so mixed precision policies keep the state in
    float32.
    """
    if keras.backend.standardize_dtype(compute_dtype) == "float64":
        return "float64"
    return "float32"


def check_alignment_state(owner: str, state, expected):
    """`state` if it has the structure, shapes and dtypes of `expected`.

    Args:
        owner: The class name that prefixes the message.
        state: The alignment state received, or `None`.
        expected: A state of the expected structure (e.g. the initial state
            for the same memory), or a structure of `(shape, dtype)` pairs.

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


def _describe(structure):
    def one(x):
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
