"""Attention weights as pictures: matplotlib heatmaps and terminal grids.

- `heatmap`: `plot_attention` (one heatmap, the tokens on the axes),
  `plot_attention_grid` (several in one figure, on one colour scale),
  `save_attention_plot`, `save_figure`, `figure_to_png` and
  `require_matplotlib`. matplotlib is an optional dependency
  (`pip install keras-seq2seq-attention[viz]`), imported only when a figure is
  drawn, and pyplot is never used.
- `text_grid`: `attention_text_grid`, shaded squares for a terminal (no
  dependency).
- `tokens`: what both share: token lists, the terminal width of Unicode
  text (`display_width`, `char_width`) and right-to-left tokens
  (`is_right_to_left`).
"""

from keras_attention.visualization.heatmap import figure_to_png
from keras_attention.visualization.heatmap import plot_attention
from keras_attention.visualization.heatmap import plot_attention_grid
from keras_attention.visualization.heatmap import require_matplotlib
from keras_attention.visualization.heatmap import save_attention_plot
from keras_attention.visualization.heatmap import save_figure
from keras_attention.visualization.text_grid import DEFAULT_SHADES
from keras_attention.visualization.text_grid import attention_text_grid
from keras_attention.visualization.tokens import ELLIPSIS
from keras_attention.visualization.tokens import char_width
from keras_attention.visualization.tokens import display_width
from keras_attention.visualization.tokens import is_right_to_left
from keras_attention.visualization.tokens import visual_order

__all__ = [
    "DEFAULT_SHADES",
    "ELLIPSIS",
    "attention_text_grid",
    "char_width",
    "display_width",
    "figure_to_png",
    "is_right_to_left",
    "plot_attention",
    "plot_attention_grid",
    "require_matplotlib",
    "save_attention_plot",
    "save_figure",
    "visual_order",
]
