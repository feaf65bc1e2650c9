"""The TensorFlow ops of the tokenizers (tensorflow-text).

TensorFlow: each class is a `tf.Module` whose lookup tables travel in a
SavedModel and run in `tf.data`. Every tokenizer first normalises a text
the same way:

1. invalid UTF-8 replaced by U+FFFD, the text cut to `MAX_INPUT_CHARS`
   characters (`tokens.clean_strings`);
2. NFKC (`tensorflow_text.normalize_utf8`), then optionally lower-cased;
3. split at whitespace into *whitespace words*
   (`tensorflow_text.WhitespaceTokenizer`).

Each whitespace word then becomes pieces: WordPiece sub-words or whole
words (after punctuation and symbols `[\\p{P}\\p{S}]` are split off),
characters, or SentencePiece pieces. `tokenize_words` keeps the pieces
grouped by whitespace word, `(batch, (words), (pieces))`.
"""

from typing import Any
from typing import Dict
from typing import List
from typing import Sequence
from keras_attention.typing import Tensor

import collections

import tensorflow as tf
import tensorflow_text as tf_text

from keras_attention.serving.tokenizer import Tokenizer as Serving
from keras_attention.seq2seq.tokens import RESERVED_TOKENS
from keras_attention.seq2seq.tokens import UNK
from keras_attention.seq2seq.tokens import UNK_ID
from keras_attention.seq2seq.tokens import clean_strings
from keras_attention.seq2seq.tokens import content_ids
from keras_attention.seq2seq.tokens import frame_ids

_PUNCT = r"([\p{P}\p{S}])"


def normalize(texts: Tensor, lower_case: bool) -> Tensor:
    """Cleaned, NFKC-normalised (and lower-cased) strings `(batch,)`."""
    texts = clean_strings(tf.convert_to_tensor(texts, tf.string))
    texts = tf_text.normalize_utf8(texts, "NFKC")
    if lower_case:
        # `tf.strings.lower` ends a text at its first NUL: NULs go first.
        texts = tf.strings.regex_replace(texts, "\\x00", "")
        texts = tf.strings.lower(texts, encoding="utf-8")
    return texts


# The White_Space characters that NFKC keeps and that
# `tensorflow_text.WhitespaceTokenizer` splits at but leaves part of in the
# word before (all but their last UTF-8 byte): they become spaces first.
_SPLIT_WHITESPACE = "[\u0085\u1680\u2028\u2029]"


def whitespace_words(texts: Tensor, lower_case: bool) -> Tensor:
    """The normalised whitespace words, `(batch, (words))` strings."""
    texts = tf.strings.regex_replace(
        normalize(texts, lower_case), _SPLIT_WHITESPACE, " "
    )
    return tf_text.WhitespaceTokenizer().tokenize(texts)


def split_punctuation(words: Tensor) -> Tensor:
    """Each word of a flat `(n,)` string tensor split into its runs of
    letters and digits and its single punctuation and symbol characters,
    `(n, (parts))`."""
    spaced = tf.strings.regex_replace(words, _PUNCT, r" \1 ")
    return tf_text.WhitespaceTokenizer().tokenize(spaced)


def join_words(text: Tensor) -> Tensor:
    """Space-joined tokens made readable: no space before closing
    punctuation, after opening punctuation, or around an apostrophe between
    letters (`"l ' homme"` -> `"l'homme"`)."""
    text = tf.strings.regex_replace(text, r" ([.,!?;:%)\]}»])", r"\1")
    text = tf.strings.regex_replace(text, r"([(\[{¿¡«]) ", r"\1")
    return tf.strings.regex_replace(
        text, r"([\p{L}\p{N}]) (['’]) ([\p{L}\p{N}])", r"\1\2\3"
    )


def _by_word(pieces: Tensor, words: Tensor) -> Tensor:
    """Per-word pieces `(n_words, (pieces))` regrouped by text,
    `(batch, (words), (pieces))`."""
    return tf.RaggedTensor.from_row_splits(pieces, words.row_splits)


def _lookup_table(vocabulary: Sequence[str], default: int) -> Any:
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(vocabulary), tf.string),
            tf.range(len(vocabulary), dtype=tf.int64),
        ),
        default_value=tf.constant(default, tf.int64),
    )


def _id_table(vocabulary: Sequence[str]) -> Any:
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.range(len(vocabulary), dtype=tf.int64),
            tf.constant(list(vocabulary), tf.string),
        ),
        default_value=UNK,
    )


class TokenizerOps(Serving):
    """The ops of one tokenizer over a fixed vocabulary (base class);
    `token_strings` is `serving.Tokenizer`'s, over `id_to_token`."""

    def __init__(self, vocabulary: Sequence[str], lower_case: bool):
        super().__init__()
        self.lower_case = lower_case
        self.vocab_size = len(vocabulary)
        self.id_to_token = _id_table(vocabulary)

    def words(self, texts: Tensor) -> Tensor:
        return whitespace_words(texts, self.lower_case)

    def tokenize_words(self, texts: Tensor) -> Tensor:
        words = self.words(texts)
        return _by_word(self.word_pieces(words.flat_values), words)

    def word_pieces(self, words: Tensor) -> Tensor:
        """The piece ids of a flat `(n,)` tensor of words, `(n,
        (pieces))` int64."""
        raise NotImplementedError

    def detokenize(self, ids: Tensor) -> Tensor:
        raise NotImplementedError


class WordPieceOps(TokenizerOps):
    """WordPiece sub-words (`##` continues a word) of the words and
    punctuation marks of each whitespace word."""

    def __init__(self, vocabulary: Sequence[str], lower_case: bool):
        super().__init__(vocabulary, lower_case)
        self.wordpiece = tf_text.WordpieceTokenizer(
            tf.lookup.StaticVocabularyTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(vocabulary), tf.string),
                    tf.range(len(vocabulary), dtype=tf.int64),
                ),
                num_oov_buckets=1,
            ),
            suffix_indicator="##",
            max_bytes_per_word=100,
            token_out_type=tf.int64,
            unknown_token=UNK,
        )

    def word_pieces(self, words: Tensor) -> Tensor:
        pieces = self.wordpiece.tokenize(split_punctuation(words))
        return pieces.merge_dims(1, 2)

    def detokenize(self, ids: Tensor) -> Tensor:
        text = tf.strings.reduce_join(
            self.token_strings(content_ids(ids)), axis=-1, separator=" "
        )
        return join_words(tf.strings.regex_replace(text, r" ##", ""))


class WordOps(TokenizerOps):
    """One token a word (punctuation marks split off, optionally)."""

    def __init__(
        self,
        vocabulary: Sequence[str],
        lower_case: bool,
        split_punctuation: bool,
    ):
        super().__init__(vocabulary, lower_case)
        self.split_punctuation = split_punctuation
        self.token_to_id = _lookup_table(vocabulary, UNK_ID)

    def word_pieces(self, words: Tensor) -> Tensor:
        if self.split_punctuation:
            parts = split_punctuation(words)
        else:
            parts = tf.RaggedTensor.from_tensor(tf.expand_dims(words, 1))
        return tf.ragged.map_flat_values(self.token_to_id.lookup, parts)

    def detokenize(self, ids: Tensor) -> Tensor:
        text = tf.strings.reduce_join(
            self.token_strings(content_ids(ids)), axis=-1, separator=" "
        )
        return join_words(text) if self.split_punctuation else text


class CharacterOps(TokenizerOps):
    """One token a character; where the vocabulary holds `" "`, a space
    token before every whitespace word but the first."""

    def __init__(self, vocabulary: Sequence[str], lower_case: bool):
        super().__init__(vocabulary, lower_case)
        self.token_to_id = _lookup_table(vocabulary, UNK_ID)
        self.space_id = vocabulary.index(" ") if " " in vocabulary else None

    def tokenize_words(self, texts: Tensor) -> Tensor:
        words = self.words(texts)
        chars = tf.strings.unicode_split(words.flat_values, "UTF-8")
        pieces = tf.ragged.map_flat_values(self.token_to_id.lookup, chars)
        if self.space_id is not None:
            position = tf.ragged.range(words.row_lengths()).flat_values
            spaces = tf.RaggedTensor.from_row_lengths(
                tf.fill(
                    [tf.reduce_sum(tf.cast(position > 0, tf.int64))],
                    tf.constant(self.space_id, tf.int64),
                ),
                tf.cast(position > 0, tf.int64),
            )
            pieces = tf.concat([spaces, pieces], axis=1)
        return _by_word(pieces, words)

    def detokenize(self, ids: Tensor) -> Tensor:
        return tf.strings.reduce_join(
            self.token_strings(content_ids(ids)), axis=-1, separator=""
        )


class SentencePieceOps(TokenizerOps):
    """SentencePiece pieces of each whitespace word, from a trained model
    (its ids 0-3 are the reserved tokens)."""

    def __init__(
        self, vocabulary: Sequence[str], lower_case: bool, model: bytes
    ):
        super().__init__(vocabulary, lower_case)
        self.sentencepiece = tf_text.SentencepieceTokenizer(
            model=model, out_type=tf.int32
        )

    def word_pieces(self, words: Tensor) -> Tensor:
        return tf.cast(self.sentencepiece.tokenize(words), tf.int64)

    def detokenize(self, ids: Tensor) -> Tensor:
        return self.sentencepiece.detokenize(
            tf.cast(content_ids(ids), tf.int32)
        )


class FramedTokenizer(Serving):
    """A tokenizer's ops with `[START]`/`[END]` framing and a length cut:
    the `keras_attention.serving.Tokenizer` that `make_dataset`
    and `TranslatorModule` take.

    Args:
        ops: A `TokenizerOps`.
        add_start: Whether `tokenize` prepends `[START]`.
        add_end: Whether `tokenize` appends `[END]`.
        max_tokens: Longest id sequence, `[START]`/`[END]` included.
    """

    def __init__(
        self, ops: Any, add_start: bool, add_end: bool, max_tokens: int
    ):
        super().__init__(name=None)
        self.ops = ops
        self.add_start = bool(add_start)
        self.add_end = bool(add_end)
        self.max_tokens = int(max_tokens)
        self.vocab_size = ops.vocab_size
        self.lower_case = ops.lower_case
        self.id_to_token = ops.id_to_token

    def words(self, texts: Tensor) -> Tensor:
        return self.ops.words(texts)

    def tokenize_words(self, texts: Tensor) -> Tensor:
        return self.ops.tokenize_words(texts)

    def tokenize(self, texts: Tensor) -> Tensor:
        ids = self.ops.tokenize_words(texts).merge_dims(-2, -1)
        return frame_ids(ids, self.max_tokens, self.add_start, self.add_end)

    def detokenize(self, ids: Tensor) -> Tensor:
        return self.ops.detokenize(ids)


# ----------------------------------------------------------------------
# Learning vocabularies.
def _batches(texts: List[str]) -> Any:
    return tf.data.Dataset.from_tensor_slices(
        tf.constant(texts, tf.string)
    ).batch(1024)


def count_units(
    texts: List[str], lower_case: bool, unit: str
) -> Dict[str, int]:
    """How often each unit occurs in `texts`: `"word"` (whitespace words
    with punctuation split off), `"whole_word"` (whitespace words) or
    `"char"` (characters of the whitespace words, and `" "` between
    them)."""
    counts = collections.Counter()
    for batch in _batches(texts):
        words = whitespace_words(batch, lower_case)
        if unit == "char":
            parts = tf.strings.unicode_split(words.flat_values, "UTF-8")
            gaps = tf.maximum(words.row_lengths() - 1, 0)
            counts[" "] += int(tf.reduce_sum(gaps))
        elif unit == "word":
            parts = split_punctuation(words.flat_values)
        else:
            parts = words
        for value in parts.flat_values.numpy():
            counts[value.decode("utf-8")] += 1
    if not counts.get(" "):
        counts.pop(" ", None)
    return counts


def top_units(counts: Dict[str, int], size: int) -> List[str]:
    """The reserved tokens, then the `size - 4` most frequent units (ties
    in text order), reserved strings skipped."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    units = [u for u, _ in ranked if u not in RESERVED_TOKENS and u]
    return list(RESERVED_TOKENS) + units[: size - len(RESERVED_TOKENS)]


def learn_wordpiece(texts: List[str], size: int, lower_case: bool) -> list:
    """A WordPiece vocabulary (tensorflow-text's `bert_vocab_from_dataset`)
    learned from the punctuation-split words of `texts`."""
    from tensorflow_text.tools.wordpiece_vocab import (
        bert_vocab_from_dataset as bert_vocab,
    )

    def pretokenized(batch: Tensor) -> Tensor:
        words = whitespace_words(batch, lower_case)
        parts = _by_word(split_punctuation(words.flat_values), words)
        return tf.strings.reduce_join(
            parts.merge_dims(1, 2), axis=-1, separator=" "
        )

    vocabulary = bert_vocab.bert_vocab_from_dataset(
        _batches(texts).map(pretokenized),
        vocab_size=size,
        reserved_tokens=list(RESERVED_TOKENS),
        # The text is normalised and split already: the learner must not
        # change it (no lower-casing, no accent stripping).
        bert_tokenizer_params={"lower_case": False},
        learn_params={},
    )
    return list(vocabulary)
