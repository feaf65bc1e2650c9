"""Training a `Seq2Seq`: compile, and `fit` into a run directory.

`compile_seq2seq` compiles with `FusedAdam` (clipped, warm-up then cosine
decay), the masked loss and accuracy on `"logits"` and, where asked, the
guided alignment loss on `"alignment"` and the lexical head's loss on
`"lexical"`. `fit` runs `model.fit` with the callbacks that make a run
directory (`run_dir.py`): one checkpoint per epoch, a backup from which a
killed run started again resumes (`keras.callbacks.BackupAndRestore`),
early stopping on the validation loss, TensorBoard logs where
TensorBoard is installed, the final weights and `history.json`.
"""

from typing import Any
from typing import Optional
from typing import Union

import contextlib
import importlib.util
import os
import time
import warnings

import keras

from keras_attention.alignment import GuidedAlignmentLoss
from keras_attention.training import run_dir as run_lib
from keras_attention.seq2seq.fused_adam import FusedAdam
from keras_attention.seq2seq.losses import MaskedAccuracy
from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.seq2seq.losses import MaskedMean


def learning_rate_schedule(
    learning_rate: float, warmup_steps: int, total_steps: int
) -> Any:
    """Linear warm-up to `learning_rate`, then cosine decay to 5% of it."""
    warmup = min(warmup_steps, max(total_steps // 2, 1))
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(total_steps - warmup, 1),
        alpha=0.05,
        warmup_target=learning_rate,
        warmup_steps=warmup,
    )


def compile_seq2seq(
    seq2seq: Any,
    learning_rate: float,
    warmup_steps: int,
    total_steps: int,
    label_smoothing: float = 0.0,
    guided_alignment_type: Optional[str] = None,
    guided_alignment_weight: float = 1.0,
    jit_compile: Union[str, bool] = "auto",
) -> None:
    """Compiles `seq2seq` for `fit`.

    Args:
        seq2seq: A `Seq2Seq`.
        learning_rate, warmup_steps, total_steps: The schedule
            (`learning_rate_schedule`).
        label_smoothing: Of the masked loss. Defaults to `0.0`.
        guided_alignment_type: `None` (no guided alignment), `"ce"` or
            `"mse"`: the `GuidedAlignmentLoss` on `"alignment"` (rows
            normalised). Defaults to `None`.
        guided_alignment_weight: Its weight. Defaults to `1.0`.
        jit_compile: Of `Model.compile`. Defaults to `"auto"`.
    """
    loss = {"logits": MaskedLoss(label_smoothing)}
    if guided_alignment_type:
        loss["alignment"] = GuidedAlignmentLoss(
            guided_alignment_type,
            weight=guided_alignment_weight,
            normalize=True,
        )
    if seq2seq.alignment_head == "lexical":
        loss["lexical"] = MaskedMean()
    seq2seq.compile(
        optimizer=FusedAdam(
            learning_rate_schedule(learning_rate, warmup_steps, total_steps),
            clipnorm=1.0,
        ),
        loss=loss,
        metrics={"logits": [MaskedAccuracy()]},
        jit_compile=jit_compile,
    )


class EpochTimer(keras.callbacks.Callback):
    """Adds the epoch's wall-clock time to the logs (`epoch_seconds`)."""

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        self._start = time.time()

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        if logs is not None:
            logs["epoch_seconds"] = time.time() - self._start


class RunBackup(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` whose restore failure is one `ValueError` that
    names the backup and what to do: both backup files damaged (a kill
    while they were written, a full disk), or a backup of other settings
    (weights of other sizes)."""

    def on_train_begin(self, logs: Any = None) -> None:
        try:
            super().on_train_begin(logs)
        except (OSError, ValueError, KeyError) as e:
            first = " ".join(str(e).split())[:300]
            raise ValueError(
                f"The backup in {self.backup_dir} does not load ({first}): "
                "it is damaged, or belongs to other settings. Remove that "
                "folder to train from the first epoch (the checkpoints of "
                "the finished epochs stay), or overwrite the run."
            ) from None


def build_optimizer(model: Any) -> None:
    """Creates the optimizer's variables of a compiled, built `model` now.

    Without a distribution strategy, Keras' TensorFlow trainer creates them
    inside the first traced train step, and TensorFlow then traces the step
    a second time (a `tf.function` that created variables): built before
    `fit`, the step is traced once, which saves seconds per `fit` call. Any
    backend; a no-op where the optimizer is built or the model is not.
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or optimizer.built or not model.built:
        return
    strategy = getattr(model, "distribute_strategy", None)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        optimizer.build(model.trainable_variables)


def fit(
    seq2seq: Any,
    run_dir: str,
    train_ds: Any,
    validation_ds: Any,
    epochs: int,
    steps_per_epoch: int,
    patience: int = 3,
    verbose: Union[str, int] = "auto",
    log: Any = print,
    record_extras: Optional[dict] = None,
) -> dict:
    """`seq2seq.fit` into `run_dir`; returns the history dict.

    Args:
        seq2seq: A compiled `Seq2Seq`.
        run_dir: The run directory.
        train_ds: Repeating training batches (`dataset.make_dataset`).
        validation_ds: Validation batches, or `None`.
        epochs: Epochs.
        steps_per_epoch: Steps per epoch.
        patience: Of early stopping. Defaults to `3`.
        verbose: Of `fit`; `"auto"` is 1 on a terminal, else 2.
        log: Printing function.
        record_extras: Entries added to the history record (what the run
            trained with, e.g. its dtype policy).

    Returns:
        The per-epoch metrics, with `train_seconds` and `record_extras`;
        also written to `history.json` (once, at the end), and the final
        weights (the best by the monitored loss) to `model.weights.h5`.
    """
    monitor = "val_loss" if validation_ds is not None else "loss"
    os.makedirs(run_lib.run_path(run_dir, run_lib.CHECKPOINTS), exist_ok=True)
    callbacks = [
        EpochTimer(),
        # Two backups: a run killed while writing the latest one resumes
        # from the one before (the file would be truncated otherwise).
        RunBackup(
            run_lib.run_path(run_dir, run_lib.BACKUP), double_checkpoint=True
        ),
        keras.callbacks.ModelCheckpoint(
            run_lib.run_path(run_dir, run_lib.CHECKPOINT_PATTERN),
            save_weights_only=True,
        ),
        keras.callbacks.EarlyStopping(
            monitor=monitor, patience=patience, restore_best_weights=True
        ),
    ]
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(
            keras.callbacks.TensorBoard(run_lib.run_path(run_dir, run_lib.LOGS))
        )
    else:
        log("tensorboard is not installed: no TensorBoard logs")
    if verbose == "auto":
        verbose = 1 if os.isatty(1) else 2
    # Keras warns when the validation set (of unknown length: bucketing)
    # is exhausted, which is how every validation pass ends.
    warnings.filterwarnings("ignore", message="Your input ran out of data")
    build_optimizer(seq2seq)
    start = time.time()
    history = seq2seq.fit(
        train_ds,
        validation_data=validation_ds,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,  # the pipeline shuffles
    )
    record = {k: [float(x) for x in v] for k, v in history.history.items()}
    record["train_seconds"] = time.time() - start
    record.update(record_extras or {})
    run_lib.write_atomically(
        run_lib.run_path(run_dir, run_lib.WEIGHTS), seq2seq.save_weights
    )
    run_lib.save_history(run_dir, record)
    return record
