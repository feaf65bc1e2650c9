"""Decoding a step function inside the graph: greedy, beam, sampling.

The decoders drive any step function

    log_probs, new_state, attention = step_fn(tokens, state)

with `tokens` int32 `(batch_size,)`, `state` any nested structure (dict,
tuple, list) of tensors that all have a leading batch dimension (the encoder
memory, its projected keys and its mask travel inside the state),
`log_probs` `(batch_size, vocab_size)` and `attention` `(batch_size, S)` (or
any `(batch_size, ...)` shape, or `None`). The whole decode loop is a
`keras.ops.while_loop`, so it runs eagerly, inside a `tf.function`, in an
exported SavedModel (one request per sentence, not per token) and on the
JAX and PyTorch backends.

The decoders return a dict:

- `tokens`: int32 `(batch_size, L)`, the chosen hypothesis of each
  sentence, `pad_token` after its end.
- `lengths`: int32 `(batch_size,)`, the number of tokens of each hypothesis,
  end token included (when it was produced).
- `scores`: float32 `(batch_size,)`, the score the decoder ranked by: the
  sum of the log-probabilities for greedy and sampling decoding, that sum
  divided by the GNMT length penalty (plus the coverage penalty, when set)
  for beam search.
- `log_probs`: float32 `(batch_size,)`, the sum of the log-probabilities of
  the hypothesis' tokens.
- `attention`: float32 `(batch_size, L, S)`, the attention weights the step
  function returned while producing each token of the chosen hypothesis
  (zeros after its end), or `None` when the step function returns `None`.

`L` is the number of steps that ran: the length of the longest hypothesis,
at most `max_length`. (On JAX under `jit`, where shapes must be static, the
outputs keep `L = max_length`.) With `static_max_length`, `L` is that
width, whatever ran: per-sentence limits then compile under XLA too.

The decoders are one loop core (`core.run_loop`) and a token-choosing
function each; see docs/decoding.md.

Reference:
    - [Wu et al., 2016](https://arxiv.org/abs/1609.08144) (GNMT, length
      and coverage penalties)
    - [Holtzman et al., 2019](https://arxiv.org/abs/1904.09751) (nucleus
      sampling)
"""

from keras_attention.decoding.beam import beam_search_decode
from keras_attention.decoding.beam import beam_search_nbest
from keras_attention.decoding.core import NEG_INF
from keras_attention.decoding.ensemble import ensemble_state
from keras_attention.decoding.ensemble import ensemble_step
from keras_attention.decoding.greedy import greedy_decode
from keras_attention.decoding.penalties import coverage_penalty
from keras_attention.decoding.penalties import length_penalty
from keras_attention.decoding.sampling import filter_logits
from keras_attention.decoding.sampling import sample_decode
from keras_attention.decoding.state import gather_state
from keras_attention.decoding.state import tile_state
from keras_attention.decoding.unknown import replace_unknown
from keras_attention.decoding.unknown import unknown_source_positions

__all__ = [
    "NEG_INF",
    "beam_search_decode",
    "beam_search_nbest",
    "coverage_penalty",
    "ensemble_state",
    "ensemble_step",
    "filter_logits",
    "gather_state",
    "greedy_decode",
    "length_penalty",
    "replace_unknown",
    "sample_decode",
    "tile_state",
    "unknown_source_positions",
]
