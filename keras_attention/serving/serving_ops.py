"""TensorFlow ops of the exported translators beyond the decoders.

- `format_outputs`: a decoder's dict to the signature outputs (strings,
  attention cut to the sentence lengths).
- `source_words`: the source word of every source token position (the
  whole pre-tokenized word a WordPiece belongs to), the strings that
  unknown-word replacement copies.
- `replace_unknown`: each `[UNK]` of the outputs replaced by the source word
  with the highest attention (OpenNMT-tf's `replace_unknown_target`), in
  the target token strings and in the detokenized translation.
"""

from typing import Any
from keras_attention.typing import Tensor

import tensorflow as tf

from keras_attention.seq2seq import tokens as text_lib
from keras_attention.decoding import unknown_source_positions


def strip_after_end(tokens: Tensor) -> Any:
    """Mask `(batch, L)`: True before the first `[END]`."""
    is_end = tf.cast(tf.equal(tokens, text_lib.END_ID), tf.int32)
    return tf.equal(tf.cumsum(is_end, axis=1), 0)


def format_outputs(
    decoded: Tensor,
    text: Tensor,
    source_ids: Tensor,
    source_processor: Any,
    target_processor: Any,
    copies: int,
    replace_unknown_words: Any,
) -> Any:
    """The signature outputs of a decoder's rows.

    Args:
        decoded: A decoder's dict, one row per hypothesis, `copies` rows
            per text (`None`: one).
        text: `(batch,)` strings; `source_ids` their ragged source ids.
        source_processor, target_processor: The module's processors.
        copies: `None` or the hypotheses per text (an int32 scalar).
        replace_unknown_words: Whether to replace the `[UNK]`s.

    Returns:
        The dict of outputs of `TranslatorModule.translate`, one row per
        hypothesis (`source_tokens`: one per text).
    """
    tokens = tf.cast(decoded["tokens"], tf.int32)
    # A text without a token (empty, blank) translates to "": its rows end
    # at once, with a zero score (as `Translator.generate`).
    ids = tf.cast(source_ids, tf.int32)
    content = tf.logical_and(
        tf.not_equal(ids, text_lib.PAD_ID),
        tf.logical_and(
            tf.not_equal(ids, text_lib.START_ID),
            tf.not_equal(ids, text_lib.END_ID),
        ),
    )
    empty = tf.equal(tf.reduce_sum(tf.cast(content, tf.int32), axis=1), 0)
    if copies is not None:
        empty = tf.repeat(empty, copies, axis=0)
    tokens = tf.where(empty[:, None], text_lib.END_ID, tokens)
    keep = strip_after_end(tokens)
    lengths = tf.reduce_sum(tf.cast(keep, tf.int32), axis=1)
    max_len = tf.reduce_max(tf.concat([lengths, [0]], axis=0))
    tokens = tokens[:, :max_len]
    keep = keep[:, :max_len]
    attention = tf.cast(decoded["attention"][:, :max_len], tf.float32)
    attention = tf.where(keep[:, :, None], attention, 0.0)
    target_strings = tf.where(keep, target_processor.token_strings(tokens), "")
    source_strings = source_processor.token_strings(source_ids).to_tensor("")
    attention = attention[:, :, : tf.shape(source_strings)[1]]
    outputs = {
        "translation": target_processor.detokenize(tokens),
        "source_tokens": source_strings,
        "target_tokens": target_strings,
        "attention": attention,
        "target_lengths": lengths,
        "scores": tf.where(empty, 0.0, tf.cast(decoded["scores"], tf.float32)),
        "log_probs": tf.where(
            empty, 0.0, tf.cast(decoded["log_probs"], tf.float32)
        ),
    }
    if replace_unknown_words:
        words = source_words(source_processor, text, source_ids)
        if copies is not None:
            words = tf.repeat(words, copies, axis=0)
        outputs = replace_unknown(
            outputs, tf.where(keep, tokens, text_lib.PAD_ID), attention, words
        )
    return outputs


def source_words(processor: Any, text: Tensor, source_ids: Tensor) -> Any:
    """The word of every source position, `(batch, S)` strings.

    Args:
        processor: The source processor. With `tokenize_words` (the NMT
            example's WordPiece processor), each sub-word gets the whole
            pre-tokenized word it belongs to (an out-of-vocabulary word is
            one `[UNK]` token whose word is the original word); otherwise
            (the G2P example's characters) the token string.
        text: `(batch,)` strings, the inputs of `source_ids`.
        source_ids: Ragged `(batch, (S))` ids of `processor.tokenize(text)`.

    Returns:
        Dense `(batch, S)` strings, `""` at the reserved tokens (`[END]`)
        and after each row's end.
    """
    tokens = processor.token_strings(source_ids).to_tensor("")
    reserved = tf.reduce_any(
        tf.equal(tokens[..., None], list(text_lib.RESERVED_TOKENS)), -1
    )
    # Reserved tokens are no words, but the unknown characters of the G2P
    # source are.
    tokens = tf.where(
        tf.logical_and(reserved, tf.not_equal(tokens, text_lib.UNK)),
        "",
        tokens,
    )
    if not hasattr(processor, "tokenize_words"):
        return tokens
    pieces = processor.tokenize_words(text)  # (batch, (words), (pieces))
    words = processor.words(text)  # (batch, (words))
    per_piece = tf.gather(words.flat_values, pieces.values.value_rowids())
    per_piece = tf.RaggedTensor.from_row_splits(
        per_piece, pieces.merge_dims(1, 2).row_splits
    )
    offset = int(processor.add_start)
    room = processor.max_tokens - offset - int(processor.add_end)
    per_piece = per_piece[:, :room].to_tensor("")
    batch = tf.shape(tokens)[0]
    per_piece = tf.concat(
        [tf.fill([batch, offset], ""), per_piece, tf.fill([batch, 1], "")],
        axis=1,
    )[:, : tf.shape(tokens)[1]]
    return tf.where(tf.equal(per_piece, ""), tokens, per_piece)


def _fill_unknown(translation: Tensor, words: Tensor):
    """Replaces the `[UNK]`s of each translation, in order, by `words`
    (ragged `(rows, (unknowns))`); missing words leave `[UNK]`."""
    pieces = tf.strings.split(translation, sep=text_lib.UNK)
    rows = pieces.value_rowids()
    index = tf.ragged.range(pieces.row_lengths()).flat_values
    width = tf.maximum(
        tf.reduce_max(
            tf.concat([pieces.row_lengths(), words.row_lengths(), [1]], axis=0)
        ),
        1,
    )
    dense = words.to_tensor(
        text_lib.UNK, shape=tf.stack([words.nrows(), width])
    )
    before = tf.gather_nd(
        dense, tf.stack([rows, tf.maximum(index - 1, 0)], axis=1)
    )
    before = tf.where(index == 0, "", before)
    joined = tf.RaggedTensor.from_row_splits(
        tf.strings.join([before, pieces.flat_values]), pieces.row_splits
    )
    return tf.strings.reduce_join(joined, axis=1)


def replace_unknown(
    outputs: Tensor, tokens: Tensor, attention: Tensor, words: Tensor
) -> Any:
    """Unknown-word replacement in a dict of translator outputs.

    Args:
        outputs: Dict with `translation` `(rows,)` and `target_tokens`
            `(rows, L)` strings.
        tokens: int32 `(rows, L)` target ids (`[UNK]` = `text.UNK_ID`).
        attention: float32 `(rows, L, S)`.
        words: `(rows, S)` strings of `source_words`; positions with `""`
            are never copied.

    Returns:
        `outputs` with `translation` and `target_tokens` replaced. An
        `[UNK]` stays where the source has no word.
    """
    # One more source column, never chosen: argmax needs one.
    attention = tf.pad(attention, [[0, 0], [0, 0], [0, 1]])
    words = tf.pad(words, [[0, 0], [0, 1]], constant_values="")
    positions = unknown_source_positions(
        tokens, attention, text_lib.UNK_ID, tf.not_equal(words, "")
    )
    copied = tf.gather(words, tf.maximum(positions, 0), batch_dims=1)
    unknown = positions >= 0
    known = tf.logical_and(unknown, tf.not_equal(copied, ""))
    outputs = dict(outputs)
    outputs["target_tokens"] = tf.where(known, copied, outputs["target_tokens"])
    # Every `[UNK]` of the translation, in order: its word or `[UNK]`.
    fills = tf.where(known, copied, text_lib.UNK)
    outputs["translation"] = _fill_unknown(
        outputs["translation"], tf.ragged.boolean_mask(fills, unknown)
    )
    return outputs
