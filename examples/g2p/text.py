"""Words to character ids and phone ids back to pronunciations, as TF ops.

A `keras_attention.serving.Tokenizer` (`tokenize`,
`token_strings`, `detokenize`, `vocab_size`) with the reserved tokens and
ids of `keras_attention.seq2seq.tokens` (`[PAD] [UNK] [START] [END]` =
0..3), so the library's `Seq2Seq`, dataset and SavedModel serve it. The
vocabularies are fixed (letters and apostrophe; the 39 ARPAbet phones), held
in constant lookup tables: a SavedModel needs no asset file.

- Source: a raw word. Invalid UTF-8 is replaced, the text is cut to
  `MAX_INPUT_CHARS`, NFKC-normalised, lower-cased and stripped; each
  character is a token (a character outside the vocabulary is `[UNK]`).
- Target: phones separated by spaces (`"HH AH L OW"`).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from examples.g2p.data import PHONES
from keras_attention.serving import Tokenizer
from keras_attention.seq2seq.tokens import RESERVED_TOKENS
from keras_attention.seq2seq.tokens import UNK
from keras_attention.seq2seq.tokens import clean_strings
from keras_attention.seq2seq.tokens import content_ids
from keras_attention.seq2seq.tokens import frame_ids

LETTERS = tuple("abcdefghijklmnopqrstuvwxyz'")
# Longest token sequence, [START]/[END] included: CMUdict's longest word
# has 34 letters and its longest pronunciation 32 phones.
MAX_TOKENS = 48


class SymbolProcessor(Tokenizer):
    """Strings to ids over a fixed symbol set, and back.

    Args:
        symbols: The symbols, after the reserved tokens.
        unit: `"char"` (each character is a symbol: words) or `"word"`
            (whitespace-separated symbols: phones).
        max_tokens: Longest sequence, `[START]`/`[END]` included.
        add_start: Whether `tokenize` prepends `[START]`.
        add_end: Whether `tokenize` appends `[END]`.
    """

    def __init__(
        self,
        symbols,
        unit,
        max_tokens=MAX_TOKENS,
        add_start=True,
        add_end=True,
        name=None,
    ):
        super().__init__(name=name)
        if unit not in ("char", "word"):
            raise ValueError(
                f"`unit` must be 'char' or 'word'. Received: unit={unit!r}"
            )
        if max_tokens < 3:
            raise ValueError(
                "`max_tokens` must be at least 3. "
                f"Received: max_tokens={max_tokens}"
            )
        self.vocab = list(RESERVED_TOKENS) + list(symbols)
        self.unit = unit
        self.max_tokens = max_tokens
        self.add_start = add_start
        self.add_end = add_end
        self.vocab_size = len(self.vocab)
        ids = tf.range(self.vocab_size, dtype=tf.int64)
        tokens = tf.constant(self.vocab)
        self.token_to_id = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tokens, ids),
            default_value=tf.constant(1, tf.int64),  # [UNK]
        )
        self.id_to_token = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(ids, tokens),
            default_value=UNK,
        )

    def symbols(self, texts):
        """The symbols of each string, `(batch, (symbols))`."""
        texts = clean_strings(tf.convert_to_tensor(texts, tf.string))
        texts = tf_text.normalize_utf8(texts, "NFKC")
        if self.unit == "word":
            return tf.strings.split(tf.strings.strip(texts))
        texts = tf.strings.strip(tf.strings.lower(texts, encoding="utf-8"))
        return tf.strings.unicode_split(texts, "UTF-8")

    def tokenize(self, texts):
        """Ids `(batch, (tokens))` int64 with `[START]`/`[END]`."""
        symbols = self.symbols(texts)
        ids = tf.ragged.map_flat_values(self.token_to_id.lookup, symbols)
        return frame_ids(ids, self.max_tokens, self.add_start, self.add_end)

    def detokenize(self, ids):
        """Symbols before the first `[END]`, without `[PAD]`/`[START]`.

        Joined by spaces for `"word"` units (phones), by nothing for
        `"char"` units (spellings).
        """
        ids = content_ids(ids)
        separator = " " if self.unit == "word" else ""
        return tf.strings.reduce_join(
            self.token_strings(ids), axis=-1, separator=separator
        )


def word_processor(max_tokens=MAX_TOKENS, add_start=True):
    """Source side: characters of a word, `[END]` (and `[START]`) added."""
    return SymbolProcessor(
        LETTERS, "char", max_tokens, add_start=add_start,
        name="word_processor",
    )


def phone_processor(max_tokens=MAX_TOKENS):
    """Target side: space-separated ARPAbet phones."""
    return SymbolProcessor(PHONES, "word", max_tokens, name="phone_processor")
