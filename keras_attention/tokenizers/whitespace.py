"""`WhitespaceTokenizer`: one token a word (or a phone)."""

from typing import Any
from typing import List

import keras

from keras_attention.checks import check_bool
from keras_attention.tokenizers.base import Tokenizer


@keras.saving.register_keras_serializable(package="keras_attention")
class WhitespaceTokenizer(Tokenizer):
    """One token a word: the most frequent words of the training texts.

    A text is normalised (invalid UTF-8 replaced, NFKC, optionally
    lower-cased), split at whitespace and, with `split_punctuation`,
    punctuation and symbols split off each word; a word outside the
    vocabulary is `[UNK]`. `detokenize` joins the words with spaces (and,
    with `split_punctuation`, removes the spaces before closing
    punctuation). Without `split_punctuation` a token is exactly a
    whitespace-separated unit: phones (`"HH AH L OW"`), tags, ids.

    Args:
        vocabulary: The tokens, `[PAD] [UNK] [START] [END]` first.
        lower_case: Whether texts are lower-cased. Defaults to `False`.
        split_punctuation: Whether punctuation and symbols are tokens of
            their own. Defaults to `True`.
        name: Optional name.
    """

    kind = "whitespace"

    def __init__(
        self,
        vocabulary: Any,
        lower_case: bool = False,
        split_punctuation: bool = True,
        **kwargs: Any,
    ):
        super().__init__(vocabulary, lower_case, **kwargs)
        self.split_punctuation = check_bool(
            "split_punctuation", split_punctuation
        )

    @classmethod
    def learn(
        cls,
        texts: List[str],
        size: int,
        lower_case: bool = False,
        split_punctuation: bool = True,
        **kwargs: Any,
    ) -> dict:
        from keras_attention.tokenizers import text_ops

        unit = "word" if split_punctuation else "whole_word"
        counts = text_ops.count_units(texts, bool(lower_case), unit)
        return dict(
            vocabulary=text_ops.top_units(counts, size),
            lower_case=lower_case,
            split_punctuation=split_punctuation,
            **kwargs,
        )

    def _make_ops(self) -> Any:
        from keras_attention.tokenizers.text_ops import WordOps

        return WordOps(
            self.vocabulary, self.lower_case, self.split_punctuation
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config["split_punctuation"] = self.split_punctuation
        return config
