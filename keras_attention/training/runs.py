"""A `Seq2Seq` trained into a run directory, as a recipe's `train` does.

`start` comes before any TensorFlow op (the `tf.distribute` strategy, the
worker's run directory, the seeds); `fit` builds the model of a
`ModelConfig` under the strategy and the dtype policy of the
`TrainConfig`, compiles it (`keras_attention.training.loop`), feeds it
the `tf.data` batches of `keras_attention.training.dataset` and writes the
run directory (`keras_attention.training.run_dir`): a killed run started
again with the same command resumes from its last finished epoch.
"""

from typing import Any
from typing import Callable
from typing import Dict
from typing import Optional
from typing import Sequence
from typing import Tuple

import dataclasses
import math
import time

import keras

from keras_attention.training import acceleration
from keras_attention.training import distillation
from keras_attention.training import distribute
from keras_attention.seq2seq import Seq2Seq
from keras_attention.training import dataset as dataset_lib
from keras_attention.training import run_dir as run_lib
from keras_attention.training import loop
from keras_attention.training.settings import ModelConfig
from keras_attention.training.settings import TrainConfig
from keras_attention.seq2seq.tokens import punctuation_ids


def start(
    run_dir: str, train_config: TrainConfig, overwrite: bool = False
) -> Tuple[Any, str]:
    """What comes before any TensorFlow op of a run: `(strategy, run_dir)`.

    Creates the `tf.distribute` strategy (MultiWorkerMirroredStrategy must
    exist before any TF op runs), the worker's run directory (workers other
    than the chief write to their own sub-directory; `run_dir.claim`: a
    finished run is refused unless `overwrite`) and seeds.
    """
    strategy = distribute.get_strategy(train_config.strategy)
    run_dir = distribute.worker_dir(run_dir, strategy)
    run_lib.claim(run_dir, overwrite)
    keras.utils.set_random_seed(train_config.seed)
    return strategy, run_dir


def with_vocabularies(
    model_config: ModelConfig,
    source: Any,
    target: Any,
    source_vocab: Sequence[str],
) -> ModelConfig:
    """`model_config` with the vocabulary sizes of the `source` and
    `target` tokenizers and, when `attend_source_punctuation` is off, the
    punctuation ids of `source_vocab` (the source tokens) as
    `unattended_source_ids`."""
    unattended = ()
    if not model_config.attend_source_punctuation:
        unattended = tuple(punctuation_ids(source_vocab))
    return dataclasses.replace(
        model_config,
        source_vocab_size=source.vocab_size,
        target_vocab_size=target.vocab_size,
        unattended_source_ids=unattended,
    )


def check_alignment_head(
    model_config: ModelConfig, train_config: TrainConfig
) -> None:
    """A `ValueError` for a guided alignment head without reference links,
    or the unsupervised lexical head with them."""
    head = model_config.alignment_head
    guided = train_config.guided_alignment
    if head == "guided" and not guided:
        raise ValueError(
            "The guided alignment head learns from reference links only: "
            "`alignment_head='guided'` needs `guided_alignment` (a Pharaoh "
            f"file). Received: guided_alignment={guided!r}"
        )
    if head == "lexical" and guided:
        raise ValueError(
            "The lexical alignment head is unsupervised: with reference "
            "links use `alignment_head='guided'` (or 'off'). Received: "
            f"alignment_head='lexical', guided_alignment={guided!r}"
        )


def compile_model(
    seq2seq: Seq2Seq, train_config: TrainConfig, total_steps: int
) -> None:
    """Compiles `seq2seq` as a `TrainConfig` says, over `total_steps`
    steps (`keras_attention.training.loop.compile_seq2seq`)."""
    guided = train_config.guided_alignment
    loop.compile_seq2seq(
        seq2seq, train_config.learning_rate, train_config.warmup_steps,
        total_steps,
        label_smoothing=train_config.label_smoothing,
        guided_alignment_type=(
            train_config.guided_alignment_type if guided else None
        ),
        guided_alignment_weight=train_config.guided_alignment_weight,
        jit_compile=acceleration.jit_compile_setting(train_config.jit_compile),
    )


def fit(
    strategy: Any,
    run_dir: str,
    splits: Dict[str, Any],
    source: Any,
    target: Any,
    model_config: ModelConfig,
    train_config: TrainConfig,
    log: Callable[[str], Any] = print,
    links: Optional[Dict[str, Any]] = None,
    teachers: Optional[Sequence[Any]] = None,
) -> Tuple[Seq2Seq, dict]:
    """`Seq2Seq.fit` on prepared splits, into `run_dir`.

    Args:
        strategy: The `tf.distribute` strategy of `start`.
        run_dir: The run directory (of `start`).
        splits: Dict of splits (objects with `pairs`); `"train"` and
            `"validation"` used.
        source: Source tokenizer (`tokenize(strings)` -> ragged ids).
        target: Target tokenizer.
        model_config: `ModelConfig` with the vocabulary sizes set.
        train_config: `TrainConfig`.
        log: Printing function.
        links: With guided alignment, a dict from `"train"` and
            `"validation"` to the token links of each pair.
        teachers: With `train_config.teachers`, their `Seq2Seq` models
            (`distillation.check_teachers`): the model learns their
            averaged next-token distributions on both splits
            (`distillation.teacher_distributions`, computed once here),
            weighted by `train_config.distillation_weight`.

    Returns:
        `(seq2seq, history dict)`; the run directory holds the checkpoints,
        the final weights and `history.json`. The model's layers compute
        under the run's dtype policy (`TrainConfig.mixed_precision`); the
        global policy is left as it was.
    """
    check_alignment_head(model_config, train_config)
    guided = train_config.guided_alignment
    if bool(guided) != (links is not None):
        raise ValueError(
            "`links` must be given exactly when `guided_alignment` is set "
            f"(`train` reads them). Received: guided_alignment={guided!r}, "
            f"links {'given' if links is not None else 'not given'}"
        )
    if bool(train_config.teachers) != bool(teachers):
        raise ValueError(
            "`teachers` (the models) must be given exactly when "
            "`train_config.teachers` names runs. Received: "
            f"train_config.teachers={train_config.teachers!r}, "
            f"{len(teachers or ())} teacher models"
        )
    distilled = {}
    if teachers:
        started = time.time()
        for name in ("train", "validation"):
            if not len(splits[name].pairs):
                continue
            distilled[name] = distillation.dataset_options(
                teachers, splits[name], source, target,
                train_config.batch_size, train_config.distillation_weight,
            )
        log(
            f"distillation: {len(teachers)} teachers' distributions on "
            f"{len(splits['train'].pairs)} training pairs in "
            f"{time.time() - started:.0f} s "
            f"(weight {distilled['train']['distillation_weight']})"
        )
    steps_per_epoch = train_config.steps_per_epoch or max(
        math.ceil(len(splits["train"].pairs) / train_config.batch_size), 1
    )
    policy = acceleration.mixed_precision_policy(train_config.mixed_precision)
    # The policy applies to this model's layers only (see `acceleration`).
    with strategy.scope(), acceleration.dtype_policy(policy):
        seq2seq = build_model(model_config)
        compile_model(
            seq2seq, train_config, steps_per_epoch * train_config.epochs
        )
    # Under XLA (Keras' "auto" resolved: off where a layer cannot compile,
    # e.g. a cuDNN LSTM) every new batch shape compiles the train step
    # anew: batches padded to their bucket's width.
    fixed_shapes = bool(seq2seq.jit_compile)
    options = {
        "fixed_shapes": fixed_shapes,
        "lexical": model_config.alignment_head == "lexical",
    }
    train_ds = dataset_lib.make_dataset(
        splits["train"], source, target, train_config.batch_size,
        shuffle=True, bucket_boundaries=train_config.bucket_boundaries,
        seed=train_config.seed, repeat=True,
        links=None if links is None else links["train"],
        **distilled.get("train", {}), **options,
    )
    validation = splits["validation"] if len(splits["validation"].pairs) else None
    val_ds = None
    if validation is not None:
        val_ds = dataset_lib.make_dataset(
            validation, source, target, train_config.batch_size,
            links=None if links is None else links["validation"],
            **distilled.get("validation", {}),
            bucket_boundaries=(
                train_config.bucket_boundaries if fixed_shapes else None
            ),
            **options,
        )
    # keras-team/keras#20585 (no-op unless the strategy spans 2+ workers).
    distribute.apply_multi_worker_fit_workaround(seq2seq, strategy)
    record = loop.fit(
        seq2seq, run_dir, train_ds, val_ds, train_config.epochs,
        steps_per_epoch, patience=train_config.patience,
        verbose=train_config.verbose, log=log,
        record_extras={
            "dtype_policy": policy or "float32",
            "jit_compile": fixed_shapes,
        },
    )
    log(
        f"trained {len(record['loss'])} epochs in "
        f"{record['train_seconds']:.0f} s ({record['dtype_policy']}, XLA "
        f"{'on' if fixed_shapes else 'off'}) -> {run_dir}"
    )
    return seq2seq, record


def build_model(model_config: ModelConfig) -> Seq2Seq:
    """The `Seq2Seq` of a `ModelConfig` (vocabulary sizes set)."""
    return Seq2Seq(**model_config.model_arguments())
