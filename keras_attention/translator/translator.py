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
from typing import List
from typing import Optional
from typing import Sequence
from keras_attention.typing import Tensor

import keras
import numpy as np

from keras_attention import tokenizers as tokenizers_lib
from keras_attention.checks import check_bool
from keras_attention.checks import check_choice
from keras_attention.checks import check_positive_int
from keras_attention.seq2seq.losses import MaskedAccuracy
from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.seq2seq.seq2seq import Seq2Seq
from keras_attention.tokenizers import check_texts
from keras_attention.translator import word_links

# Longest id sequence of a sentence, `[START]`/`[END]` included.
MAX_TOKENS = 64
DEFAULT_VOCABULARY_SIZE = 8000
LINK_METHODS = ("argmax", "threshold")


def _check_tokenizer(name: str, tokenizer: Any) -> Any:
    if not isinstance(tokenizer, tokenizers_lib.Tokenizer):
        raise TypeError(
            f"`{name}` must be a `keras_attention.tokenizers.Tokenizer`. "
            f"Received: {name}={tokenizer!r:.80} of type "
            f"{type(tokenizer).__name__}"
        )
    return tokenizer


def _check_pairs(sources: Any, targets: Any) -> tuple:
    sources = check_texts("sources", sources)
    targets = check_texts("targets", targets)
    if len(sources) != len(targets):
        raise ValueError(
            "`sources` and `targets` must hold as many texts (one pair "
            f"each). Received: {len(sources)} sources and {len(targets)} "
            "targets"
        )
    return sources, targets


def _is_batches(data: Any) -> bool:
    """Whether `data` is a `tf.data.Dataset` of model batches already (as
    `keras.Model.fit` gives `evaluate` for validation), not of string
    pairs."""
    import sys

    if "tensorflow" not in sys.modules:
        return False
    import tensorflow as tf

    if not isinstance(data, tf.data.Dataset):
        return False
    spec = data.element_spec
    return not (
        isinstance(spec, tuple)
        and len(spec) == 2
        and all(getattr(s, "dtype", None) == tf.string for s in spec)
    )


class _Pairs:
    """Sentence pairs in the form `make_dataset` reads."""

    def __init__(self, sources: List[str], targets: List[str]):
        self.pairs = list(zip(sources, targets))


@keras.saving.register_keras_serializable(package="keras_attention")
class Translator(keras.Model):
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
        sources, targets = _check_pairs(sources, targets)
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
        from keras_attention.translator import runs

        return runs.load_run(run_dir, weights)

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
    def call(self, inputs: Any, training: bool = False) -> Any:
        return self.seq2seq(inputs, training=training)

    def compile(
        self,
        optimizer: Any = "adam",
        loss: Any = "auto",
        metrics: Any = "auto",
        **kwargs: Any,
    ) -> None:
        """`keras.Model.compile` with the masked loss and accuracy of the
        `"logits"` output by default (`"auto"`); `fit` compiles with the
        defaults when the model is not compiled."""
        if loss == "auto":
            loss = {"logits": MaskedLoss()}
            if self.seq2seq.alignment_head == "lexical":
                from keras_attention.seq2seq.losses import MaskedMean

                loss["lexical"] = MaskedMean()
        if metrics == "auto":
            metrics = {"logits": [MaskedAccuracy()]}
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config: dict) -> None:
        # Keras skips a custom `compile` on load; this one takes the saved
        # arguments as they are.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built and getattr(self, "optimizer", None) is not None:
            self.optimizer.build(self.trainable_variables)

    def _complete(self, y: Any, y_pred: Any) -> Any:
        if y is None or not isinstance(y_pred, dict):
            return y
        y = dict(y) if isinstance(y, dict) else {"logits": y}
        for name, value in y_pred.items():
            y.setdefault(name, value)
        return y

    def compute_loss(
        self,
        x: Any = None,
        y: Any = None,
        y_pred: Any = None,
        sample_weight: Any = None,
        training: bool = True,
    ) -> Tensor:
        return super().compute_loss(
            x, self._complete(y, y_pred), y_pred, sample_weight, training
        )

    def compute_metrics(
        self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None
    ) -> dict:
        return super().compute_metrics(
            x, self._complete(y, y_pred), y_pred, sample_weight
        )

    def make_dataset(
        self,
        x: Any,
        y: Any = None,
        batch_size: int = 32,
        shuffle: bool = False,
        seed: Optional[int] = 0,
    ) -> Any:
        """The `tf.data` pipeline of `fit`/`evaluate`: from lists of
        strings (`x` sources, `y` targets) or a `tf.data.Dataset` of
        `(source, target)` strings, batches of `({"source_ids",
        "target_in"}, targets)`."""
        import tensorflow as tf

        from keras_attention.seq2seq.dataset import make_dataset

        if isinstance(x, tf.data.Dataset):
            if y is not None:
                raise ValueError(
                    "With a `tf.data.Dataset` of `(source, target)` strings "
                    "give no `y`. Received: y of type "
                    f"{type(y).__name__}"
                )
            corpus = x
        else:
            if y is None:
                raise ValueError(
                    "`y` (the target texts) is required with a list of "
                    "source texts. Received: y=None"
                )
            corpus = _Pairs(*_check_pairs(x, y))
        source, target = self.framed_tokenizers
        batch_size = check_positive_int("batch_size", batch_size)
        data = make_dataset(
            corpus,
            source,
            target,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            lexical=self.seq2seq.alignment_head == "lexical",
        )
        if isinstance(corpus, _Pairs):
            # Known to Keras from the first epoch on (no "ran out of data").
            batches = -(-len(corpus.pairs) // batch_size)
            data = data.apply(tf.data.experimental.assert_cardinality(batches))
        return data

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int = 32,
        epochs: int = 1,
        validation_data: Any = None,
        shuffle: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Trains on sentence pairs: `x` the source texts and `y` their
        translations (lists of strings), or `x` a `tf.data.Dataset` of
        `(source, target)` strings; `validation_data` a `(sources,
        targets)` pair of lists or such a dataset. Compiles with the
        defaults first when not compiled. Other arguments go to
        `keras.Model.fit`."""
        if not self.compiled:
            self.compile()
        data = self.make_dataset(x, y, batch_size, shuffle=shuffle)
        if validation_data is not None:
            if isinstance(validation_data, (tuple, list)):
                if len(validation_data) != 2:
                    raise ValueError(
                        "`validation_data` must be `(sources, targets)` or "
                        "a `tf.data.Dataset` of pairs. Received: "
                        f"{len(validation_data)} items"
                    )
                validation_data = self.make_dataset(*validation_data, batch_size)
            else:
                validation_data = self.make_dataset(validation_data, None, batch_size)
        return super().fit(
            data,
            epochs=epochs,
            validation_data=validation_data,
            shuffle=False,  # `data` is shuffled
            **kwargs,
        )

    def evaluate(
        self, x: Any = None, y: Any = None, batch_size: int = 32, **kwargs: Any
    ) -> Any:
        """`keras.Model.evaluate` on sentence pairs (as `fit` takes
        them): the masked loss and accuracy of teacher forcing."""
        if not _is_batches(x):
            x = self.make_dataset(x, y, batch_size)
        return super().evaluate(x, **kwargs)

    # ------------------------------------------------------------------
    # Decoding.
    def generate(
        self,
        texts: Sequence[str],
        strategy: str = "greedy",
        max_length: Optional[int] = None,
        batch_size: int = 64,
        **options: Any,
    ) -> List[dict]:
        """Translates texts and returns, for each, a dict: `translation`
        (str; with `strategy="nbest"` a list of the `n_best`
        `translations` and their `scores`), `score` (the decoder's score:
        the sum of log-probabilities, length-normalised for beam search),
        `source_tokens` and `target_tokens` (the token strings, `[END]`
        included) and `attention` `(target_tokens, source_tokens)`.

        Args:
            texts: The source texts (a list of strings).
            strategy: `"greedy"`, `"beam"`, `"nbest"` or `"sample"`
                (`Seq2Seq.generate`). Defaults to `"greedy"`.
            max_length: Longest translation in tokens. Defaults to
                `max_tokens`.
            batch_size: Texts decoded at once. Defaults to `64`.
            **options: The decoder's options (`beam_width`, `n_best`,
                `temperature`, `top_k`, `top_p`, `seed`, ...).
        """
        texts = check_texts("texts", texts)
        batch_size = check_positive_int("batch_size", batch_size)
        max_length = check_positive_int(
            "max_length", self.max_tokens if max_length is None else max_length
        )
        source_tokenizer, target_tokenizer = self.framed_tokenizers
        results = []
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            ids = self.source_ids(batch)
            out = self.seq2seq.generate(
                ids, max_length=max_length, strategy=strategy, **options
            )
            out = {
                k: keras.ops.convert_to_numpy(v)
                for k, v in out.items()
                if v is not None
            }
            source_strings = source_tokenizer.token_strings(ids).numpy()
            lengths = (ids != 0).sum(axis=1)
            tokens = out["tokens"]
            flat = tokens.reshape((-1, tokens.shape[-1]))
            translations = target_tokenizer.detokenize(flat).numpy()
            strings = target_tokenizer.token_strings(flat).numpy()
            per_row = flat.shape[0] // len(batch)
            for i in range(len(batch)):
                source = [s.decode("utf-8") for s in source_strings[i, : lengths[i]]]
                hyps = []
                for j in range(i * per_row, (i + 1) * per_row):
                    n = int(out["lengths"].reshape(-1)[j])
                    attention = out.get("attention")
                    if attention is not None:
                        attention = attention.reshape(
                            (-1,) + attention.shape[-2:]
                        )[j, :n, : lengths[i]]
                    hyps.append(
                        {
                            "translation": translations[j].decode("utf-8"),
                            "score": float(out["scores"].reshape(-1)[j]),
                            "source_tokens": source,
                            "target_tokens": [
                                s.decode("utf-8") for s in strings[j, :n]
                            ],
                            "attention": attention,
                        }
                    )
                if strategy == "nbest":
                    result = dict(hyps[0])
                    result["translations"] = [h["translation"] for h in hyps]
                    result["scores"] = [h["score"] for h in hyps]
                    results.append(result)
                else:
                    results.append(hyps[0])
        return results

    def translate(
        self, texts: Any, strategy: str = "greedy", **options: Any
    ) -> Any:
        """The translations of texts: a list of strings (one string for one
        string; with `strategy="nbest"`, a list of the `n_best` strings per
        text). The arguments are those of `generate`."""
        if isinstance(texts, str):
            return self.translate([texts], strategy, **options)[0]
        key = "translations" if strategy == "nbest" else "translation"
        return [r[key] for r in self.generate(texts, strategy, **options)]

    # ------------------------------------------------------------------
    # Alignment.
    def align(
        self,
        sources: Sequence[str],
        targets: Sequence[str],
        method: str = "argmax",
        threshold: float = 0.5,
        reverse: Optional["Translator"] = None,
        symmetrize: str = "grow-diag-final-and",
        batch_size: int = 64,
    ) -> List[set]:
        """Word links of sentence pairs from the model's teacher-forced
        weights (the alignment head's, or the attention's).

        A link is `(source_word, target_word)`, indices of the whitespace
        words of the texts (`text.split()`); words cut off by `max_tokens`
        get none.

        Args:
            sources: The source texts.
            targets: Their translations.
            method: `"argmax"` (each target word to its most attended
                source word) or `"threshold"` (every word pair of weight
                `>= threshold`). Defaults to `"argmax"`.
            threshold: See `method`. Defaults to `0.5`.
            reverse: A `Translator` of the other direction (targets to
                sources): its links are symmetrized with these.
            symmetrize: The symmetrization with `reverse`
                (`keras_attention.alignment.symmetrize`). Defaults to
                `"grow-diag-final-and"`.
            batch_size: Pairs per batch. Defaults to `64`.

        Returns:
            One set of links per pair.
        """
        from keras_attention import alignment

        sources, targets = _check_pairs(sources, targets)
        check_choice("method", method, LINK_METHODS)
        batch_size = check_positive_int("batch_size", batch_size)
        links = []
        room = self.max_tokens - int(self.source_end_token)
        for start in range(0, len(sources), batch_size):
            s_batch = sources[start : start + batch_size]
            t_batch = targets[start : start + batch_size]
            s_groups = word_links.word_positions(
                self.source_tokenizer, s_batch, 0, room
            )
            t_groups = word_links.word_positions(
                self.target_tokenizer, t_batch, 1, self.max_tokens - 2
            )
            weights = self.teacher_forced_weights(s_batch, t_batch)
            for i in range(len(s_batch)):
                links.append(
                    word_links.links_from_weights(
                        weights[i], s_groups[i], t_groups[i], method, threshold
                    )
                )
        if reverse is None:
            return links
        if not isinstance(reverse, Translator):
            raise TypeError(
                "`reverse` must be a `Translator` (targets to sources). "
                f"Received: reverse of type {type(reverse).__name__}"
            )
        backward = reverse.align(
            targets, sources, method, threshold, batch_size=batch_size
        )
        return [
            alignment.symmetrize(f, alignment.transpose_links(b), symmetrize)
            for f, b in zip(links, backward)
        ]

    def teacher_forced_weights(
        self, sources: Sequence[str], targets: Sequence[str]
    ) -> np.ndarray:
        """The `(batch, T, S)` weights `Seq2Seq.align` reads for pairs,
        teacher-forced (row `t` predicts target token `t + 1`)."""
        import tensorflow as tf

        source_ids = self.source_ids(sources)
        target = self.framed_tokenizers[1].tokenize(tf.constant(targets))
        target_in = target.to_tensor().numpy().astype("int32")[:, :-1]
        weights = self.seq2seq.align(source_ids, target_in)
        return keras.ops.convert_to_numpy(weights)

    # ------------------------------------------------------------------
    # Saving and exporting.
    def export(self, path: str, format: str = "tf_saved_model", **options: Any) -> str:
        """Writes the string-to-string SavedModel (signatures
        `serving_default`, `greedy`, `beam`, `nbest`, `sample`,
        `complete`) to `path` and returns `path`; plain TensorFlow serves
        it without this package (`import tensorflow_text` registers its
        ops). `options` go to `TranslatorModule` (`xla`, `length_penalty`,
        `replace_unknown`, ...).

        On the JAX and PyTorch backends the model is saved to a temporary
        `.keras` file and exported by a TensorFlow process
        (`python -m keras_attention export`)."""
        from keras_attention.translator import exporting

        check_choice("format", format, ("tf_saved_model",))
        return exporting.export(self, path, **options)

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
