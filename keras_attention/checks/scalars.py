"""Checks of Python and numpy scalars, and of scalar tensors.

Python and numpy values are checked eagerly. A tensor's values are checked
only where they are concrete (`concrete_value`): inside a traced function
a decoder clamps them, as its docstring says.
"""

import math
import numbers
from typing import Any
from typing import Optional

import keras
import numpy as np
from keras import ops

from keras_attention.checks.errors import ArgumentTypeError
from keras_attention.checks.errors import owner_prefix
from keras_attention.checks.errors import shape_str
from keras_attention.typing import Tensor


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
    if low == 0:
        parts.append("positive" if low_open else "non-negative")
    if finite:
        parts.append("finite")
    expected = " ".join(parts + ["number"])
    if low is not None and low != 0:
        expected += f" {'>' if low_open else '>='} {low}"
    if high is not None:
        joint = " and" if low not in (None, 0) else ""
        expected += f"{joint} {'<' if high_open else '<='} {high}"
    if allow_none:
        expected += " or None"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(
            f"{owner_prefix(owner)}`{name}` must be a {expected}. Received: "
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
            f"{owner_prefix(owner)}`{name}` must be a {expected}. "
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
    expected = {0: "a non-negative integer", 1: "a positive integer"}.get(
        low, "an integer" + (f" >= {low}" if low is not None else "")
    )
    if allow_none:
        expected += " or None"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{owner_prefix(owner)}`{name}` must be {expected}. Received: "
            f"{name}={value!r} of type {type(value).__name__}"
        )
    if low is not None and value < low:
        raise ValueError(
            f"{owner_prefix(owner)}`{name}` must be {expected}. "
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
            f"{owner_prefix(owner)}`{name}` must be a bool. Received: "
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
            f"{owner_prefix(owner)}`{name}` must be one of {choices}. "
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
            f"{owner_prefix(owner)}`{name}` must be a Python number or a "
            f"scalar tensor of {expected} dtype. Received: {name}.shape="
            f"{shape_str(value.shape)}, {name}.dtype={dtype}"
        )
    return ops.cast(value, "int32" if kind == "int" else "float32")
