"""What every exported decoder starts from, token ids in.

TensorFlow (the exports' graphs): the encoded state and the step of one
`Seq2Seq` or of an ensemble (`keras_attention.decoding.ensemble_state`,
`ensemble_step`), the start tokens, each sentence's length limit
(`SOURCE_LENGTH_LIMIT`, as `Translator` decodes) and the tokens no
hypothesis may hold. `TranslatorModule` (the SavedModel) and
`keras_attention.portable.graph.PortableModule` (LiteRT, ONNX) share them.
"""

from typing import Any
from typing import Callable
from typing import Sequence
from keras_attention.typing import Tensor

import tensorflow as tf

from keras_attention.decoding import ensemble_state
from keras_attention.decoding import ensemble_step
from keras_attention.decoding import greedy_decode
from keras_attention.seq2seq import tokens as text_lib
from keras_attention.seq2seq.generation import SOURCE_LENGTH_LIMIT

# No hypothesis holds [PAD] or [START] before its end (n-best lists would
# read the same once the target tokenizer drops them).
FORBIDDEN_TOKENS = (text_lib.PAD_ID, text_lib.START_ID)


def encode(members: Sequence[Any], source_ids: Tensor) -> Any:
    """The decoding state of `source_ids` `(batch, S)`: one model's, or
    the ensemble's."""
    states = [m.encode(source_ids) for m in members]
    return states[0] if len(states) == 1 else ensemble_state(*states)


def step(members: Sequence[Any], logits: bool = False) -> Callable:
    """The decoding step of one model, or the ensemble's (the members'
    probabilities averaged).

    With `logits=True` one model's step gives its logits (`step_logits`),
    an ensemble's its log-probabilities still: either suits a decoder
    called with `from_logits=True` (the log-softmax of normalized
    log-probabilities is themselves)."""
    if len(members) == 1:
        return members[0].step_logits if logits else members[0].step
    return ensemble_step([m.step for m in members])


def decoder_step(members: Sequence[Any], decode: Callable) -> tuple:
    """`(step_fn, options)` for `decode`: greedy decoding reads the
    logits (`step(members, logits=True)`, `from_logits=True`: it
    normalizes only the token it picks); the other decoders read
    log-probabilities, with no option."""
    if decode is greedy_decode:
        return step(members, logits=True), {"from_logits": True}
    return step(members), {}


def start_tokens(source_ids: Tensor) -> Tensor:
    """`[START]` for every sentence, int32 `(batch,)`."""
    batch = tf.shape(source_ids)[0]
    return tf.fill([batch], tf.constant(text_lib.START_ID, tf.int32))


def length_limits(source_ids: Tensor) -> Tensor:
    """Each sentence's longest output, `2 * source_tokens + 10`
    (`SOURCE_LENGTH_LIMIT`), int32 `(batch,)`."""
    source_lengths = tf.reduce_sum(
        tf.cast(source_ids != text_lib.PAD_ID, tf.int32), axis=1
    )
    scale, margin = SOURCE_LENGTH_LIMIT
    return scale * source_lengths + margin
