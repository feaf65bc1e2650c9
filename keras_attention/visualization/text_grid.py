"""Attention weights as a grid of shaded squares for a terminal.

Needs no plotting library: the picture of the lecture slides, darker =
more attention, with columns aligned for any Unicode token.
"""

from typing import Optional
from typing import Sequence
from typing import Union

import numpy as np

from keras_attention.checks import check_positive_int
from keras_attention.typing import ArrayLike
from keras_attention.visualization.tokens import char_width
from keras_attention.visualization.tokens import check_inputs
from keras_attention.visualization.tokens import display_width
from keras_attention.visualization.tokens import pad
from keras_attention.visualization.tokens import truncate

DEFAULT_SHADES = " ░▒▓█"

Tokens = Union[str, bytes, Sequence]


def attention_text_grid(
    weights: ArrayLike,
    source_tokens: Tokens,
    target_tokens: Tokens,
    shades: str = DEFAULT_SHADES,
    relative: bool = False,
    cell_width: int = 2,
    max_label_length: Optional[int] = None,
) -> str:
    """Renders attention weights as a grid of shaded squares for a terminal.

    One row per target token, one column per source token; a cell shows the
    weight with one of `shades`, lightest to darkest: with the default
    `" ░▒▓█"`, weights in `[0, 0.2)` are blank, `[0.2, 0.4)` `░`, ... and
    `[0.8, 1]` `█` (weight `w` gets shade `min(floor(w * n), n - 1)` of the
    `n` shades). Columns are as wide as their source token or `cell_width`,
    whichever is wider, measured in terminal columns, so wide CJK
    characters (two columns) and combining marks (none) stay aligned.
    Trailing spaces are removed from each line.

    Args:
        weights: `(target_length, source_length)` array or tensor (a
            leading batch dimension of 1 is dropped); larger weights are
            cropped to the tokens.
        source_tokens: List of strings (or bytes), or a string split on
            whitespace, for the columns.
        target_tokens: Same, for the rows.
        shades: String of at least two characters, lightest first.
            Defaults to `" ░▒▓█"`.
        relative: If `True`, each row is scaled by its largest weight, so
            the strongest source token of every row is darkest (useful for
            long sources, where weights are small). Defaults to `False`.
        cell_width: Minimum column width. Defaults to `2` (a square in most
            terminal fonts).
        max_label_length: Optional longest token, in columns, before it is
            cut with `…`.

    Returns:
        The grid as a string: a header line of source tokens, then one line
        per target token.

    Raises:
        ValueError: on weights smaller than the tokens, fewer than two
            shades, or a `cell_width` below 1.

    Example:

    >>> print(attention_text_grid([[0.9, 0.1], [0.3, 0.7]],
    ...                           ["le", "chat"], ["the", "cat"]))
        le chat
    the ██
    cat ░░ ▓▓▓▓
    """
    weights, source, target = check_inputs(
        weights, source_tokens, target_tokens
    )
    if not isinstance(shades, str) or len(shades) < 2:
        raise ValueError(
            "`shades` must be a string of at least two characters, "
            f"lightest first. Received: shades={shades!r}"
        )
    if any(char_width(c) != 1 for c in shades):
        raise ValueError(
            "Every character of `shades` must be one terminal column wide. "
            f"Received: shades={shades!r}"
        )
    cell_width = check_positive_int("cell_width", cell_width)
    source = [truncate(t, max_label_length) for t in source]
    target = [truncate(t, max_label_length) for t in target]
    weights = np.clip(weights, 0.0, None)
    if relative:
        row_max = weights.max(axis=1, keepdims=True) if weights.size else 1.0
        weights = weights / np.where(row_max > 0, row_max, 1.0)
    levels = len(shades)
    index = np.minimum(np.floor(weights * levels), levels - 1).astype(int)

    widths = [max(cell_width, display_width(t)) for t in source]
    label_width = max([display_width(t) for t in target] + [0])
    lines = [
        " ".join(
            [" " * label_width] + [pad(t, w) for t, w in zip(source, widths)]
        )
    ]
    for t, label in enumerate(target):
        cells = [shades[index[t, s]] * w for s, w in enumerate(widths)]
        lines.append(" ".join([pad(label, label_width)] + cells))
    return "\n".join(line.rstrip() for line in lines)
