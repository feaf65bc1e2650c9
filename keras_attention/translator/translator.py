"""`Translator`: a `Seq2Seq` and its tokenizers, text in and text out.

The task model of the package, in KerasHub's pattern (a task = a backbone
and its preprocessing): `Translator.from_texts` learns the vocabularies
and builds the model, `fit` trains on lists of strings, `translate` and
`generate` decode strings, `align` links the words of sentence pairs,
`save` writes one `.keras` file (vocabularies included) and `export` the
string-to-string SavedModel.

Tokenization runs as TensorFlow ops (tensorflow-text) in `tf.data`, for
every Keras backend; the model runs on the backend of the process.
"""

from typing import Any
from typing import Optional
from typing import Sequence

import keras
import numpy as np

from keras_attention import tokenizers as tokenizers_lib
from keras_attention.checks import check_bool
from keras_attention.checks import check_choice
from keras_attention.checks import check_positive_int
from keras_attention.seq2seq.seq2seq import Seq2Seq
from keras_attention.tokenizers.base import check_pairs
from keras_attention.translator import runs
from keras_attention.translator.fitting import TranslatorTraining
from keras_attention.translator.translating import TranslatorDecoding

# Longest id sequence of a sentence, `[START]`/`[END]` included.
MAX_TOKENS = 64
DEFAULT_VOCABULARY_SIZE = 8000


def _check_tokenizer(name: str, tokenizer: Any) -> Any:
    if not isinstance(tokenizer, tokenizers_lib.Tokenizer):
        raise TypeError(
            f"`{name}` must be a `keras_attention.tokenizers.Tokenizer`. "
            f"Received: {name}={tokenizer!r:.80} of type "
            f"{type(tokenizer).__name__}"
        )
    return tokenizer


@keras.saving.register_keras_serializable(package="keras_attention")
class Translator(TranslatorTraining, TranslatorDecoding, keras.Model):
    """A `Seq2Seq` with its source and target tokenizers.

    Args:
        seq2seq: The `Seq2Seq` (its vocabulary sizes those of the
            tokenizers).
        source_tokenizer: A `keras_attention.tokenizers.Tokenizer`.
        target_tokenizer: A `keras_attention.tokenizers.Tokenizer`.
        max_tokens: Longest id sequence of a sentence, `[START]`/`[END]`
            included: longer sentences are cut, in training, translation
            and alignment. Defaults to `64`.
        source_end_token: Whether sources end with `[END]` (targets always
            do). Defaults to `True`.

    Example:

    ```python
    translator = Translator.from_texts(sources, targets, units=64)
    translator.fit(sources, targets, epochs=10)
    translator.translate(["vendredi 20 octobre 1933"])
    translator.save("translator.keras")
    ```
    """

    def __init__(
        self,
        seq2seq: Any,
        source_tokenizer: Any,
        target_tokenizer: Any,
        max_tokens: int = MAX_TOKENS,
        source_end_token: bool = True,
        **kwargs: Any,
    ):
        if not isinstance(seq2seq, Seq2Seq):
            raise TypeError(
                "`seq2seq` must be a `keras_attention.seq2seq.Seq2Seq`. "
                f"Received: seq2seq of type {type(seq2seq).__name__}"
            )
        source_tokenizer = _check_tokenizer("source_tokenizer", source_tokenizer)
        target_tokenizer = _check_tokenizer("target_tokenizer", target_tokenizer)
        for side, tokenizer, size in (
            ("source", source_tokenizer, seq2seq.source_vocab_size),
            ("target", target_tokenizer, seq2seq.target_vocab_size),
        ):
            if tokenizer.vocabulary_size != size:
                raise ValueError(
                    f"`{side}_tokenizer` has {tokenizer.vocabulary_size} "
                    f"tokens but the model's `{side}_vocab_size` is {size}."
                )
        max_tokens = check_positive_int("max_tokens", max_tokens)
        if max_tokens < 3:
            raise ValueError(
                "`max_tokens` must be at least 3 ([START], one token, "
                f"[END]). Received: max_tokens={max_tokens}"
            )
        source_end_token = check_bool("source_end_token", source_end_token)
        super().__init__(**kwargs)
        self.seq2seq = seq2seq
        self.source_end_token = source_end_token
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.max_tokens = max_tokens
        self._framed = None
        self.built = True

    @classmethod
    def from_texts(
        cls,
        sources: Sequence[str],
        targets: Sequence[str],
        source_tokenizer: Any = "wordpiece",
        target_tokenizer: Any = "wordpiece",
        vocabulary_size: int = DEFAULT_VOCABULARY_SIZE,
        source_vocabulary_size: Optional[int] = None,
        target_vocabulary_size: Optional[int] = None,
        lower_case: bool = False,
        max_tokens: int = MAX_TOKENS,
        **seq2seq_arguments: Any,
    ) -> "Translator":
        """Learns the vocabularies from sentence pairs and builds a model.

        Args:
            sources: The source texts (a list of strings).
            targets: Their translations.
            source_tokenizer: `"wordpiece"`, `"sentencepiece"`,
                `"whitespace"`, `"character"` (learned from `sources`), or
                a `Tokenizer`. Defaults to `"wordpiece"`.
            target_tokenizer: The same for `targets`.
            vocabulary_size: The largest vocabulary of a side learned here,
                reserved tokens included. Defaults to `8000`.
            source_vocabulary_size: The source side's, if other.
            target_vocabulary_size: The target side's, if other.
            lower_case: Whether the learned tokenizers lower-case texts.
                Defaults to `False`.
            max_tokens: See the class. Defaults to `64`.
            **seq2seq_arguments: `Seq2Seq`'s arguments (`units`, `model`,
                `score`, ...) but the vocabulary sizes.
        """
        sources, targets = check_pairs(sources, targets)
        for name in ("source_vocab_size", "target_vocab_size"):
            if name in seq2seq_arguments:
                raise ValueError(
                    f"`{name}` comes from the tokenizers: give "
                    "`vocabulary_size` (or `source_vocabulary_size`, "
                    "`target_vocabulary_size`) instead. Received: "
                    f"{name}={seq2seq_arguments[name]!r}"
                )
        lower_case = check_bool("lower_case", lower_case)
        made = []
        for texts, tokenizer, size in (
            (sources, source_tokenizer, source_vocabulary_size),
            (targets, target_tokenizer, target_vocabulary_size),
        ):
            tokenizer = tokenizers_lib.get(tokenizer)
            if isinstance(tokenizer, type):
                tokenizer = tokenizer.from_texts(
                    texts, size or vocabulary_size, lower_case=lower_case
                )
            made.append(tokenizer)
        seq2seq = Seq2Seq(
            source_vocab_size=made[0].vocabulary_size,
            target_vocab_size=made[1].vocabulary_size,
            **seq2seq_arguments,
        )
        return cls(seq2seq, made[0], made[1], max_tokens=max_tokens)

    @classmethod
    def from_run(cls, run_dir: str, weights: Optional[str] = None) -> "Translator":
        """The translator a run directory holds (`keras_attention.seq2seq.
        run_dir`): its `run.json` model and tokenizers, its final weights
        (or the weights file `weights`, e.g. a checkpoint). See
        `keras_attention.translator.runs.load_run`."""
        return cls(**runs.load_run(run_dir, weights))

    # ------------------------------------------------------------------
    # The tokenizers with the framing of each side.
    @property
    def framed_tokenizers(self) -> tuple:
        """The `(source, target)` framed tokenizers (`Tokenizer.framed`):
        sources end with `[END]` (with `source_end_token`), targets start
        with `[START]` and end with `[END]`, both cut to `max_tokens`."""
        if self._framed is None:
            self._framed = (
                self.source_tokenizer.framed(
                    False, self.source_end_token, self.max_tokens
                ),
                self.target_tokenizer.framed(True, True, self.max_tokens),
            )
        return self._framed

    def source_ids(self, texts: Sequence[str]) -> np.ndarray:
        """The padded int32 source ids `(batch, S)` of texts."""
        import tensorflow as tf

        ids = self.framed_tokenizers[0].tokenize(tf.constant(texts, tf.string))
        return ids.to_tensor().numpy().astype("int32")

    # ------------------------------------------------------------------
    # Training.
    def export(
        self,
        path: str,
        format: str = "tf_saved_model",
        ensemble: Sequence["Translator"] = (),
        **options: Any,
    ) -> str:
        """Writes the translator to `path` and returns `path`.

        `format="tf_saved_model"`: the string-to-string SavedModel
        (signatures `serving_default`, `greedy`, `beam`, `nbest`, `sample`,
        `complete`); plain TensorFlow serves it without this package
        (`import tensorflow_text` registers its ops). `options` go to
        `TranslatorModule` (`xla`, `length_penalty`, `replace_unknown`,
        `max_output_tokens`, ...).

        `format="litert"` (a `.tflite` file) or `"onnx"` (a `.onnx` file):
        a model from token ids to greedy or beam-search outputs, with its
        vocabularies beside it and a Python client
        (`keras_attention.portable`); `options`: `quantize` (`"float16"`
        for LiteRT, `"int8"` for both), `max_output_tokens`,
        `length_penalty`, `coverage_penalty`, `convention`.

        `ensemble`: more translators with the same tokenizers, decoded
        together with this one (their probabilities averaged; TensorFlow
        backend). On the JAX and PyTorch backends the translator's config
        and its `Seq2Seq`'s weights go to a TensorFlow process, which
        exports it."""
        from keras_attention.translator import exporting

        check_choice("format", format, exporting.FORMATS)
        return exporting.export(
            self, path, ensemble=ensemble, format=format, **options
        )

    def get_config(self) -> dict:
        serialize = keras.saving.serialize_keras_object
        return {
            "name": self.name,
            "trainable": self.trainable,
            "seq2seq": serialize(self.seq2seq),
            "source_tokenizer": serialize(self.source_tokenizer),
            "target_tokenizer": serialize(self.target_tokenizer),
            "max_tokens": self.max_tokens,
            "source_end_token": self.source_end_token,
        }

    @classmethod
    def from_config(cls, config: dict) -> "Translator":
        config = dict(config)
        for name in ("seq2seq", "source_tokenizer", "target_tokenizer"):
            if isinstance(config.get(name), dict):
                config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)
