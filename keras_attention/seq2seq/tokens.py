"""The vocabulary convention of `Seq2Seq` and the TensorFlow text ops that
every tokenizer of it shares.

Every vocabulary starts with the reserved tokens `[PAD] [UNK] [START]
[END]` (ids 0 to 3). A tokenizer that serves `Seq2Seq` (the SavedModel of
`serving/`, the `tf.data` pipeline of `dataset.py`) maps strings to ids and
back with TensorFlow ops (`serving.Tokenizer` is its base class). The
functions here that take tensors need TensorFlow (imported when called):
they run inside `tf.data` and SavedModel graphs.
"""

from typing import Any
from typing import List
from typing import Sequence
from keras_attention.typing import Tensor

import unicodedata

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
RESERVED_TOKENS = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3

# Longest input accepted, in Unicode characters: longer inputs are cut here
# before any other processing (the serving signature never sees more).
MAX_INPUT_CHARS = 1000


def clean_strings(texts: Tensor) -> Tensor:
    """Replaces invalid UTF-8 by U+FFFD and cuts to `MAX_INPUT_CHARS`."""
    import tensorflow as tf

    texts = tf.strings.unicode_transcode(
        texts,
        input_encoding="UTF-8",
        output_encoding="UTF-8",
        errors="replace",
        replacement_char=0xFFFD,
    )
    return tf.strings.substr(texts, 0, MAX_INPUT_CHARS, unit="UTF8_CHAR")


def punctuation_ids(vocab: Sequence[str]) -> List[int]:
    """Ids of the tokens of `vocab` made of punctuation only (Unicode
    category P*, a `##` continuation prefix ignored); reserved tokens
    excluded."""
    ids = []
    for i, token in enumerate(vocab):
        if i < len(RESERVED_TOKENS):
            continue
        chars = token[2:] if token.startswith("##") else token
        if chars and all(
            unicodedata.category(c).startswith("P") for c in chars
        ):
            ids.append(i)
    return ids


def frame_ids(
    ids: Tensor, max_tokens: int, add_start: Any, add_end: Any
) -> Tensor:
    """Ragged ids `(batch, (tokens))` cut so that, with `[START]` and/or
    `[END]` added as asked, no row is longer than `max_tokens`."""
    import tensorflow as tf

    room = max_tokens - int(add_start) - int(add_end)
    ids = ids[:, :room]
    batch = ids.nrows()
    parts = [ids]
    if add_start:
        parts.insert(0, tf.fill([batch, 1], tf.constant(START_ID, tf.int64)))
    if add_end:
        parts.append(tf.fill([batch, 1], tf.constant(END_ID, tf.int64)))
    return tf.concat(parts, axis=1) if len(parts) > 1 else ids


def content_ids(ids: Tensor) -> Tensor:
    """The ids before the first `[END]`, without `[PAD]` and `[START]`.

    Args:
        ids: Token ids `(batch, tokens)`, dense or ragged.

    Returns:
        A `(batch, (tokens))` int64 `tf.RaggedTensor`.
    """
    import tensorflow as tf

    ids = tf.cast(ids, tf.int64)
    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.RaggedTensor.from_tensor(ids)
    is_end = tf.cast(tf.equal(ids, END_ID), tf.int32)
    before_end = tf.equal(tf.cumsum(is_end, axis=1), 0)
    keep = tf.logical_and(
        before_end,
        tf.logical_and(tf.not_equal(ids, PAD_ID), tf.not_equal(ids, START_ID)),
    )
    return tf.ragged.boolean_mask(ids, keep)
