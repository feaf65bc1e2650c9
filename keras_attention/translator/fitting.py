"""`Translator`'s training: `fit` and `evaluate` on sentence pairs.

A mixin of `Translator` (not a model of its own): the `tf.data` pipeline
from strings (`keras_attention.training.dataset.make_dataset` over the
framed tokenizers; TensorFlow), the default compilation (the masked loss
and accuracy) and the targets of the outputs that do not train.
"""

from typing import Any
from typing import List
from typing import Optional

import keras

from keras_attention.checks import check_positive_int
from keras_attention.seq2seq.losses import MaskedAccuracy
from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.seq2seq.targets import OutputTargets
from keras_attention.tokenizers.base import check_pairs
from keras_attention.training import distillation


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


class TranslatorTraining(OutputTargets):
    """Training on sentence pairs (mixin of `Translator`)."""

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

    def make_dataset(
        self,
        x: Any,
        y: Any = None,
        batch_size: int = 32,
        shuffle: bool = False,
        seed: Optional[int] = 0,
        teachers: Any = None,
        distillation_weight: float = 0.5,
    ) -> Any:
        """The `tf.data` pipeline of `fit`/`evaluate`: from lists of
        strings (`x` sources, `y` targets) or a `tf.data.Dataset` of
        `(source, target)` strings, batches of `({"source_ids",
        "target_in"}, targets)`; with `teachers`, the `"logits"` targets
        are distributions (`fit`)."""
        import tensorflow as tf

        from keras_attention.training.dataset import make_dataset

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
            corpus = _Pairs(*check_pairs(x, y))
        source, target = self.framed_tokenizers
        batch_size = check_positive_int("batch_size", batch_size)
        distilled = {}
        if teachers is not None:
            if not isinstance(corpus, _Pairs):
                # The teachers' rows are matched to the pairs by position:
                # a dataset may reorder its pairs from one pass to the next.
                raise ValueError(
                    "Distillation takes the pairs as two lists of strings "
                    "(the teachers' distributions follow the pairs by "
                    "position). Received: a tf.data.Dataset with `teachers`"
                )
            distilled = distillation.dataset_options(
                distillation.check_teachers(
                    teachers,
                    self.source_tokenizer.vocabulary,
                    self.target_tokenizer.vocabulary,
                ),
                corpus, source, target, batch_size, distillation_weight,
            )
        data = make_dataset(
            corpus,
            source,
            target,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            lexical=self.seq2seq.alignment_head == "lexical",
            **distilled,
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
        teachers: Any = None,
        distillation_weight: float = 0.5,
        **kwargs: Any,
    ) -> Any:
        """Trains on sentence pairs: `x` the source texts and `y` their
        translations (lists of strings), or `x` a `tf.data.Dataset` of
        `(source, target)` strings; `validation_data` a `(sources,
        targets)` pair of lists or such a dataset. Compiles with the
        defaults first when not compiled. Other arguments go to
        `keras.Model.fit`.

        `teachers`: trained `Translator`s of the same tokenizers (an
        ensemble, or one larger model) to distil into this one: each target
        token's training distribution becomes `(1 - distillation_weight)`
        on the reference token plus `distillation_weight` times the
        teachers' averaged next-token probabilities
        (`keras_attention.training.distillation`), on the training pairs
        and on `validation_data` (the teachers run once, before the first
        epoch)."""
        if not self.compiled:
            self.compile()
        distilled = {}
        if teachers is not None:
            distilled = {
                "teachers": list(teachers),
                "distillation_weight": distillation_weight,
            }
        data = self.make_dataset(
            x, y, batch_size, shuffle=shuffle, **distilled
        )
        if validation_data is not None:
            if isinstance(validation_data, (tuple, list)):
                if len(validation_data) != 2:
                    raise ValueError(
                        "`validation_data` must be `(sources, targets)` or "
                        "a `tf.data.Dataset` of pairs. Received: "
                        f"{len(validation_data)} items"
                    )
                validation_data = self.make_dataset(
                    *validation_data, batch_size, **distilled
                )
            elif not _is_batches(validation_data):
                validation_data = self.make_dataset(
                    validation_data, None, batch_size, **distilled
                )
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
