"""Tokenizers of `Translator`: strings to `Seq2Seq` ids and back.

- `WordPieceTokenizer` (`"wordpiece"`): sub-words learned from texts;
- `SentencePieceTokenizer` (`"sentencepiece"`): a SentencePiece model's
  pieces (learning one needs the `sentencepiece` package);
- `WhitespaceTokenizer` (`"whitespace"`): one token a word (or a phone);
- `CharacterTokenizer` (`"character"`): one token a character.

Each is serializable (its configuration holds the vocabulary) and runs as
TensorFlow ops (tensorflow-text) in `tf.data` and inside SavedModels, for
every Keras backend. `get(identifier)` turns a name, a config dict or a
tokenizer into a tokenizer class or instance.
"""

from typing import Any

from keras_attention.checks import ArgumentTypeError
from keras_attention.tokenizers.base import Tokenizer
from keras_attention.tokenizers.base import check_texts
from keras_attention.tokenizers.character import CharacterTokenizer
from keras_attention.tokenizers.sentencepiece import SentencePieceTokenizer
from keras_attention.tokenizers.whitespace import WhitespaceTokenizer
from keras_attention.tokenizers.wordpiece import WordPieceTokenizer

KINDS = {
    cls.kind: cls
    for cls in (
        WordPieceTokenizer,
        SentencePieceTokenizer,
        WhitespaceTokenizer,
        CharacterTokenizer,
    )
}


def get(identifier: Any) -> Any:
    """A tokenizer class from its kind (`"wordpiece"`, ...), or the
    tokenizer itself.

    Raises:
        ValueError: for an unknown kind.
        TypeError: for anything else.
    """
    if isinstance(identifier, Tokenizer):
        return identifier
    if isinstance(identifier, str):
        if identifier not in KINDS:
            raise ValueError(
                f"Unknown tokenizer. Expected one of {sorted(KINDS)} or a "
                f"`Tokenizer`. Received: {identifier!r}"
            )
        return KINDS[identifier]
    raise ArgumentTypeError(
        f"A tokenizer must be one of {sorted(KINDS)} or a `Tokenizer`. "
        f"Received: {identifier!r:.80} of type {type(identifier).__name__}"
    )


__all__ = [
    "CharacterTokenizer",
    "KINDS",
    "SentencePieceTokenizer",
    "Tokenizer",
    "WhitespaceTokenizer",
    "WordPieceTokenizer",
    "check_texts",
    "get",
]
