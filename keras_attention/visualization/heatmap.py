"""Attention weights as matplotlib heatmaps.

`plot_attention` draws a heatmap of a `(target_length, source_length)`
weight matrix with the tokens on the axes and returns a matplotlib
`Figure` (and writes a PNG when given a path); `plot_attention_grid` puts
several such heatmaps in one figure, on one colour scale.

matplotlib is an optional dependency (`pip install keras-seq2seq-attention[viz]`),
imported only when a figure is drawn. No pyplot is used: the figures are
plain `matplotlib.figure.Figure` objects drawn with the Agg renderer, so
plotting never changes the user's matplotlib backend, needs no display and
leaves no figure open in pyplot's global state.
"""

import io
import math
import os
import struct
from typing import Any
from typing import Optional
from typing import Sequence
from typing import Tuple
from typing import Union

from keras_attention.checks import check_positive_int
from keras_attention.typing import ArrayLike
from keras_attention.visualization.tokens import check_inputs
from keras_attention.visualization.tokens import display_width
from keras_attention.visualization.tokens import is_right_to_left
from keras_attention.visualization.tokens import truncate
from keras_attention.visualization.tokens import visual_order

Tokens = Union[str, bytes, Sequence]
PathLike = Union[str, "os.PathLike[str]"]




def require_matplotlib() -> type:
    """The matplotlib `Figure` class, or an `ImportError` with the hint.

    Callers that draw later (e.g. `AttentionPlotCallback`) call it early
    to fail at construction time rather than mid-training.

    Raises:
        ImportError: if matplotlib is not installed, naming the `viz`
            extra that installs it.
    """
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "Plotting attention needs matplotlib, an optional dependency of "
            "keras-seq2seq-attention. Install it with `pip install "
            "keras-seq2seq-attention[viz]` (or `pip install matplotlib`)."
        ) from error
    return Figure


def _font_size(num_labels: int):
    # 10 points up to 30 labels, shrinking to 5 points for 80 and more.
    return max(5.0, min(10.0, 10.0 - (num_labels - 30) / 10.0))


def plot_attention(
    weights: ArrayLike,
    source_tokens: Tokens,
    target_tokens: Tokens,
    ax: Any = None,
    title: Optional[str] = None,
    cmap: str = "Blues",
    path: Optional[PathLike] = None,
    vmax: Optional[float] = None,
    colorbar: bool = True,
    annotate: bool = False,
    source_label: str = "source",
    target_label: str = "target",
    source_rtl: Optional[bool] = None,
    max_label_length: Optional[int] = 20,
    font_family: Optional[str] = None,
    dpi: int = 100,
) -> Any:
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
    weights, source, target = check_inputs(
        weights, source_tokens, target_tokens
    )
    figure_class = require_matplotlib()
    num_target, num_source = weights.shape
    rtl = is_right_to_left(source) if source_rtl is None else source_rtl
    source_labels = [
        truncate(visual_order(t), max_label_length) for t in source
    ]
    target_labels = [
        truncate(visual_order(t), max_label_length) for t in target
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


def save_figure(figure: Any, path: PathLike, dpi: int = 100) -> PathLike:
    """Writes a figure to `path` (PNG unless the extension says otherwise).

    Creates the parent directory. Returns `path`.
    """
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path


def save_attention_plot(
    path: PathLike,
    weights: ArrayLike,
    source_tokens: Tokens,
    target_tokens: Tokens,
    **kwargs,
) -> Any:
    """`plot_attention(...)` written to the PNG file `path`.

    Keyword arguments go to `plot_attention`. Returns the figure.
    """
    return plot_attention(
        weights, source_tokens, target_tokens, path=path, **kwargs
    )


def figure_to_png(figure: Any, dpi: int = 100) -> Tuple[bytes, int, int]:
    """Encodes a figure as PNG bytes. Returns `(png_bytes, width, height)`."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    png = buffer.getvalue()
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    return png, width, height


def _grid_item(index: int, item: Any):
    if not isinstance(item, (list, tuple)) or len(item) not in (3, 4):
        raise ValueError(
            "Each item of `items` must be a tuple `(weights, source_tokens, "
            "target_tokens)` or `(weights, source_tokens, target_tokens, "
            f"title)`. Received: items[{index}]={item!r:.100}"
        )
    weights, source, target = item[:3]
    title = item[3] if len(item) == 4 else None
    return weights, source, target, title


def plot_attention_grid(
    items: Sequence,
    columns: Optional[int] = None,
    vmax: Optional[float] = 1.0,
    path: Optional[PathLike] = None,
    panel_size: Tuple[float, float] = (5.0, 4.5),
    dpi: int = 100,
    **plot_kwargs,
) -> Any:
    """Draws several attention heatmaps in one figure, on one colour scale.

    Each item is drawn by `plot_attention` on its own axes, left to right
    and then top to bottom, `columns` per row; the panels share the colour
    scale `[0, vmax]`, so that the same shade means the same weight in
    every panel (a single colour bar is therefore left out). Use it to
    compare sentences, decoders (greedy and beam search) or epochs.

    Args:
        items: Sequence of `(weights, source_tokens, target_tokens)` or
            `(weights, source_tokens, target_tokens, title)` tuples, with
            the arguments of `plot_attention`.
        columns: Panels per row. Defaults to `None`, all in one row.
        vmax: Weight of the darkest colour in every panel. Defaults to
            `1.0`; `None` uses the largest weight shown in any panel.
        path: Optional file path; when given, the figure is saved there
            (PNG unless the extension says otherwise).
        panel_size: `(width, height)` of one panel in inches. Defaults to
            `(5.0, 4.5)`.
        dpi: Resolution of the figure and of the saved PNG. Defaults to
            `100`.
        **plot_kwargs: Further keyword arguments of `plot_attention`
            (`cmap`, `annotate`, `source_label`, `font_family`, ...), the
            same for every panel.

    Returns:
        The matplotlib `Figure`, with one `Axes` per item (unused cells of
        the last row are hidden).

    Raises:
        ImportError: if matplotlib is not installed.
        ValueError: if `items` is empty, an item is not a 3- or 4-tuple,
            `columns` is not a positive integer, or the weights of an item
            are smaller than its tokens.

    Example:

    ```python
    fig = plot_attention_grid(
        [(greedy_weights, source, greedy_words, "greedy"),
         (beam_weights, source, beam_words, "beam search")],
        path="compare.png")
    ```
    """
    for name in ("ax", "colorbar", "title"):
        if name in plot_kwargs:
            raise ValueError(
                f"`{name}` is set per panel by `plot_attention_grid`; pass "
                f"titles in the items. Received: {name}={plot_kwargs[name]!r}"
            )
    items = [_grid_item(i, item) for i, item in enumerate(items)]
    if not items:
        raise ValueError(
            "`items` must hold at least one heatmap. Received: items=[]"
        )
    columns = check_positive_int("columns", columns, allow_none=True)
    columns = min(columns or len(items), len(items))
    rows = math.ceil(len(items) / columns)
    if vmax is None:
        tops = [
            check_inputs(w, s, t)[0].max(initial=0.0) for w, s, t, _ in items
        ]
        vmax = max(tops) if max(tops) > 0 else 1.0
    figure_class = require_matplotlib()
    figure = figure_class(
        figsize=(panel_size[0] * columns, panel_size[1] * rows), dpi=dpi
    )
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, (weights, source, target, title) in zip(axes, items):
        plot_attention(
            weights, source, target, ax=ax, title=title, vmax=vmax,
            colorbar=False, dpi=dpi, **plot_kwargs,
        )
    for ax in axes[len(items) :]:
        ax.set_axis_off()
    figure.tight_layout()
    if path is not None:
        save_figure(figure, path, dpi=dpi)
    return figure
