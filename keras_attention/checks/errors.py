"""What every argument check's message shares: the error type of a value of
the wrong type, and the prefix that names the class or function checked."""

from typing import Optional


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type: both a `TypeError` and a
    `ValueError`, so that either `except` catches it."""


def owner_prefix(owner: Optional[str]) -> str:
    """`"Owner: "`, the start of a message about an argument of `owner`
    (a class or function name); `""` for no owner."""
    return f"{owner}: " if owner else ""
