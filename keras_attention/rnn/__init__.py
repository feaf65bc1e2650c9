"""Attention around Keras RNN cells, step by step.

- `AttentionWrapper`: one decoder step of a cell with attention (Luong
  input feeding or the Bahdanau wiring), for `AttentionRNN` and the
  decoders of `keras_attention.decoding`.
- `AttentionRNN`: the wrapper run over a whole target sequence.
- `AttentionalOutput`: Luong's attentional vector `tanh(W_c [c; h])`.
- `LSTM`: `keras.layers.LSTM` with a faster loop off cuDNN.
- `wiring`, `wrapper_state`, `rnn_cells`: the step wirings, the wrapper's
  state and what both layers need of a Keras cell; `loops` and
  `fused_decoder` (a package: the loop, its cells, its scores):
  `AttentionRNN`'s generic and fused loops.
"""

from keras_attention.rnn.attention_rnn import AttentionRNN
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from keras_attention.rnn.attentional_output import AttentionalOutput
from keras_attention.rnn.lstm import LSTM

__all__ = ["AttentionRNN", "AttentionWrapper", "AttentionalOutput", "LSTM"]
