"""Argument checks shared by the package's layers, decoders and plots.

Internal: not part of the public API (nothing here is re-exported by
`keras_attention`), but the one place each check is written. Every check
raises a `ValueError` that names the argument, the expected and the
received value (an `ArgumentTypeError`, both a `TypeError` and a
`ValueError`, for a value of the wrong type).

Python and numpy values are checked eagerly. A tensor is checked for what
its static shape and dtype say; its values only where they are concrete
(`concrete_value`): inside a traced function a decoder clamps them, as its
docstring says.
"""

import math
import numbers
from typing import Any
from typing import Optional

import keras
import numpy as np
from keras import ops

from keras_attention.typing import Shape
from keras_attention.typing import Tensor


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type: both a `TypeError` and a
    `ValueError`, so that either `except` catches it."""


def shape_str(shape: Shape) -> str:
    """A shape as Python writes a tuple: `(2, None, 4)`, `(3,)`."""
    return str(tuple(None if d is None else int(d) for d in shape))


def is_floating(dtype: Any) -> bool:
    """Whether `dtype` (any spelling Keras accepts) is a floating type."""
    return "float" in keras.backend.standardize_dtype(dtype)


def check_positive_int(
    name: str, value: Any, allow_none: bool = False
) -> Optional[int]:
    """`value` as an `int` if it is a positive integer (not a bool).

    Args:
        name: The argument's name, for the message.
        value: The value to check.
        allow_none: Whether `None` is accepted (and returned).

    Raises:
        ValueError: if `value` is not a positive integer (or `None` where
            allowed).
    """
    if value is None and allow_none:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 1
    ):
        expected = "a positive integer or None" if allow_none else (
            "a positive integer"
        )
        raise ValueError(
            f"`{name}` must be {expected}. Received: {name}={value!r}"
        )
    return int(value)


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


def _prefix(owner: Optional[str]) -> str:
    return f"{owner}: " if owner else ""


def is_tensor(value: Any) -> bool:
    """Whether `value` is a backend tensor (eager or traced), not a Python
    or numpy value."""
    return ops.is_tensor(value) or isinstance(value, keras.KerasTensor)


def python_scalar(value: Any) -> Any:
    """A numpy scalar or 0-d array as the Python number it holds; any other
    value unchanged."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def concrete_value(value: Any) -> Optional[np.ndarray]:
    """The numpy value of an eager tensor or array; `None` for a tensor
    whose value is not known yet (inside a `tf.function`, a JAX trace, a
    symbolic `keras.Input`)."""
    if value is None or isinstance(value, keras.KerasTensor):
        return None
    if isinstance(value, (np.ndarray, np.generic, numbers.Number, list,
                          tuple)):
        return np.asarray(value)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        if not tf.executing_eagerly() or not hasattr(value, "numpy"):
            return None
    elif keras.backend.backend() == "jax":
        import jax

        if isinstance(value, jax.core.Tracer):
            return None
    try:
        return np.asarray(ops.convert_to_numpy(value))
    except Exception:  # Any tracer a backend refuses to read.
        return None


def check_float(
    name: str,
    value: Any,
    low: Optional[float] = None,
    high: Optional[float] = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
    finite: bool = True,
    owner: Optional[str] = None,
) -> Optional[float]:
    """`value` as a Python `float`, checked against its range.

    Args:
        name: The argument's name, for the message.
        value: A Python or numpy real number (not a bool).
        low, high: Optional bounds of the range.
        low_open, high_open: Whether the bounds are excluded.
        allow_none: Whether `None` is accepted (and returned).
        finite: Whether NaN and infinities are refused. NaN always is.
        owner: Optional class or function name that prefixes the message.

    Raises:
        ArgumentTypeError: for a value that is not a real number.
        ValueError: for NaN, an infinity (with `finite`) or a value out of
            the range.
    """
    if value is None and allow_none:
        return None
    value = python_scalar(value)
    parts = []
    if finite:
        parts.append("finite")
    expected = " ".join(parts + ["number"])
    if low is not None:
        expected += f" {'>' if low_open else '>='} {low}"
    if high is not None:
        joint = " and" if low is not None else ""
        expected += f"{joint} {'<' if high_open else '<='} {high}"
    if allow_none:
        expected += " or None"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(
            f"{_prefix(owner)}`{name}` must be a {expected}. Received: "
            f"{name}={value!r} of type {type(value).__name__}"
        )
    value = float(value)
    bad = math.isnan(value) or (finite and math.isinf(value))
    if low is not None:
        bad = bad or value < low or (low_open and value == low)
    if high is not None:
        bad = bad or value > high or (high_open and value == high)
    if bad:
        raise ValueError(
            f"{_prefix(owner)}`{name}` must be a {expected}. "
            f"Received: {name}={value!r}"
        )
    return value


def check_int(
    name: str,
    value: Any,
    low: Optional[int] = None,
    allow_none: bool = False,
    owner: Optional[str] = None,
) -> Optional[int]:
    """`value` as a Python `int` at least `low`.

    Raises:
        ArgumentTypeError: for a value that is not an integer (a bool, a
            float, a string).
        ValueError: for a value below `low`.
    """
    if value is None and allow_none:
        return None
    value = python_scalar(value)
    expected = "an integer" + (f" >= {low}" if low is not None else "")
    if allow_none:
        expected += " or None"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{_prefix(owner)}`{name}` must be {expected}. Received: "
            f"{name}={value!r} of type {type(value).__name__}"
        )
    if low is not None and value < low:
        raise ValueError(
            f"{_prefix(owner)}`{name}` must be {expected}. "
            f"Received: {name}={value!r}"
        )
    return int(value)


def check_bool(name: str, value: Any, owner: Optional[str] = None) -> bool:
    """`value` if it is a Python (or numpy) bool.

    Raises:
        ArgumentTypeError: for any other value (`"False"` is a string).
    """
    value = python_scalar(value)
    if not isinstance(value, bool):
        raise ArgumentTypeError(
            f"{_prefix(owner)}`{name}` must be a bool. Received: "
            f"{name}={value!r} of type {type(value).__name__}"
        )
    return value


def check_choice(
    name: str, value: Any, choices: tuple, owner: Optional[str] = None
) -> Any:
    """`value` if it is one of `choices`.

    Raises:
        ValueError: for any other value.
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"{_prefix(owner)}`{name}` must be one of {choices}. "
            f"Received: {name}={value!r}"
        )
    return value


def check_scalar_tensor(
    name: str, value: Tensor, kind: str, owner: Optional[str] = None
) -> Tensor:
    """A scalar tensor of an integer (`kind="int"`) or a real (`"float"`,
    integers accepted) dtype, cast to int32 or float32.

    Raises:
        ValueError: for another rank or dtype.
    """
    dtype = keras.backend.standardize_dtype(value.dtype)
    ok_dtype = "int" in dtype if kind == "int" else (
        "int" in dtype or "float" in dtype
    )
    if len(value.shape) != 0 or not ok_dtype or dtype == "bool":
        expected = "an integer" if kind == "int" else "a real"
        raise ValueError(
            f"{_prefix(owner)}`{name}` must be a Python number or a scalar "
            f"tensor of {expected} dtype. Received: {name}.shape="
            f"{shape_str(value.shape)}, {name}.dtype={dtype}"
        )
    return ops.cast(value, "int32" if kind == "int" else "float32")
