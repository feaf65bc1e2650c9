"""Inputs of the attention pictures: weights, tokens and their display.

Shared by the heatmaps (`heatmap.py`) and the terminal grid
(`text_grid.py`): weights and token lists from arrays, tensors, lists or
strings; the display width of Unicode text in a terminal (wide CJK
characters count two columns, combining marks none); right-to-left
tokens (Arabic, Hebrew) in display order.
"""

import unicodedata
from typing import Iterable
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple
from typing import Union

import numpy as np

from keras_attention.typing import ArrayLike

ELLIPSIS = "…"


def to_numpy(weights: ArrayLike) -> np.ndarray:
    """`weights` (array, tensor of any backend, nested lists) as float64."""
    if not isinstance(weights, np.ndarray):
        try:
            from keras import ops

            weights = ops.convert_to_numpy(weights)
        except Exception:  # a list, or a tensor of another framework
            weights = np.asarray(weights)
    return np.asarray(weights, dtype="float64")


def token_list(name: str, tokens: Union[str, bytes, Sequence]) -> List[str]:
    """Tokens as a list of `str`: a string is split on whitespace.

    Raises:
        ValueError: naming `name` if `tokens` is not a sequence of tokens.
    """
    if isinstance(tokens, str):
        return tokens.split()
    if isinstance(tokens, bytes):
        return tokens.decode("utf-8").split()
    if isinstance(tokens, np.ndarray):
        tokens = tokens.tolist()
    elif not isinstance(tokens, (list, tuple)):
        try:
            from keras import ops

            tokens = ops.convert_to_numpy(tokens).tolist()
        except Exception as error:
            raise ValueError(
                f"`{name}` must be a list of strings or a string. "
                f"Received: {name}={tokens!r:.100}"
            ) from error
    if not isinstance(tokens, (list, tuple)):
        raise ValueError(
            f"`{name}` must be a list of strings or a string. "
            f"Received: {name}={tokens!r:.100}"
        )
    return [
        t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t)
        for t in tokens
    ]


def check_inputs(
    weights: ArrayLike,
    source_tokens: Union[str, bytes, Sequence],
    target_tokens: Union[str, bytes, Sequence],
) -> Tuple[np.ndarray, List[str], List[str]]:
    """Weights `(T, S)` cropped to the tokens (decoders pad them).

    Returns:
        `(weights, source, target)`: a float64 matrix with non-finite
        weights set to 0, and the two token lists.
    """
    weights = to_numpy(weights)
    source = token_list("source_tokens", source_tokens)
    target = token_list("target_tokens", target_tokens)
    if weights.ndim == 3 and weights.shape[0] == 1:
        weights = weights[0]
    if weights.ndim != 2:
        raise ValueError(
            "`weights` must have shape (target_length, source_length). "
            f"Received: weights.shape={weights.shape}"
        )
    if weights.shape[0] < len(target) or weights.shape[1] < len(source):
        raise ValueError(
            "`weights` must have at least one row per target token and one "
            f"column per source token, ({len(target)}, {len(source)}). "
            f"Received: weights.shape={weights.shape}, "
            f"len(target_tokens)={len(target)}, "
            f"len(source_tokens)={len(source)}"
        )
    weights = weights[: len(target), : len(source)]
    weights = np.where(np.isfinite(weights), weights, 0.0)
    return weights, source, target


def char_width(char: str) -> int:
    """Terminal columns of one character: 0, 1 or 2 (wide CJK)."""
    if unicodedata.combining(char) or unicodedata.category(char) in (
        "Mn",
        "Me",
        "Cf",
    ):
        return 0
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 2
    return 1


def display_width(text: str) -> int:
    """Terminal columns of a string (wide CJK characters count 2)."""
    return sum(char_width(c) for c in text)


def truncate(text: str, width: Optional[int]) -> str:
    """Cuts `text` to at most `width` columns, marking the cut with `…`.

    `width=None` keeps the text whole.
    """
    if width is None or display_width(text) <= width:
        return text
    out, used = "", 0
    for char in text:
        w = char_width(char)
        if used + w > width - 1:
            break
        out += char
        used += w
    return out + ELLIPSIS


def pad(text: str, width: int) -> str:
    """`text` padded with spaces to `width` terminal columns."""
    return text + " " * (width - display_width(text))


def is_right_to_left(tokens: Iterable[str]) -> bool:
    """Whether most strongly-directional letters of `tokens` are RTL."""
    rtl = ltr = 0
    for token in tokens:
        for char in token:
            kind = unicodedata.bidirectional(char)
            if kind in ("R", "AL"):
                rtl += 1
            elif kind == "L":
                ltr += 1
    return rtl > ltr


def visual_order(token: str) -> str:
    """A token in left-to-right display order, for renderers without bidi.

    Uses `python-bidi` when installed; otherwise reverses a token whose
    letters are right-to-left, keeping runs of digits in order.
    """
    kinds = [unicodedata.bidirectional(c) for c in token]
    if not any(k in ("R", "AL") for k in kinds) or "L" in kinds:
        return token
    try:
        from bidi.algorithm import get_display

        return get_display(token)
    except ImportError:
        pass
    runs, current, current_is_number = [], "", None
    for char, kind in zip(token, kinds):
        is_number = kind in ("EN", "AN")
        if current and is_number != current_is_number:
            runs.append((current, current_is_number))
            current = ""
        current += char
        current_is_number = is_number
    if current:
        runs.append((current, current_is_number))
    return "".join(
        run if is_number else run[::-1] for run, is_number in reversed(runs)
    )
