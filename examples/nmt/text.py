"""The NMT example's WordPiece vocabularies, one file a side in the run
directory (`source_vocab.txt`, `target_vocab.txt`: one token a line).

The tokenizer is the library's `keras_attention.tokenizers.
WordPieceTokenizer`: invalid UTF-8 replaced and the text cut to
`MAX_INPUT_CHARS`, NFKC, optional lower-casing, punctuation and symbols
split off, WordPiece sub-words (`##` continues a word); `detokenize`
joins the pieces and removes the spaces before closing punctuation, after
opening punctuation and around apostrophes between letters. Its
TensorFlow ops run in `tf.data` and inside the exported SavedModel, which
therefore takes raw strings. `learn_vocabulary` learns a vocabulary from
a run's training sentences (tensorflow-text's `bert_vocab_from_dataset`),
the reserved tokens `[PAD] [UNK] [START] [END]` first.
"""

import os

from keras_attention.seq2seq.tokens import END_ID  # noqa: F401
from keras_attention.seq2seq.tokens import MAX_INPUT_CHARS  # noqa: F401
from keras_attention.seq2seq.tokens import PAD_ID  # noqa: F401
from keras_attention.seq2seq.tokens import RESERVED_TOKENS  # noqa: F401
from keras_attention.seq2seq.tokens import START_ID  # noqa: F401
from keras_attention.seq2seq.tokens import UNK_ID  # noqa: F401
from keras_attention.seq2seq.tokens import clean_strings  # noqa: F401
from keras_attention.seq2seq.tokens import punctuation_ids  # noqa: F401
from keras_attention.tokenizers import WordPieceTokenizer


def learn_vocabulary(sentences, vocab_size, lower_case=True):
    """A WordPiece vocabulary learned from training sentences (a list of
    tokens, the reserved tokens first; the learner may return fewer than
    `vocab_size`)."""
    return WordPieceTokenizer.from_texts(
        list(sentences), vocab_size, lower_case=lower_case
    ).vocabulary


def save_vocabulary(vocab, path):
    """Writes one token a line (UTF-8)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for token in vocab:
            f.write(token + "\n")


def load_vocabulary(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def load_tokenizer(path, lower_case=True):
    """The `WordPieceTokenizer` of a vocabulary file.

    Raises:
        ValueError: if the file does not start with the reserved tokens.
    """
    vocabulary = load_vocabulary(path)
    try:
        return WordPieceTokenizer(vocabulary, lower_case=lower_case)
    except ValueError as e:
        raise ValueError(f"{e} (in the vocabulary file {path!r})") from None
