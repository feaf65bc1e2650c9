"""The fused step-wise decoder: `AttentionRNN`'s loop, with a hand-written
backward pass, where it applies (`fuses`).

- `applies`: `fuses`, and which fused form a cell or a score has;
- `loop`: the loop, the attention and the attentional layer around the
  cell and the score, `fused_decode`; `packing`: its scans and the
  packing of its outputs;
- `cells`: the LSTM and GRU steps, forward and backward;
- `scores`: the dot/multiplicative and additive scores, forward and
  backward; `location`: the location-sensitive score and its state;
  `monotonic`: the monotonic scores ("parallel" mode) and their state.

Internal: `AttentionRNN` calls `fuses` and `fused_decode`; nothing here is
re-exported by `keras_attention`.
"""

from keras_attention.rnn.fused_decoder.applies import REQUIREMENTS
from keras_attention.rnn.fused_decoder.applies import fuses
from keras_attention.rnn.fused_decoder.loop import fused_decode

__all__ = ["REQUIREMENTS", "fused_decode", "fuses"]
