"""Checks of tensors: shapes, masks, batch sizes, dtypes.

A tensor is checked for what its static shape and dtype say; `None` sizes
are unknown and agree with any size.
"""

from typing import Any
from typing import Optional

import keras
import numpy as np
from keras import ops

from keras_attention.checks.errors import ArgumentTypeError
from keras_attention.checks.errors import owner_prefix
from keras_attention.checks.errors import shape_str
from keras_attention.checks.scalars import concrete_value
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


def is_floating(dtype: Any) -> bool:
    """Whether `dtype` (any spelling Keras accepts) is a floating type."""
    return "float" in keras.backend.standardize_dtype(dtype)


def is_tensor(value: Any) -> bool:
    """Whether `value` is a backend tensor (eager or traced), not a Python
    or numpy value."""
    return ops.is_tensor(value) or isinstance(value, keras.KerasTensor)


def shapes_compatible(shape: Shape, expected: Shape) -> bool:
    """Same rank and equal sizes wherever both are known."""
    shape, expected = tuple(shape), tuple(expected)
    return len(shape) == len(expected) and all(
        s is None or e is None or s == e for s, e in zip(shape, expected)
    )


def check_mask(
    owner: str, name: str, mask: Optional[Tensor], expected_shape: Shape
) -> Optional[Tensor]:
    """A boolean mask of `expected_shape`, or `None` for no mask.

    Boolean and integer masks are accepted (integer: non-zero = keep).
    Floating masks are refused: a float mask of `0.5` has no meaning here.

    Args:
        owner: The class name that prefixes the message.
        name: The argument's name.
        mask: The mask, or `None`.
        expected_shape: The expected shape (`None` for unknown sizes).

    Raises:
        ValueError: on a shape that does not match or a floating dtype.
    """
    if mask is None:
        return None
    if not shapes_compatible(mask.shape, expected_shape):
        raise ValueError(
            f"{owner}: `{name}` must have shape {shape_str(expected_shape)}. "
            f"Received: {name}.shape={shape_str(mask.shape)}"
        )
    dtype = keras.backend.standardize_dtype(mask.dtype)
    if is_floating(dtype):
        raise ValueError(
            f"{owner}: `{name}` must be a boolean (or integer 0/1) mask, "
            f"True = keep. Received: {name}.dtype={dtype}"
        )
    return ops.cast(mask, "bool")


def check_same_batch(owner: str, **shapes) -> None:
    """Checks that the known batch sizes (first dimensions) are equal.

    Args:
        owner: The class name that prefixes the message.
        **shapes: The shapes, by argument name, in the message's order.

    Raises:
        ValueError: if two known batch sizes differ.
    """
    known = {tuple(s)[0] for s in shapes.values() if tuple(s)[0] is not None}
    if len(known) > 1:
        names = [f"`{n}`" for n in shapes]
        names = ", ".join(names[:-1]) + " and " + names[-1]
        received = ", ".join(
            f"{n}.shape={shape_str(s)}" for n, s in shapes.items()
        )
        raise ValueError(
            f"{owner}: {names} must have the same batch size. "
            f"Received: {received}"
        )


def check_feature_shape(
    owner: str, name: str, shape: Shape, layout: str
) -> Shape:
    """A shape of the rank of `layout` whose last (feature) size is known.

    Args:
        owner: The class name that prefixes the message.
        name: The argument's name.
        shape: The shape to check.
        layout: The expected layout, e.g. `"(batch_size, S, D)"`; its last
            name is the feature size.

    Returns:
        The shape, as a tuple.

    Raises:
        ValueError: on another rank or an unknown feature size.
    """
    shape = tuple(shape)
    names = [n.strip() for n in layout.strip("()").split(",")]
    if len(shape) != len(names) or shape[-1] is None:
        raise ValueError(
            f"{owner}: `{name}` must have shape {layout} with a known "
            f"{names[-1]}. Received: {name}.shape={shape_str(shape)}"
        )
    return shape


def to_tensor(name: str, value: Any, owner: Optional[str] = None) -> Tensor:
    """`value` as a backend tensor, or an error naming the argument for a
    value no backend makes a numeric tensor of (a string, `None`, ragged
    lists).

    Raises:
        ArgumentTypeError: for such a value.
    """
    if not isinstance(value, (str, bytes)) and value is not None:
        try:
            return ops.convert_to_tensor(value)
        except Exception:  # Each backend raises its own error here.
            pass
    raise ArgumentTypeError(
        f"{owner_prefix(owner)}`{name}` must be a number or a numeric "
        f"tensor. Received: {name}={value!r:.80} of type "
        f"{type(value).__name__}"
    )


def check_ids(
    name: str,
    ids: Any,
    vocab_size: Optional[int],
    owner: Optional[str] = None,
    layout: str = "(batch_size, S)",
) -> Tensor:
    """Token ids of the rank of `layout`, in `[0, vocab_size)`, as int32.

    The dtype and the rank are checked always, the values only where they
    are concrete (`concrete_value`: not inside a traced function, where a
    caller decides what ids outside the vocabulary mean).

    Args:
        name: The argument's name.
        ids: Integer ids: a tensor, a numpy array or nested lists.
        vocab_size: The vocabulary size (`None`: no upper bound).
        owner: The class or function name that prefixes the message.
        layout: The expected shape, e.g. `"(batch_size, S)"`.

    Returns:
        `ids` as an int32 tensor.

    Raises:
        ValueError: for a non-integer dtype, another rank, or an id outside
            `[0, vocab_size)`; the message names the argument, the expected
            and the received value (the first offending id and its index).
        ArgumentTypeError: for a value that is not numeric at all.
    """

    prefix = owner_prefix(owner)
    tensor = to_tensor(name, ids, owner)
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    if "int" not in dtype:
        raise ValueError(
            f"{prefix}`{name}` must be integer token ids. Received: "
            f"{name}.dtype={dtype}"
        )
    rank = len(layout.strip("()").split(","))
    if len(tensor.shape) != rank:
        raise ValueError(
            f"{prefix}`{name}` must have shape {layout}. Received: "
            f"{name}.shape={shape_str(tensor.shape)}"
        )
    value = concrete_value(tensor)
    if value is not None and value.size:
        high = None if vocab_size is None else int(vocab_size)
        bad = value < 0 if high is None else (value < 0) | (value >= high)
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            where = ", ".join(str(i) for i in index)
            expected = (
                "non-negative token ids" if high is None
                else f"token ids in [0, {high})"
            )
            raise ValueError(
                f"{prefix}`{name}` must hold {expected}. Received: "
                f"{name}[{where}]={int(value[index])}"
            )
    return ops.cast(tensor, "int32")
