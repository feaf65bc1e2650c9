"""Attention layers for Keras 3: Luong dot and general, Bahdanau additive."""

from keras_attention.additive_attention import AdditiveAttention
from keras_attention.base_attention import BaseAttention
from keras_attention.dot_attention import DotAttention
from keras_attention.multiplicative_attention import MultiplicativeAttention
from keras_attention.version import __version__
