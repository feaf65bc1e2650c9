"""The fused step-wise decoder: `AttentionRNN`'s loop, with a hand-written
backward pass, where it applies (`fuses`).

- `loop`: the loop, the attention and the attentional layer around the
  cell and the score, `fuses` and `fused_decode`;
- `cells`: the LSTM and GRU steps, forward and backward;
- `scores`: the dot/multiplicative and additive scores, forward and
  backward.

Internal: `AttentionRNN` calls `fuses` and `fused_decode`; nothing here is
re-exported by `keras_attention`.
"""

from keras_attention.rnn.fused_decoder.loop import REQUIREMENTS
from keras_attention.rnn.fused_decoder.loop import fused_decode
from keras_attention.rnn.fused_decoder.loop import fuses

__all__ = ["REQUIREMENTS", "fused_decode", "fuses"]
