"""`Tokenizer`: the base of the tokenizers `Seq2Seq`'s SavedModel takes.

TensorFlow: a tokenizer is a `tf.Module` whose tables travel in the
SavedModel, used inside `tf.data` and SavedModel graphs.
"""

from keras_attention.typing import Tensor

import tensorflow as tf


class Tokenizer(tf.Module):
    """Strings to ids and back, as TensorFlow ops.

    Subclasses implement `tokenize(strings)` (`(batch, (tokens))` int64
    ragged ids, with `[START]`/`[END]` as configured) and
    `detokenize(ids)` (`(batch,)` strings), set `id_to_token` (a
    `tf.lookup` table from ids to token strings), `vocab_size`,
    `max_tokens`, `add_start` and `add_end`. Optionally `words(strings)`
    and `tokenize_words(strings)` (`(batch, (words), (pieces))`), which
    `TranslatorModule(replace_unknown=True)` uses.
    """

    def token_strings(self, ids: Tensor) -> Tensor:
        """The token strings of ids (any shape, ragged or dense)."""
        ids = tf.cast(ids, tf.int64)
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(
                self.id_to_token.lookup(ids.flat_values)
            )
        return self.id_to_token.lookup(ids)
