"""Where the fused step-wise decoder applies: `fuses`, and the fused forms
of a cell (`cells`) and of a score (`scores`, `location`)."""

from typing import Optional

import keras

from keras_attention.layers.additive_attention import AdditiveAttention
from keras_attention.layers.dot_attention import DotAttention
from keras_attention.layers.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from keras_attention.layers.multiplicative_attention import (
    MultiplicativeAttention,
)
from keras_attention.rnn.fused_decoder.cells import fused_cell
from keras_attention.rnn.fused_decoder.location import FusedLocation
from keras_attention.rnn.fused_decoder.scores import FusedAdditive
from keras_attention.rnn.fused_decoder.scores import FusedDot

# What `fuses` needs, for error messages.
REQUIREMENTS = (
    "a plain LSTMCell or GRUCell (default activations), a DotAttention, "
    "MultiplicativeAttention, AdditiveAttention or "
    "LocationSensitiveAttention, the Luong wiring with input feeding, an "
    "attentional layer with tanh or no activation (or none), and no "
    "dropout in the call"
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
) -> Optional[FusedDot | FusedAdditive]:
    """The fused form of `attention` in a call with `training`, or `None`.

    A `DotAttention`, `MultiplicativeAttention`, `AdditiveAttention` or
    `LocationSensitiveAttention` (not a subclass), without dropout in this
    call.
    """
    if training and attention.dropout > 0:
        return None
    fused = _SCORES.get(type(attention))
    return None if fused is None else fused(attention)


def fuses(wrapper: keras.layers.Layer, training: Optional[bool]) -> bool:
    """Whether `fused_decode` can run `wrapper` (in a call with `training`).

    It needs a plain `keras.layers.LSTMCell` or `keras.layers.GRUCell`
    (either `reset_after`) with its default activations and no dropout in
    the call, a `DotAttention`, `MultiplicativeAttention`,
    `AdditiveAttention` (`normalize` or not) or
    `LocationSensitiveAttention` without dropout in the call, the Luong
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
