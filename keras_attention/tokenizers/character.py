"""`CharacterTokenizer`: one token a character (G2P spellings)."""

from typing import Any
from typing import List

import keras

from keras_attention.tokenizers.base import Tokenizer


@keras.saving.register_keras_serializable(package="keras_attention")
class CharacterTokenizer(Tokenizer):
    """One token a character of the normalised text.

    A text is normalised (invalid UTF-8 replaced, NFKC, optionally
    lower-cased) and split at whitespace; each character of a word is a
    token (one outside the vocabulary is `[UNK]`). Where the vocabulary
    holds `" "` (learned from texts of several words), a space token stands
    between words, and `detokenize` joins the tokens with nothing between.

    Args:
        vocabulary: The tokens, `[PAD] [UNK] [START] [END]` first, then
            single characters (and `" "`).
        lower_case: Whether texts are lower-cased. Defaults to `False`.
        name: Optional name.
    """

    kind = "character"

    def __init__(self, vocabulary: Any, lower_case: bool = False, **kwargs: Any):
        super().__init__(vocabulary, lower_case, **kwargs)
        for i, token in enumerate(self.vocabulary[4:], start=4):
            if len(token) != 1:
                raise ValueError(
                    "`vocabulary` of a character tokenizer must hold single "
                    f"characters after the reserved tokens. Received: "
                    f"{token!r} at vocabulary[{i}]"
                )

    @classmethod
    def learn(
        cls, texts: List[str], size: int, lower_case: bool = False, **kwargs: Any
    ) -> dict:
        from keras_attention.tokenizers import text_ops

        counts = text_ops.count_units(texts, bool(lower_case), "char")
        vocabulary = text_ops.top_units(counts, size)
        return dict(vocabulary=vocabulary, lower_case=lower_case, **kwargs)

    def _make_ops(self) -> Any:
        from keras_attention.tokenizers.text_ops import CharacterOps

        return CharacterOps(self.vocabulary, self.lower_case)
