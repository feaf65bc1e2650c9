"""An attentional encoder-decoder and what trains and serves it.

- `Seq2Seq`: one `keras.Model` (teacher forcing in `call`, `encode`/`step`
  for `keras_attention.decoding`, `generate`, `align`); every backend.
- `MaskedLoss`, `MaskedMean`, `MaskedAccuracy`: losses and metric that
  ignore padding; `FusedAdam`: Keras' Adam with TensorFlow's fused update.
- `tokens`: the vocabulary convention (`[PAD] [UNK] [START] [END]`).
- `dataset` (tf.data), `training` (`fit` into a run directory with
  checkpoints and resumption), `run_dir` (the directory's layout) and
  `serving` (the string-to-string SavedModel): TensorFlow.
"""

from keras_attention.seq2seq.fused_adam import FusedAdam
from keras_attention.seq2seq.losses import MaskedAccuracy
from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.seq2seq.losses import MaskedMean
from keras_attention.seq2seq.seq2seq import Seq2Seq

__all__ = [
    "FusedAdam",
    "MaskedAccuracy",
    "MaskedLoss",
    "MaskedMean",
    "Seq2Seq",
]
