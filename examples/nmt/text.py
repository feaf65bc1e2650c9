"""Text processing with tensorflow-text, as TensorFlow ops.

Everything from the raw string to the token ids is a TensorFlow op, so the
same code runs in the `tf.data` pipeline and inside the exported SavedModel,
which therefore takes raw strings:

1. invalid UTF-8 replaced by U+FFFD (`tf.strings.unicode_transcode`), the
   text cut to `MAX_INPUT_CHARS` characters;
2. NFKC normalisation (`tensorflow_text.normalize_utf8`);
3. optional lower-casing (`tf.strings.lower`, UTF-8 aware);
4. punctuation and symbols split off (`[\\p{P}\\p{S}]`), whitespace split
   (`tensorflow_text.WhitespaceTokenizer`);
5. WordPiece sub-words (`tensorflow_text.WordpieceTokenizer`) over a
   vocabulary learned from the training data with tensorflow-text's
   `bert_vocab_from_dataset`, with the reserved tokens
   `[PAD] [UNK] [START] [END]`;
6. `[START]`/`[END]` added, the sequence cut to `max_tokens` tokens.

`detokenize` goes back to readable text: sub-words joined, spaces before
closing punctuation removed.

The vocabulary is a file (one token a line); `TextProcessor` keeps the
lookup tables built from it, so `tf.saved_model.save` stores the file as an
asset of the SavedModel.
"""

import os

import tensorflow as tf
import tensorflow_text as tf_text

from examples.nmt.config import MAX_TOKENS
from keras_attention.serving import Tokenizer
from keras_attention.seq2seq.tokens import END  # noqa: F401
from keras_attention.seq2seq.tokens import END_ID  # noqa: F401
from keras_attention.seq2seq.tokens import MAX_INPUT_CHARS  # noqa: F401
from keras_attention.seq2seq.tokens import PAD  # noqa: F401
from keras_attention.seq2seq.tokens import PAD_ID  # noqa: F401
from keras_attention.seq2seq.tokens import RESERVED_TOKENS
from keras_attention.seq2seq.tokens import START  # noqa: F401
from keras_attention.seq2seq.tokens import START_ID  # noqa: F401
from keras_attention.seq2seq.tokens import UNK
from keras_attention.seq2seq.tokens import UNK_ID  # noqa: F401
from keras_attention.seq2seq.tokens import clean_strings
from keras_attention.seq2seq.tokens import content_ids
from keras_attention.seq2seq.tokens import frame_ids
from keras_attention.seq2seq.tokens import punctuation_ids  # noqa: F401

_PUNCT = r"([\p{P}\p{S}])"


def tf_pretokenize(texts, lower_case=True):
    """Normalises and splits a batch of strings into words, as TF ops.

    The TensorFlow twin of `corpus.pretokenize` (one Python string): both
    give the same words.

    Args:
        texts: String tensor `(batch,)`.
        lower_case: Whether to lower-case.

    Returns:
        A `tf.RaggedTensor` of words, `(batch, (words))`.
    """
    texts = clean_strings(tf.convert_to_tensor(texts, tf.string))
    texts = tf_text.normalize_utf8(texts, "NFKC")
    if lower_case:
        texts = tf.strings.lower(texts, encoding="utf-8")
    texts = tf.strings.regex_replace(texts, _PUNCT, r" \1 ")
    return tf_text.WhitespaceTokenizer().tokenize(texts)


def learn_vocabulary(sentences, vocab_size, lower_case=True):
    """Learns a WordPiece vocabulary from training sentences.

    Uses `tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset` on
    the pre-tokenized sentences (so the vocabulary sees the same words as
    the tokenizer).

    Args:
        sentences: Iterable of Python strings.
        vocab_size: Target vocabulary size (the learner may return fewer).
        lower_case: Whether the text is lower-cased.

    Returns:
        A list of tokens, the reserved tokens first.
    """
    from tensorflow_text.tools.wordpiece_vocab import (
        bert_vocab_from_dataset as bert_vocab,
    )

    sentences = list(sentences)
    words = tf.data.Dataset.from_tensor_slices(
        tf.constant(sentences, tf.string)
    ).batch(1024)
    words = words.map(
        lambda t: tf.strings.reduce_join(
            tf_pretokenize(t, lower_case), axis=-1, separator=" "
        )
    )
    vocab = bert_vocab.bert_vocab_from_dataset(
        words,
        vocab_size=vocab_size,
        reserved_tokens=list(RESERVED_TOKENS),
        # The text is already normalised and split: the learner must not
        # change it (no lower-casing, no accent stripping).
        bert_tokenizer_params={"lower_case": False},
        learn_params={},
    )
    return list(vocab)


def save_vocabulary(vocab, path):
    """Writes one token a line (UTF-8)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for token in vocab:
            f.write(token + "\n")


def load_vocabulary(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


class TextProcessor(Tokenizer):
    """Raw strings to WordPiece ids and back, as TensorFlow ops.

    Args:
        vocab_path: Path of the vocabulary file, reserved tokens first in
            the order `[PAD] [UNK] [START] [END]`.
        lower_case: Whether to lower-case the text. Defaults to `True`.
        max_tokens: Longest token sequence, `[START]`/`[END]` included.
            Defaults to `MAX_TOKENS`.
        add_start: Whether `tokenize` prepends `[START]` (the target side).
            Defaults to `True`.
        add_end: Whether `tokenize` appends `[END]`. Defaults to `True`.
    """

    def __init__(
        self,
        vocab_path,
        lower_case=True,
        max_tokens=MAX_TOKENS,
        add_start=True,
        add_end=True,
        name=None,
    ):
        super().__init__(name=name)
        vocab = load_vocabulary(vocab_path)
        if tuple(vocab[:4]) != RESERVED_TOKENS:
            raise ValueError(
                f"The vocabulary must start with {list(RESERVED_TOKENS)}. "
                f"Received: {vocab[:4]} in vocab_path={vocab_path!r}"
            )
        if max_tokens < 3:
            raise ValueError(
                "`max_tokens` must be at least 3. "
                f"Received: max_tokens={max_tokens}"
            )
        self.lower_case = lower_case
        self.max_tokens = max_tokens
        self.add_start = add_start
        self.add_end = add_end
        self.vocab_size = len(vocab)
        self.vocab_path = tf.saved_model.Asset(vocab_path)
        self.tokenizer = tf_text.WordpieceTokenizer(
            vocab_path,
            suffix_indicator="##",
            max_bytes_per_word=100,
            token_out_type=tf.int64,
            unknown_token=UNK,
        )
        self.id_to_token = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                vocab_path,
                key_dtype=tf.int64,
                key_index=tf.lookup.TextFileIndex.LINE_NUMBER,
                value_dtype=tf.string,
                value_index=tf.lookup.TextFileIndex.WHOLE_LINE,
            ),
            default_value=UNK,
        )

    def words(self, texts):
        """The pre-tokenized words, `(batch, (words))` strings."""
        return tf_pretokenize(texts, self.lower_case)

    def tokenize_words(self, texts):
        """Sub-word ids grouped by word, `(batch, (words), (pieces))`."""
        return self.tokenizer.tokenize(self.words(texts))

    def tokenize(self, texts):
        """Token ids `(batch, (tokens))` int64, with `[START]`/`[END]` as
        configured."""
        ids = self.tokenize_words(texts).merge_dims(-2, -1)
        return frame_ids(ids, self.max_tokens, self.add_start, self.add_end)

    def detokenize(self, ids):
        """Readable text from ids `(batch, tokens)`.

        `[PAD]`, `[START]` and everything from the first `[END]` on are
        dropped; sub-words are joined; spaces before closing punctuation,
        after opening punctuation and around apostrophes between letters
        are removed.
        """
        ids = content_ids(ids)
        text = tf.strings.reduce_join(
            self.token_strings(ids), axis=-1, separator=" "
        )
        text = tf.strings.regex_replace(text, r" ##", "")
        text = tf.strings.regex_replace(text, r" ([.,!?;:%)\]}»])", r"\1")
        text = tf.strings.regex_replace(text, r"([(\[{¿¡«]) ", r"\1")
        # Elisions and contractions: "l ' homme", "I ' m" -> "l'homme", "I'm".
        text = tf.strings.regex_replace(
            text, r"([\p{L}\p{N}]) (['’]) ([\p{L}\p{N}])", r"\1\2\3"
        )
        return text
