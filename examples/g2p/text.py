"""The G2P example's fixed vocabularies: a word's letters, its phones.

The tokenizers are the library's (`keras_attention.tokenizers`), with the
reserved tokens `[PAD] [UNK] [START] [END]` (ids 0 to 3) first; the
vocabularies are fixed, so a run directory needs no vocabulary file.

- Source: a word. `CharacterTokenizer` over the letters and the
  apostrophe, lower-casing: invalid UTF-8 replaced, the text cut to
  `MAX_INPUT_CHARS`, NFKC-normalised, lower-cased; each character is a
  token (one outside the vocabulary is `[UNK]`). Framed with `[END]` and
  no `[START]`.
- Target: phones separated by spaces (`"HH AH L OW"`), `WhitespaceTokenizer`
  over the 39 ARPAbet phones without punctuation splitting.

`outside_alphabet(word)` names the characters of a word that the source
side reads as `[UNK]` (digits, accented letters), for `translate`'s
warning.
"""

import unicodedata

from examples.g2p.data import PHONES
from keras_attention.seq2seq.tokens import RESERVED_TOKENS
from keras_attention.tokenizers import CharacterTokenizer
from keras_attention.tokenizers import WhitespaceTokenizer

LETTERS = tuple("abcdefghijklmnopqrstuvwxyz'")
SOURCE_VOCABULARY = list(RESERVED_TOKENS) + list(LETTERS)
TARGET_VOCABULARY = list(RESERVED_TOKENS) + list(PHONES)
# Longest token sequence, [START]/[END] included: CMUdict's longest word
# has 34 letters and its longest pronunciation 32 phones.
MAX_TOKENS = 48
# Sources end with [END] (`Translator`'s `source_end_token`).
SOURCE_END_TOKEN = True


def outside_alphabet(word):
    """The characters of `word` outside `LETTERS`, each once, in order, as
    the source tokenizer reads the word (NFKC, lower-cased, whitespace
    dropped): those it reads as `[UNK]`. `""` when there is none.

    Example: `outside_alphabet("Café 42")` is `"é42"`.
    """
    text = unicodedata.normalize("NFKC", word).lower()
    outside = (c for c in text if c not in LETTERS and not c.isspace())
    return "".join(dict.fromkeys(outside))


def make_tokenizers():
    """`(source, target)`: the letters tokenizer and the phones tokenizer."""
    return (
        CharacterTokenizer(
            SOURCE_VOCABULARY, lower_case=True, name="word_tokenizer"
        ),
        WhitespaceTokenizer(
            TARGET_VOCABULARY, split_punctuation=False, name="phone_tokenizer"
        ),
    )


def framed(source, target):
    """The `keras_attention.serving.Tokenizer`s of the two sides: a word's
    letters then `[END]`; `[START]`, the phones, `[END]`."""
    return (
        source.framed(False, SOURCE_END_TOKEN, MAX_TOKENS),
        target.framed(True, True, MAX_TOKENS),
    )
