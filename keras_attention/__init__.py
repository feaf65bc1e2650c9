"""Attention layers for Keras 3: Luong dot and general, Bahdanau additive.

Also: the RNN wrappers for step-wise attention with input feeding, in-graph
greedy and beam search decoders, and attention plots. Importing the package
registers its layers with Keras, so a `.keras` file that uses them loads
after `import keras_attention`.
"""

# The command line's process collects garbage less often; on a LiteRT or
# ONNX model it runs without Keras (and exits here); otherwise it starts
# quietly (no backend start-up lines): all before Keras is imported below.
from keras_attention.cli import launch as _launch

_launch.collect_for_one_command()
_launch.run_portable()
_launch.quiet_start()


from keras_attention import alignment
from keras_attention import decoding
from keras_attention import ops
from keras_attention import visualization
from keras_attention.alignment import GuidedAlignmentLoss
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import sample_decode
from keras_attention.layers import AdditiveAttention
from keras_attention.layers import BahdanauMonotonicAttention
from keras_attention.layers import BaseAttention
from keras_attention.layers import DotAttention
from keras_attention.layers import LocationSensitiveAttention
from keras_attention.layers import LuongMonotonicAttention
from keras_attention.layers import MonotonicAttention
from keras_attention.layers import MultiplicativeAttention
from keras_attention.layers import StatefulAttention
from keras_attention.rnn import LSTM
from keras_attention.rnn import AttentionalOutput
from keras_attention.rnn import AttentionRNN
from keras_attention.rnn import AttentionWrapper
from keras_attention.version import __version__
from keras_attention.visualization import attention_text_grid
from keras_attention.visualization import callbacks
from keras_attention.visualization import plot_attention
from keras_attention.visualization import plot_attention_grid
from keras_attention.visualization.callbacks import AttentionPlotCallback

# Registers `Seq2Seq`, its losses and `FusedAdam` with Keras, so that
# `keras.models.load_model` finds them after `import keras_attention`. Its
# TensorFlow-only modules (`dataset`, `training`, `serving`) are imported
# only by name. Not in `__all__`: use `keras_attention.seq2seq.Seq2Seq`.
import keras_attention.seq2seq  # noqa: E402, F401
# The task model and its tokenizers (`keras_attention.translator`,
# `keras_attention.tokenizers`) register with Keras the same way; their
# TensorFlow ops are built on first use.
import keras_attention.tokenizers  # noqa: E402, F401
import keras_attention.translator  # noqa: E402, F401

__all__ = [
    "AdditiveAttention",
    "AttentionPlotCallback",
    "AttentionRNN",
    "AttentionWrapper",
    "AttentionalOutput",
    "BahdanauMonotonicAttention",
    "BaseAttention",
    "DotAttention",
    "LSTM",
    "GuidedAlignmentLoss",
    "LocationSensitiveAttention",
    "LuongMonotonicAttention",
    "MonotonicAttention",
    "MultiplicativeAttention",
    "StatefulAttention",
    "__version__",
    "alignment",
    "attention_text_grid",
    "beam_search_decode",
    "beam_search_nbest",
    "callbacks",
    "decoding",
    "greedy_decode",
    "ops",
    "plot_attention",
    "plot_attention_grid",
    "sample_decode",
    "visualization",
]
