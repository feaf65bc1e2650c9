"""The attention layers: the scores, their shared base and stateful layers.

- `BaseAttention`: what every score shares (validation, masks, the masked
  softmax, dropout, output shapes, `prepare_memory`/`attend`).
- `DotAttention`, `MultiplicativeAttention`, `AdditiveAttention`: the Luong
  dot and general scores and Bahdanau's additive score.
- `StatefulAttention`: the base of the layers that carry an alignment state
  from one decoder step to the next, `LocationSensitiveAttention` and the
  monotonic attentions (`MonotonicAttention`,
  `BahdanauMonotonicAttention`, `LuongMonotonicAttention`).
"""

from keras_attention.layers.additive_attention import AdditiveAttention
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.layers.dot_attention import DotAttention
from keras_attention.layers.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from keras_attention.layers.monotonic_attention import (
    BahdanauMonotonicAttention,
)
from keras_attention.layers.monotonic_attention import LuongMonotonicAttention
from keras_attention.layers.monotonic_attention import MonotonicAttention
from keras_attention.layers.multiplicative_attention import (
    MultiplicativeAttention,
)
from keras_attention.layers.stateful_attention import StatefulAttention

__all__ = [
    "AdditiveAttention",
    "BahdanauMonotonicAttention",
    "BaseAttention",
    "DotAttention",
    "LocationSensitiveAttention",
    "LuongMonotonicAttention",
    "MonotonicAttention",
    "MultiplicativeAttention",
    "StatefulAttention",
]
