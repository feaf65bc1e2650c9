"""`Tokenizer`: the base of the text tokenizers of `Translator`.

A tokenizer maps strings to the ids of `Seq2Seq` and back. Its vocabulary
starts with the reserved tokens `[PAD] [UNK] [START] [END]` (ids 0 to 3,
`keras_attention.seq2seq.tokens`). It is a plain, serializable object: its
configuration holds the whole vocabulary, so it travels inside a `.keras`
file, and its TensorFlow ops (built on first use, tensorflow-text) run in
`tf.data` for every Keras backend and inside the exported SavedModel.

Every tokenizer works on *whitespace words*: the words of
`text.split()` after normalisation. `tokenize_words` gives the pieces of
each whitespace word, so that `Translator.align` reports links between
whitespace words whatever the pieces are.

TensorFlow (and tensorflow-text) are imported when the ops are first
built, not with this module.
"""

from typing import Any
from typing import List
from typing import Optional
from typing import Sequence
from keras_attention.typing import Tensor

from keras_attention.checks import ArgumentTypeError
from keras_attention.checks import check_bool
from keras_attention.checks import check_positive_int
from keras_attention.seq2seq.tokens import RESERVED_TOKENS


def require_tensorflow() -> None:
    """Raises an `ImportError` that says what to install where TensorFlow
    or tensorflow-text is missing: the tokenizers (and so `Translator`)
    run as TensorFlow ops in `tf.data`, whatever the Keras backend."""
    for name in ("tensorflow", "tensorflow_text"):
        try:
            __import__(name)
        except ImportError:
            raise ImportError(
                "The tokenizers and `Translator` run as TensorFlow ops "
                "(tf.data, tensorflow-text) on every Keras backend, and "
                f"`{name}` cannot be imported: pip install tensorflow "
                "tensorflow-text (the versions keras-seq2seq-attention "
                "lists). The layers and decoders need only Keras."
            ) from None


def check_texts(name: str, texts: Any) -> List[str]:
    """`texts` as a list of `str`: a list (or tuple) of strings, not one
    string, whose characters would count as texts.

    Raises:
        TypeError: for one string, a non-sequence or a non-string item,
            naming the argument and the first bad item's index.
    """
    if isinstance(texts, (str, bytes)):
        raise ArgumentTypeError(
            f"`{name}` must be a list of strings, not one string (wrap it "
            f"in a list). Received: {name}={texts!r:.80}"
        )
    try:
        texts = list(texts)
    except TypeError:
        raise ArgumentTypeError(
            f"`{name}` must be a list of strings. Received: "
            f"{name}={texts!r:.80} of type {type(texts).__name__}"
        ) from None
    out = []
    for i, text in enumerate(texts):
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if not isinstance(text, str):
            raise ArgumentTypeError(
                f"`{name}` must hold strings. Received: {text!r:.80} of "
                f"type {type(text).__name__} at {name}[{i}]"
            )
        out.append(text)
    return out


def check_pairs(sources: Any, targets: Any) -> tuple:
    sources = check_texts("sources", sources)
    targets = check_texts("targets", targets)
    if len(sources) != len(targets):
        raise ValueError(
            "`sources` and `targets` must hold as many texts (one pair "
            f"each). Received: {len(sources)} sources and {len(targets)} "
            "targets"
        )
    return sources, targets



def check_vocabulary(vocabulary: Any) -> List[str]:
    """`vocabulary` as a list of distinct, non-empty token strings that
    starts with the reserved tokens.

    Raises:
        ValueError: naming what is wrong and where.
    """
    if isinstance(vocabulary, (str, bytes)) or vocabulary is None:
        raise ValueError(
            "`vocabulary` must be a list of token strings. Received: "
            f"vocabulary={vocabulary!r:.80}"
        )
    vocabulary = list(vocabulary)
    if tuple(vocabulary[: len(RESERVED_TOKENS)]) != RESERVED_TOKENS:
        raise ValueError(
            f"`vocabulary` must start with {list(RESERVED_TOKENS)}. "
            f"Received: {vocabulary[:len(RESERVED_TOKENS)]!r}"
        )
    seen = set()
    for i, token in enumerate(vocabulary):
        if not isinstance(token, str) or not token or "\n" in token:
            raise ValueError(
                "`vocabulary` must hold non-empty strings without line "
                f"breaks. Received: {token!r} at vocabulary[{i}]"
            )
        if token in seen:
            raise ValueError(
                f"`vocabulary` holds {token!r} twice (again at "
                f"vocabulary[{i}])"
            )
        seen.add(token)
    return vocabulary


class Tokenizer:
    """Strings to `Seq2Seq` ids and back (base class).

    Subclasses set `kind`, implement `_make_ops()` (the TensorFlow module,
    `keras_attention.tokenizers.text_ops`) and `learn(texts, size,
    **options)` (a classmethod returning the constructor arguments learned
    from texts), and extend `get_config`.

    Args:
        vocabulary: The tokens, the reserved tokens first.
        lower_case: Whether texts are lower-cased before tokenization.
        name: Optional name.
    """

    kind = None

    def __init__(
        self,
        vocabulary: Sequence[str],
        lower_case: bool = False,
        name: Optional[str] = None,
    ):
        self.vocabulary = check_vocabulary(vocabulary)
        self.lower_case = check_bool("lower_case", lower_case)
        self.name = name or f"{self.kind}_tokenizer"
        self._ops = None

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        vocabulary_size: int = 8000,
        **kwargs: Any,
    ) -> "Tokenizer":
        """A tokenizer whose vocabulary is learned from `texts`.

        Args:
            texts: The training texts (a list of strings).
            vocabulary_size: The largest vocabulary, reserved tokens
                included (the learner may return fewer).
            **kwargs: More constructor arguments (`lower_case`, ...).
        """
        texts = check_texts("texts", texts)
        if not texts:
            raise ValueError(
                "`texts` must hold at least one text to learn a vocabulary "
                "from. Received: texts=[]"
            )
        size = check_positive_int("vocabulary_size", vocabulary_size)
        require_tensorflow()
        if size <= len(RESERVED_TOKENS):
            raise ValueError(
                "`vocabulary_size` must leave room for tokens after the "
                f"{len(RESERVED_TOKENS)} reserved ones. Received: "
                f"vocabulary_size={vocabulary_size!r}"
            )
        return cls(**cls.learn(texts, size, **kwargs))

    @classmethod
    def learn(cls, texts: List[str], size: int, **kwargs: Any) -> dict:
        raise NotImplementedError

    @property
    def vocabulary_size(self) -> int:
        """The number of tokens, reserved tokens included."""
        return len(self.vocabulary)

    # ------------------------------------------------------------------
    # TensorFlow ops (built once, on first use).
    @property
    def ops(self) -> Any:
        """The tokenizer's TensorFlow module (`text_ops.TokenizerOps`):
        its lookup tables, built on first use."""
        if self._ops is None:
            require_tensorflow()
            self._ops = self._make_ops()
        return self._ops

    def _make_ops(self) -> Any:
        raise NotImplementedError

    def words(self, texts: Tensor) -> Tensor:
        """The normalised whitespace words, `(batch, (words))` strings."""
        return self.ops.words(texts)

    def tokenize_words(self, texts: Tensor) -> Tensor:
        """Ids of each whitespace word's pieces, `(batch, (words),
        (pieces))` int64 (TensorFlow ragged)."""
        return self.ops.tokenize_words(texts)

    def tokenize(self, texts: Tensor) -> Tensor:
        """Token ids `(batch, (tokens))` int64, no `[START]`/`[END]`."""
        return self.ops.tokenize_words(texts).merge_dims(-2, -1)

    def detokenize(self, ids: Tensor) -> Tensor:
        """Texts `(batch,)` from ids `(batch, tokens)` (dense or ragged):
        `[PAD]`, `[START]` and everything from the first `[END]` dropped."""
        return self.ops.detokenize(ids)

    def token_strings(self, ids: Tensor) -> Tensor:
        """The token strings of ids (any shape, dense or ragged)."""
        return self.ops.token_strings(ids)

    def framed(
        self, add_start: bool, add_end: bool, max_tokens: int
    ) -> Any:
        """A `keras_attention.serving.Tokenizer` (a `tf.Module`)
        over this tokenizer's ops whose `tokenize` adds `[START]`/`[END]`
        as asked and cuts to `max_tokens`: what `make_dataset` and the
        SavedModel take."""
        from keras_attention.tokenizers.text_ops import FramedTokenizer

        return FramedTokenizer(self.ops, add_start, add_end, max_tokens)

    # ------------------------------------------------------------------
    def get_config(self) -> dict:
        return {
            "vocabulary": list(self.vocabulary),
            "lower_case": self.lower_case,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config: dict) -> "Tokenizer":
        return cls(**config)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocabulary_size={self.vocabulary_size}, "
            f"lower_case={self.lower_case})"
        )
