"""Where the fused step-wise decoder applies: `fuses`, and the fused forms
of a cell (`cells`) and of a score (`scores`, `location`)."""

from typing import Optional

import keras

from keras_attention.layers.additive_attention import AdditiveAttention
from keras_attention.layers.dot_attention import DotAttention
from keras_attention.layers.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from keras_attention.layers.monotonic_attention import (
    BahdanauMonotonicAttention,
)
from keras_attention.layers.monotonic_attention import LuongMonotonicAttention
from keras_attention.layers.multiplicative_attention import (
    MultiplicativeAttention,
)
from keras_attention.rnn.fused_decoder.cells import fused_cell
from keras_attention.rnn.fused_decoder.location import FusedLocation
from keras_attention.rnn.fused_decoder.monotonic import FusedMonotonic
from keras_attention.rnn.fused_decoder.scores import FusedAdditive
from keras_attention.rnn.fused_decoder.scores import FusedDot

# What `fuses` needs, for error messages.
REQUIREMENTS = (
    "a plain LSTMCell or GRUCell (default activations), a DotAttention, "
    "MultiplicativeAttention, AdditiveAttention, "
    "LocationSensitiveAttention or a monotonic attention in 'parallel' "
    "mode, the Luong wiring with input feeding, an attentional layer with "
    "tanh or no activation (or none), and no dropout (or sigmoid noise) "
    "in the call"
)

# The attentional layer's activations the fused loop knows.
LAYER_ACTIVATIONS = (keras.activations.tanh, keras.activations.linear)

_SCORES = {
    DotAttention: FusedDot,
    MultiplicativeAttention: FusedDot,
    AdditiveAttention: FusedAdditive,
    LocationSensitiveAttention: FusedLocation,
}


def fused_score(
    attention: keras.layers.Layer, training: Optional[bool]
) -> Optional[FusedDot | FusedAdditive | FusedMonotonic]:
    """The fused form of `attention` in a call with `training`, or `None`.

    A `DotAttention`, `MultiplicativeAttention`, `AdditiveAttention`,
    `LocationSensitiveAttention` (not a subclass), or a
    `BahdanauMonotonicAttention` or `LuongMonotonicAttention` in
    "parallel" mode, without dropout (or sigmoid noise) in this call.
    """
    if training and attention.dropout > 0:
        return None
    kind = type(attention)
    if kind in (BahdanauMonotonicAttention, LuongMonotonicAttention):
        if attention.mode != "parallel" or (
            training and attention.sigmoid_noise > 0
        ):
            return None
        return FusedMonotonic(
            attention, additive=kind is BahdanauMonotonicAttention
        )
    fused = _SCORES.get(kind)
    return None if fused is None else fused(attention)


def fuses(wrapper: keras.layers.Layer, training: Optional[bool]) -> bool:
    """Whether `fused_decode` can run `wrapper` (in a call with `training`).

    It needs a plain `keras.layers.LSTMCell` or `keras.layers.GRUCell`
    (either `reset_after`) with its default activations and no dropout in
    the call, a `DotAttention`, `MultiplicativeAttention`,
    `AdditiveAttention` (`normalize` or not), `LocationSensitiveAttention`
    or a monotonic attention in "parallel" mode (`fused_score`) without
    dropout in the call, the Luong
    wiring with input feeding, and no attentional layer or one with `tanh`
    or no activation (TFA's linear attention layer).
    """
    layer = wrapper.attention_layer
    return (
        fused_cell(wrapper.cell, training) is not None
        and fused_score(wrapper.attention, training) is not None
        and wrapper.feeds_attention
        and (layer is None or layer.activation in LAYER_ACTIVATIONS)
    )
