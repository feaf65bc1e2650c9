"""Attention layers for Keras 3: Luong dot and general, Bahdanau additive.

Also: the RNN wrappers for step-wise attention with input feeding, in-graph
greedy and beam search decoders, and attention plots. Importing the package
registers its layers with Keras, so a `.keras` file that uses them loads
after `import keras_attention`.
"""

from keras_attention import alignment
from keras_attention import callbacks
from keras_attention import decoding
from keras_attention import visualization
from keras_attention.additive_attention import AdditiveAttention
from keras_attention.alignment import GuidedAlignmentLoss
from keras_attention.attention_rnn import AttentionRNN
from keras_attention.attention_wrapper import AttentionWrapper
from keras_attention.attentional_output import AttentionalOutput
from keras_attention.base_attention import BaseAttention
from keras_attention.callbacks import AttentionPlotCallback
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import sample_decode
from keras_attention.dot_attention import DotAttention
from keras_attention.lstm import LSTM
from keras_attention.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from keras_attention.monotonic_attention import BahdanauMonotonicAttention
from keras_attention.monotonic_attention import LuongMonotonicAttention
from keras_attention.monotonic_attention import MonotonicAttention
from keras_attention.multiplicative_attention import MultiplicativeAttention
from keras_attention.version import __version__
from keras_attention.visualization import attention_text_grid
from keras_attention.visualization import plot_attention
from keras_attention.visualization import plot_attention_grid

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
    "__version__",
    "alignment",
    "attention_text_grid",
    "beam_search_decode",
    "beam_search_nbest",
    "callbacks",
    "decoding",
    "greedy_decode",
    "plot_attention",
    "plot_attention_grid",
    "sample_decode",
    "visualization",
]
