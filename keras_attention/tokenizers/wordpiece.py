"""`WordPieceTokenizer`: sub-words learned from the user's texts."""

from typing import Any
from typing import List

import keras

from keras_attention.tokenizers.base import Tokenizer


@keras.saving.register_keras_serializable(package="keras_attention")
class WordPieceTokenizer(Tokenizer):
    """WordPiece sub-words (BERT's scheme, tensorflow-text).

    A text is normalised (invalid UTF-8 replaced, NFKC, optionally
    lower-cased), split at whitespace, punctuation and symbols split off,
    and each word cut into the longest pieces of the vocabulary (`##`
    continues a word; a word with no pieces is `[UNK]`). `detokenize`
    joins the pieces and removes the spaces before closing punctuation,
    after opening punctuation and around apostrophes between letters.

    Args:
        vocabulary: The tokens, `[PAD] [UNK] [START] [END]` first.
        lower_case: Whether texts are lower-cased. Defaults to `False`.
        name: Optional name.

    Example:

    ```python
    tokenizer = WordPieceTokenizer.from_texts(texts, vocabulary_size=2000)
    tokenizer.tokenize(["Hello, world!"])  # ragged int64 ids
    ```
    """

    kind = "wordpiece"

    @classmethod
    def learn(
        cls, texts: List[str], size: int, lower_case: bool = False, **kwargs: Any
    ) -> dict:
        from keras_attention.tokenizers import text_ops

        vocabulary = text_ops.learn_wordpiece(texts, size, bool(lower_case))
        return dict(vocabulary=vocabulary, lower_case=lower_case, **kwargs)

    def _make_ops(self) -> Any:
        from keras_attention.tokenizers.text_ops import WordPieceOps

        return WordPieceOps(self.vocabulary, self.lower_case)
