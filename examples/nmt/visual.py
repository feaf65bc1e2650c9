"""Attention display for the demo and the `translate` command.

Thin wrappers over `keras_attention.visualization`: the terminal text grid
(`attention_text_grid`) and heatmaps (`plot_attention`), several sentences
side by side in one PNG.
"""

from keras_attention import visualization


def attention_text_grid(weights, source_tokens, target_tokens):
    """Text grid of `weights` `(T, S)`: one row per target token."""
    return visualization.attention_text_grid(weights, source_tokens, target_tokens)


def save_attention_grid(items, path):
    """Saves `(weights, source_tokens, target_tokens, title)` heatmaps side
    by side in one PNG, all on the same colour scale (0 to 1)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, axes = plt.subplots(1, len(items), figsize=(5 * len(items), 4.5), squeeze=False)
    for ax, (weights, source_tokens, target_tokens, title) in zip(axes[0], items):
        visualization.plot_attention(
            weights, source_tokens, target_tokens, ax=ax, title=title,
            vmax=1.0, colorbar=False,
        )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
