"""Training of the NMT example: `model.fit` with checkpoints and resumption.

`train` builds the model under the configured `tf.distribute` strategy,
compiles it (`compile_model`: Adam with warm-up and cosine decay, the
masked loss and accuracy of `losses.py`) and fits it on the pipeline of
`pipeline.py`, writing the run directory described in `run.py`: a killed
run started again with the same command resumes from its last finished
epoch (`keras.callbacks.BackupAndRestore`).

Guided alignment (`TrainConfig.guided_alignment`, `docs/alignment.md`):
the model fitted is `Seq2Seq.guided_model`, with two outputs and two
losses, the masked loss on `"logits"` and
`keras_attention.alignment.GuidedAlignmentLoss` (the configured type and
weight, rows normalised) on `"attention"`; the layers are those of
`training_model`, whose weights are saved as without guidance.
"""

import dataclasses
import importlib.util
import json
import math
import os
import time
import warnings

import keras

from examples.nmt import acceleration
from examples.nmt import distribute
from examples.nmt import model as model_lib
from examples.nmt import pipeline
from examples.nmt import run as run_lib
from examples.nmt import text as text_lib
from examples.nmt.config import DataConfig
from examples.nmt.config import ModelConfig
from examples.nmt.config import TextConfig
from examples.nmt.config import TrainConfig
from examples.nmt.fused_adam import FusedAdam
from examples.nmt.losses import MaskedAccuracy
from examples.nmt.losses import MaskedLoss
from examples.nmt.losses import MaskedMean
from keras_attention.alignment import GuidedAlignmentLoss


def learning_rate_schedule(train_config, total_steps):
    """Linear warm-up to `learning_rate`, then cosine decay to 5% of it."""
    warmup = min(train_config.warmup_steps, max(total_steps // 2, 1))
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(total_steps - warmup, 1),
        alpha=0.05,
        warmup_target=train_config.learning_rate,
        warmup_steps=warmup,
    )


def fitted_model(seq2seq, train_config):
    """The model `fit` trains: `guided_model` with guided alignment,
    `lexical_model` with the lexical alignment head, else
    `training_model`."""
    if train_config.guided_alignment:
        return seq2seq.guided_model
    if seq2seq.config.alignment_head == "lexical":
        return seq2seq.lexical_model
    return seq2seq.training_model


def compile_model(seq2seq, train_config, total_steps):
    """Compiles the fitted model (`fitted_model`): Adam (clipped, the
    fused kernel of `FusedAdam`), the
    masked loss and accuracy (and the guided alignment loss), the
    learning-rate schedule over `total_steps` steps."""
    loss = MaskedLoss(train_config.label_smoothing)
    metrics = [MaskedAccuracy()]
    if train_config.guided_alignment:
        loss = {
            "logits": loss,
            "attention": GuidedAlignmentLoss(
                train_config.guided_alignment_type,
                weight=train_config.guided_alignment_weight,
                normalize=True,
            ),
        }
        metrics = {"logits": metrics}
    if seq2seq.config.alignment_head == "lexical":
        loss = {"logits": loss, "lexical": MaskedMean()}
        metrics = {"logits": metrics}
    fitted_model(seq2seq, train_config).compile(
        optimizer=FusedAdam(
            learning_rate_schedule(train_config, total_steps), clipnorm=1.0
        ),
        loss=loss,
        metrics=metrics,
        jit_compile=acceleration.jit_compile_setting(train_config.jit_compile),
    )


class EpochTimer(keras.callbacks.Callback):
    """Adds the epoch's wall-clock time to the logs (`epoch_seconds`)."""

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["epoch_seconds"] = time.time() - self._start


def start(run_dir, train_config):
    """What comes before any TensorFlow op of a run: `(strategy, run_dir)`.

    Creates the `tf.distribute` strategy (MultiWorkerMirroredStrategy must
    exist before any TF op runs), the worker's run directory (workers other
    than the chief write to their own sub-directory) and seeds. (`fit`
    builds the model under the mixed-precision policy.)
    """
    strategy = distribute.get_strategy(train_config.strategy)
    run_dir = distribute.worker_dir(run_dir, strategy)
    os.makedirs(run_dir, exist_ok=True)
    keras.utils.set_random_seed(train_config.seed)
    return strategy, run_dir


def with_vocabularies(model_config, source, target, source_vocab):
    """`model_config` with the learned vocabulary sizes and, when
    `attend_source_punctuation` is off, the source punctuation ids
    (`text.punctuation_ids` of `source_vocab`, the source tokens) as
    `unattended_source_ids`."""
    unattended = ()
    if not model_config.attend_source_punctuation:
        unattended = tuple(text_lib.punctuation_ids(source_vocab))
    return dataclasses.replace(
        model_config,
        source_vocab_size=source.vocab_size,
        target_vocab_size=target.vocab_size,
        unattended_source_ids=unattended,
    )


def check_alignment_head(model_config, train_config):
    """A `ValueError` for a guided alignment head without reference links,
    or the unsupervised lexical head with them."""
    head = model_config.alignment_head
    if head == "guided" and not train_config.guided_alignment:
        raise ValueError(
            "The guided alignment head learns from reference links only: "
            "`alignment_head='guided'` needs `guided_alignment` (a Pharaoh "
            f"file). Received: guided_alignment="
            f"{train_config.guided_alignment!r}"
        )
    if head == "lexical" and train_config.guided_alignment:
        raise ValueError(
            "The lexical alignment head is unsupervised: with reference "
            "links use `alignment_head='guided'` (or 'off'). Received: "
            f"alignment_head='lexical', guided_alignment="
            f"{train_config.guided_alignment!r}"
        )


def train(
    run_dir: str,
    data_config: DataConfig,
    text_config: TextConfig,
    model_config: ModelConfig,
    train_config: TrainConfig,
    log=print,
):
    """Trains a model into `run_dir`; returns `(seq2seq, history dict)`.

    The vocabulary sizes of `model_config` are set to those of the learned
    vocabularies (any value given is replaced).
    """
    check_alignment_head(model_config, train_config)
    strategy, run_dir = start(run_dir, train_config)
    splits = pipeline.prepare(run_dir, data_config, text_config, log=log)
    source, target = run_lib.make_processors(run_dir, text_config)
    model_config = with_vocabularies(
        model_config, source, target,
        text_lib.load_vocabulary(
            run_lib.run_path(run_dir, run_lib.SOURCE_VOCAB)
        ),
    )
    run_lib.save_run_config(
        run_dir, data_config, text_config, model_config, train_config
    )
    links = None
    if train_config.guided_alignment:
        word_links = pipeline.split_links(
            data_config, train_config.guided_alignment, splits
        )
        links = {
            name: pipeline.guided_token_links(
                splits[name], word_links[name], source, target
            )
            for name in ("train", "validation")
        }
        linked = sum(bool(x) for x in links["train"])
        log(
            f"guided alignment: {linked}/{len(links['train'])} training "
            f"pairs with links from {train_config.guided_alignment}"
        )
    return fit(
        strategy, run_dir, splits, source, target, model_config,
        train_config, log=log, links=links,
    )


def fit(
    strategy,
    run_dir: str,
    splits: dict,
    source,
    target,
    model_config: ModelConfig,
    train_config: TrainConfig,
    log=print,
    links=None,
):
    """`model.fit` of a `model.Seq2Seq` on prepared splits, into `run_dir`.

    The part of `train` that any example of ids in, ids out shares (the G2P
    example calls it with its own processors).

    Args:
        strategy: The `tf.distribute` strategy of `start`.
        run_dir: The run directory (of `start`).
        splits: Dict of `Corpus` splits; `"train"` and `"validation"` used.
        source: Source processor (`tokenize(strings)` -> ragged ids).
        target: Target processor.
        model_config: `ModelConfig` with the vocabulary sizes set.
        train_config: `TrainConfig`.
        log: Printing function.
        links: With guided alignment, a dict from `"train"` and
            `"validation"` to the token links of each pair
            (`pipeline.guided_token_links`).

    Returns:
        `(seq2seq, history dict)`; the run directory holds the checkpoints,
        the final weights and `history.json`. The model's layers compute
        under the run's dtype policy (`TrainConfig.mixed_precision`); the
        global policy is left as it was.
    """
    check_alignment_head(model_config, train_config)
    if bool(train_config.guided_alignment) != (links is not None):
        raise ValueError(
            "`links` must be given exactly when `guided_alignment` is set "
            "(`train` reads them). Received: guided_alignment="
            f"{train_config.guided_alignment!r}, links "
            f"{'given' if links is not None else 'not given'}"
        )
    steps_per_epoch = train_config.steps_per_epoch or max(
        math.ceil(len(splits["train"]) / train_config.batch_size), 1
    )
    policy = acceleration.mixed_precision_policy(train_config.mixed_precision)
    # The policy applies to this model's layers only (see `acceleration`).
    with strategy.scope(), acceleration.dtype_policy(policy):
        seq2seq = model_lib.build_model(model_config)
        compile_model(
            seq2seq, train_config, steps_per_epoch * train_config.epochs
        )
    # keras-team/keras#20585 (no-op unless the strategy spans 2+ workers).
    model = fitted_model(seq2seq, train_config)
    # Under XLA (`model.jit_compile`, Keras' "auto" resolved: off where a
    # layer cannot compile, e.g. a cuDNN LSTM) every new batch shape
    # compiles the train step anew: batches padded to their bucket's width.
    fixed_shapes = bool(model.jit_compile)
    lexical = model_config.alignment_head == "lexical"
    train_ds = pipeline.make_dataset(
        splits["train"], source, target, train_config.batch_size,
        shuffle=True, bucket_boundaries=train_config.bucket_boundaries,
        seed=train_config.seed, repeat=True,
        links=None if links is None else links["train"],
        fixed_shapes=fixed_shapes, lexical=lexical,
    )
    validation = splits["validation"] if len(splits["validation"]) else None
    val_ds = (
        pipeline.make_dataset(
            validation, source, target, train_config.batch_size,
            links=None if links is None else links["validation"],
            bucket_boundaries=(
                train_config.bucket_boundaries if fixed_shapes else None
            ),
            fixed_shapes=fixed_shapes, lexical=lexical,
        )
        if validation is not None
        else None
    )
    distribute.apply_multi_worker_fit_workaround(model, strategy)
    monitor = "val_loss" if val_ds is not None else "loss"
    os.makedirs(run_lib.run_path(run_dir, run_lib.CHECKPOINTS), exist_ok=True)
    callbacks = [
        EpochTimer(),
        # Two backups: a run killed while writing the latest one resumes
        # from the one before (the file would be truncated otherwise).
        keras.callbacks.BackupAndRestore(
            run_lib.run_path(run_dir, run_lib.BACKUP), double_checkpoint=True
        ),
        keras.callbacks.ModelCheckpoint(
            run_lib.run_path(run_dir, run_lib.CHECKPOINT_PATTERN),
            save_weights_only=True,
        ),
        keras.callbacks.EarlyStopping(
            monitor=monitor, patience=train_config.patience,
            restore_best_weights=True,
        ),
    ]
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(
            keras.callbacks.TensorBoard(run_lib.run_path(run_dir, run_lib.LOGS))
        )
    else:
        log("tensorboard is not installed: no TensorBoard logs")
    verbose = train_config.verbose
    if verbose == "auto":
        verbose = 1 if os.isatty(1) else 2
    # Keras warns when the validation set (of unknown length: bucketing)
    # is exhausted, which is how every validation pass ends.
    warnings.filterwarnings("ignore", message="Your input ran out of data")
    start = time.time()
    history = model.fit(
        train_ds,
        validation_data=val_ds,
        epochs=train_config.epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,  # the pipeline shuffles
    )
    elapsed = time.time() - start
    seq2seq.weights_model.save_weights(
        run_lib.run_path(run_dir, run_lib.WEIGHTS)
    )
    record = {k: [float(x) for x in v] for k, v in history.history.items()}
    record["train_seconds"] = elapsed
    record["dtype_policy"] = policy or "float32"
    record["jit_compile"] = bool(model.jit_compile)
    with open(run_lib.run_path(run_dir, run_lib.HISTORY), "w") as f:
        json.dump(record, f, indent=2)
    log(
        f"trained {len(history.epoch)} epochs in {elapsed:.0f} s "
        f"({record['dtype_policy']}, XLA {'on' if model.jit_compile else 'off'})"
        f" -> {run_dir}"
    )
    return seq2seq, record
