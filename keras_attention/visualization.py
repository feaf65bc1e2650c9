"""Attention weights as pictures: matplotlib heatmaps and terminal grids.

`plot_attention` draws a heatmap of a `(target_length, source_length)`
weight matrix with the tokens on the axes and returns a matplotlib
`Figure` (and writes a PNG when given a path). `attention_text_grid`
renders the same matrix as a grid of shaded squares for a terminal
(darker = more attention), the picture of the lecture slides.

matplotlib is an optional dependency (`pip install keras-attention[viz]`),
imported only when a figure is drawn. No pyplot is used: the figures are
plain `matplotlib.figure.Figure` objects drawn with the Agg renderer, so
plotting never changes the user's matplotlib backend, needs no display and
leaves no figure open in pyplot's global state.
"""

import unicodedata

import numpy as np

DEFAULT_SHADES = " ░▒▓█"
ELLIPSIS = "…"


# ----------------------------------------------------------------------
# Inputs.


def _to_numpy(weights):
    if not isinstance(weights, np.ndarray):
        try:
            from keras import ops

            weights = ops.convert_to_numpy(weights)
        except Exception:  # a list, or a tensor of another framework
            weights = np.asarray(weights)
    return np.asarray(weights, dtype="float64")


def _token_list(name, tokens):
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


def _check_inputs(weights, source_tokens, target_tokens):
    """Weights `(T, S)` cropped to the tokens (decoders pad them)."""
    weights = _to_numpy(weights)
    source = _token_list("source_tokens", source_tokens)
    target = _token_list("target_tokens", target_tokens)
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


# ----------------------------------------------------------------------
# Unicode: display width and right-to-left tokens.


def char_width(char):
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


def display_width(text):
    """Terminal columns of a string (wide CJK characters count 2)."""
    return sum(char_width(c) for c in text)


def _truncate(text, width):
    """Cuts `text` to at most `width` columns, marking the cut with `…`."""
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


def _pad(text, width):
    return text + " " * (width - display_width(text))


def is_right_to_left(tokens):
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


def _visual_order(token):
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


# ----------------------------------------------------------------------
# matplotlib.


def _import_matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "Plotting attention needs matplotlib, an optional dependency of "
            "keras-attention. Install it with `pip install "
            "keras-attention[viz]` (or `pip install matplotlib`)."
        ) from error
    return Figure


def _font_size(num_labels):
    # 10 points up to 30 labels, shrinking to 5 points for 80 and more.
    return max(5.0, min(10.0, 10.0 - (num_labels - 30) / 10.0))


def plot_attention(
    weights,
    source_tokens,
    target_tokens,
    ax=None,
    title=None,
    cmap="Blues",
    path=None,
    vmax=None,
    colorbar=True,
    annotate=False,
    source_label="source",
    target_label="target",
    source_rtl=None,
    max_label_length=20,
    font_family=None,
    dpi=100,
):
    """Draws attention weights as a heatmap with the tokens on the axes.

    Row `t` is the target token `target_tokens[t]`, column `s` the source
    token `source_tokens[s]`; the colour of cell `(t, s)` is the weight
    `alpha_ts` the decoder gave source token `s` when producing target token
    `t` (darker = more attention with the default colour map). Weights
    larger than the tokens (decoders pad them) are cropped to the tokens.

    Readability: the figure grows with the number of tokens (about 0.3 inch
    per token), the font shrinks beyond 30 tokens, source labels are turned
    vertical when they are long or many, and labels longer than
    `max_label_length` columns are cut with `…`. A right-to-left source
    (Arabic, Hebrew, detected from the letters or set by `source_rtl`) is
    drawn from right to left, so it reads in its own direction, and its
    labels are put in display order (with `python-bidi` when installed).

    Args:
        weights: `(target_length, source_length)` array or tensor (a
            leading batch dimension of 1 is dropped).
        source_tokens: List of strings (or bytes), or a string split on
            whitespace, for the columns.
        target_tokens: Same, for the rows.
        ax: Optional matplotlib `Axes` to draw on. By default a new figure
            sized to the tokens is created.
        title: Optional title.
        cmap: matplotlib colour map. Defaults to `"Blues"`.
        path: Optional file path; when given, the figure is saved there
            (PNG unless the extension says otherwise).
        vmax: Weight of the darkest colour. Defaults to `None`, the largest
            weight shown; pass `1.0` to compare figures on one scale.
        colorbar: Whether to draw a colour bar. Defaults to `True`.
        annotate: Whether to write each weight in its cell (for small
            matrices). Defaults to `False`.
        source_label: Label of the x axis. Defaults to `"source"`.
        target_label: Label of the y axis. Defaults to `"target"`.
        source_rtl: `True`, `False` or `None` (detect) for a right-to-left
            source.
        max_label_length: Longest label, in terminal columns, before it is
            cut; `None` keeps labels whole. Defaults to `20`.
        font_family: Optional font family of the labels, e.g. a font with
            the CJK glyphs of your tokens (`"Noto Sans CJK JP"`).
        dpi: Resolution of the figure and of the saved PNG. Defaults to
            `100`.

    Returns:
        The matplotlib `Figure` (the figure of `ax` when given).

    Raises:
        ImportError: if matplotlib is not installed.
        ValueError: if `weights` is not a matrix with at least one row per
            target token and one column per source token.

    Example:

    ```python
    out = keras_attention.decoding.greedy_decode(...)
    n = int(out["lengths"][0])
    fig = plot_attention(out["attention"][0, :n], source_words,
                         target_words[:n], title="greedy",
                         path="attention.png")
    ```
    """
    weights, source, target = _check_inputs(
        weights, source_tokens, target_tokens
    )
    figure_class = _import_matplotlib()
    num_target, num_source = weights.shape
    rtl = is_right_to_left(source) if source_rtl is None else source_rtl
    source_labels = [
        _truncate(_visual_order(t), max_label_length) for t in source
    ]
    target_labels = [
        _truncate(_visual_order(t), max_label_length) for t in target
    ]

    if ax is None:
        longest = max([display_width(t) for t in target_labels] + [1])
        width = min(40.0, max(3.0, 0.3 * num_source + 0.08 * longest + 2.0))
        height = min(40.0, max(2.5, 0.3 * num_target + 1.8))
        figure = figure_class(figsize=(width, height), dpi=dpi)
        ax = figure.add_subplot()
    else:
        figure = ax.figure

    top = vmax
    if top is None:
        top = float(weights.max()) if weights.size else 1.0
        top = top if top > 0 else 1.0
    image = ax.imshow(
        weights,
        cmap=cmap,
        vmin=0.0,
        vmax=top,
        aspect="auto",
        interpolation="nearest",
    )
    font = {"fontsize": _font_size(max(num_source, num_target))}
    if font_family is not None:
        font["fontfamily"] = font_family
    long_labels = any(display_width(t) > 3 for t in source_labels)
    rotation = 90 if long_labels or num_source > 15 else 0
    ax.set_xticks(range(num_source))
    ax.set_xticklabels(source_labels, rotation=rotation, **font)
    ax.set_yticks(range(num_target))
    ax.set_yticklabels(target_labels, **font)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(source_label)
    ax.set_ylabel(target_label)
    if rtl:
        ax.invert_xaxis()
    if annotate:
        for t in range(num_target):
            for s in range(num_source):
                value = weights[t, s]
                ax.text(
                    s,
                    t,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=font["fontsize"] * 0.8,
                    color="white" if value > 0.6 * top else "black",
                )
    if colorbar:
        figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if title is not None:
        ax.set_title(title, pad=12)
    figure.tight_layout()
    if path is not None:
        save_figure(figure, path, dpi=dpi)
    return figure


def save_figure(figure, path, dpi=100):
    """Writes a figure to `path` (PNG unless the extension says otherwise).

    Creates the parent directory. Returns `path`.
    """
    import os

    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path


def save_attention_plot(path, weights, source_tokens, target_tokens, **kwargs):
    """`plot_attention(...)` written to the PNG file `path`.

    Keyword arguments go to `plot_attention`. Returns the figure.
    """
    return plot_attention(
        weights, source_tokens, target_tokens, path=path, **kwargs
    )


def figure_to_png(figure, dpi=100):
    """Encodes a figure as PNG bytes. Returns `(png_bytes, width, height)`."""
    import io
    import struct

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    png = buffer.getvalue()
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    return png, width, height


# ----------------------------------------------------------------------
# Terminals.


def attention_text_grid(
    weights,
    source_tokens,
    target_tokens,
    shades=DEFAULT_SHADES,
    relative=False,
    cell_width=2,
    max_label_length=None,
):
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
    weights, source, target = _check_inputs(
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
    if (
        isinstance(cell_width, bool)
        or not isinstance(cell_width, int)
        or (cell_width < 1)
    ):
        raise ValueError(
            "`cell_width` must be a positive integer. "
            f"Received: cell_width={cell_width!r}"
        )
    source = [_truncate(t, max_label_length) for t in source]
    target = [_truncate(t, max_label_length) for t in target]
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
            [" " * label_width] + [_pad(t, w) for t, w in zip(source, widths)]
        )
    ]
    for t, label in enumerate(target):
        cells = [shades[index[t, s]] * w for s, w in enumerate(widths)]
        lines.append(" ".join([_pad(label, label_width)] + cells))
    return "\n".join(line.rstrip() for line in lines)
