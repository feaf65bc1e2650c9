"""An attentional encoder-decoder and what trains and serves it.

- `Translator` (from `keras_attention.translator`): a `Seq2Seq` with its
  tokenizers, text in and text out.
- `Seq2Seq`: one `keras.Model` (teacher forcing in `call`, `encode`/`step`
  for `keras_attention.decoding`, `generate`, `align`); every backend.
- `MaskedLoss`, `MaskedMean`, `MaskedAccuracy`: losses and metric that
  ignore padding; `sparse_cross_entropy`, the token cross-entropy
  `MaskedLoss` trains with (a faster gradient); `FusedAdam`: Keras' Adam
  with TensorFlow's fused update.
- `tokens`: the vocabulary convention (`[PAD] [UNK] [START] [END]`).
- `dataset` (tf.data), `training` (`fit` into a run directory with
  checkpoints and resumption), `run_dir` (the directory's layout) and
  `keras_attention.serving` (the string-to-string SavedModel): TensorFlow.
"""

from keras_attention.seq2seq.fused_adam import FusedAdam
from keras_attention.seq2seq.losses import MaskedAccuracy
from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.seq2seq.losses import MaskedMean
from keras_attention.seq2seq.losses import sparse_cross_entropy
from keras_attention.seq2seq.seq2seq import Seq2Seq



def __getattr__(name: str) -> object:
    # `Translator` lives in `keras_attention.translator` (it imports this
    # package's model and the tokenizers); named here too, for users.
    if name == "Translator":
        from keras_attention.translator import Translator

        return Translator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FusedAdam",
    "MaskedAccuracy",
    "MaskedLoss",
    "MaskedMean",
    "Seq2Seq",
    "Translator",
    "sparse_cross_entropy",
]
