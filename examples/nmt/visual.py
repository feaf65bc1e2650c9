"""Attention display for the demo: a text grid and a heatmap PNG.

Uses `keras_attention.visualization` (`attention_text_grid`,
`plot_attention`) when the installed package has it, and the small local
versions below otherwise.
"""

import numpy as np

# Shades from no attention to full attention (the lecture's grid of squares).
_SHADES = " ░▒▓█"


def _library():
    try:
        from keras_attention import visualization
    except ImportError:
        return None
    if hasattr(visualization, "attention_text_grid") and hasattr(
        visualization, "plot_attention"
    ):
        return visualization
    return None


def _local_text_grid(weights, source_tokens, target_tokens):
    """One row per target token, one column per source token."""
    weights = np.asarray(weights, dtype=np.float64)
    width = max([len(t) for t in target_tokens] + [1])
    lines = [" " * width + "  " + " ".join(source_tokens)]
    for i, target in enumerate(target_tokens):
        cells = []
        for j, source in enumerate(source_tokens):
            level = min(int(weights[i, j] * (len(_SHADES) - 1) + 0.5), len(_SHADES) - 1)
            cells.append(_SHADES[level] * max(len(source), 1))
        lines.append(f"{target:<{width}}  " + " ".join(cells))
    return "\n".join(lines)


def attention_text_grid(weights, source_tokens, target_tokens):
    """Text grid of `weights` `(T, S)`: one line per source token."""
    library = _library()
    if library is not None:
        return library.attention_text_grid(weights, source_tokens, target_tokens)
    return _local_text_grid(weights, source_tokens, target_tokens)


def plot_attention(weights, source_tokens, target_tokens, title=None):
    """Heatmap figure of `weights` `(T, S)`; returns a matplotlib Figure."""
    library = _library()
    if library is not None:
        return library.plot_attention(
            weights, source_tokens, target_tokens, title=title
        )
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    weights = np.asarray(weights)
    fig, ax = plt.subplots(
        figsize=(1 + 0.5 * len(source_tokens), 1 + 0.4 * len(target_tokens))
    )
    ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(source_tokens)))
    ax.set_xticklabels(source_tokens, rotation=90)
    ax.set_yticks(range(len(target_tokens)))
    ax.set_yticklabels(target_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def save_attention_grid(items, path):
    """Saves several `(weights, source_tokens, target_tokens, title)` heatmaps
    side by side in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, axes = plt.subplots(1, len(items), figsize=(5 * len(items), 4.5))
    axes = np.atleast_1d(axes)
    for ax, (weights, source_tokens, target_tokens, title) in zip(axes, items):
        ax.imshow(np.asarray(weights), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(source_tokens)))
        ax.set_xticklabels(source_tokens, rotation=90)
        ax.set_yticks(range(len(target_tokens)))
        ax.set_yticklabels(target_tokens)
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
