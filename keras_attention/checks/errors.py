"""What every argument check's message shares: the error type of a value of
the wrong type, the prefix that names the class or function checked, and
shapes written as Python writes a tuple."""

from typing import Optional

from keras_attention.typing import Shape


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type: both a `TypeError` and a
    `ValueError`, so that either `except` catches it."""


def owner_prefix(owner: Optional[str]) -> str:
    """`"Owner: "`, the start of a message about an argument of `owner`
    (a class or function name); `""` for no owner."""
    return f"{owner}: " if owner else ""


def shape_str(shape: Shape) -> str:
    """A shape as Python writes a tuple: `(2, None, 4)`, `(3,)`."""
    return str(tuple(None if d is None else int(d) for d in shape))
