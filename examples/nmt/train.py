"""Training of the NMT example with `model.fit` on a `tf.data` pipeline.

A run directory holds everything a run produces:

    run.json                  data, text, model and training settings
    source_vocab.txt          WordPiece vocabularies learned from the
    target_vocab.txt          training split
    checkpoints/epoch_NN.weights.h5   one per epoch
    backup/                   `keras.callbacks.BackupAndRestore` state: a
                              killed run started again with the same
                              command resumes from the last finished epoch
    logs/                     TensorBoard logs
    model.weights.h5          final weights (best validation loss)
    history.json              per-epoch metrics
    export/                   SavedModel (`export` sub-command)
"""

import dataclasses
import importlib.util
import json
import math
import os
import time
import warnings

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from examples.nmt import data as data_lib
from examples.nmt import distribute
from examples.nmt import model as model_lib
from examples.nmt import text as text_lib


@dataclasses.dataclass
class DataConfig:
    """Where the sentence pairs come from and how they are split."""

    paths: tuple = ("dates",)
    data_format: str = "auto"
    direction: str = "to-english"
    num_dates: int = 20000
    seed: int = 0
    max_words: int = 40
    max_examples: int = None
    validation_fraction: float = 0.05
    test_fraction: float = 0.05


@dataclasses.dataclass
class TextConfig:
    """Tokenization settings of both sides."""

    source_vocab_size: int = 8000
    target_vocab_size: int = 8000
    source_lower_case: bool = True
    target_lower_case: bool = False
    max_tokens: int = text_lib.MAX_TOKENS
    # `[END]` after the source: gives every source at least one token, but
    # is also a place where a forward encoder can gather the whole
    # sentence, which attention may use instead of the aligned word.
    source_end_token: bool = True


@dataclasses.dataclass
class TrainConfig:
    """Optimisation settings."""

    epochs: int = 10
    batch_size: int = 64
    learning_rate: float = 3e-3
    warmup_steps: int = 100
    label_smoothing: float = 0.0
    patience: int = 3
    bucket_boundaries: tuple = (8, 12, 16, 24, 32)
    mixed_precision: str = None  # None, "float16" or "bfloat16"
    jit_compile: bool = False
    strategy: str = "default"
    seed: int = 0
    steps_per_epoch: int = None
    verbose: str = "auto"


# ----------------------------------------------------------------------
# Run directory.


def _path(run_dir, name):
    return os.path.join(run_dir, name)


def save_run_config(run_dir, data_config, text_config, model_config, train_config):
    os.makedirs(run_dir, exist_ok=True)
    config = {
        "data": dataclasses.asdict(data_config),
        "text": dataclasses.asdict(text_config),
        "model": dataclasses.asdict(model_config),
        "train": dataclasses.asdict(train_config),
    }
    with open(_path(run_dir, "run.json"), "w") as f:
        json.dump(config, f, indent=2)


def load_run_config(run_dir):
    path = _path(run_dir, "run.json")
    if not os.path.exists(path):
        raise ValueError(
            f"No run.json in the run directory (train first). Received: "
            f"run_dir={run_dir!r}"
        )
    with open(path) as f:
        config = json.load(f)
    config["data"]["paths"] = tuple(config["data"]["paths"])
    config["train"]["bucket_boundaries"] = tuple(config["train"]["bucket_boundaries"])
    return (
        DataConfig(**config["data"]),
        TextConfig(**config["text"]),
        model_lib.ModelConfig(**config["model"]),
        TrainConfig(**config["train"]),
    )


def load_splits(data_config):
    """The deterministic train/validation/test split of the configured data."""
    corpus = data_lib.load_corpus(
        list(data_config.paths),
        data_format=data_config.data_format,
        direction=data_config.direction,
        num_dates=data_config.num_dates,
        seed=data_config.seed,
    )
    corpus = data_lib.filter_corpus(
        corpus, max_words=data_config.max_words, max_examples=data_config.max_examples
    )
    return corpus, data_lib.split_pairs(
        corpus, data_config.validation_fraction, data_config.test_fraction
    )


def make_processors(run_dir, text_config):
    source = text_lib.TextProcessor(
        _path(run_dir, "source_vocab.txt"),
        lower_case=text_config.source_lower_case,
        max_tokens=text_config.max_tokens,
        add_start=False,
        add_end=text_config.source_end_token,
        name="source_text",
    )
    target = text_lib.TextProcessor(
        _path(run_dir, "target_vocab.txt"),
        lower_case=text_config.target_lower_case,
        max_tokens=text_config.max_tokens,
        add_start=True,
        name="target_text",
    )
    return source, target


def load_trained(run_dir, weights=None):
    """Rebuilds the model of a run and loads its weights.

    Returns:
        `(seq2seq, source_processor, target_processor, configs)` with
        `configs` the tuple of `load_run_config`.
    """
    configs = load_run_config(run_dir)
    _, text_config, model_config, _ = configs
    source, target = make_processors(run_dir, text_config)
    seq2seq = model_lib.build_model(model_config)
    seq2seq.training_model.load_weights(weights or _path(run_dir, "model.weights.h5"))
    return seq2seq, source, target, configs


# ----------------------------------------------------------------------
# Input pipeline.


def make_dataset(
    corpus,
    source_processor,
    target_processor,
    batch_size,
    shuffle=False,
    bucket_boundaries=None,
    seed=0,
    repeat=False,
):
    """`tf.data` pipeline of `({"source_ids", "target_in"}, target_out)`.

    Tokenizes in batches of 1024 with the tensorflow-text ops, then either
    buckets by length (`bucket_boundaries`, so a batch holds sentences of
    similar length and little padding) or pads each batch to its longest
    sentence; prefetches.
    """
    sources = [s for s, _ in corpus.pairs]
    targets = [t for _, t in corpus.pairs]
    ds = tf.data.Dataset.from_tensor_slices(
        (tf.constant(sources, tf.string), tf.constant(targets, tf.string))
    )
    if shuffle:
        ds = ds.shuffle(len(sources), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    def tokenize(s, t):
        s, t = source_processor.tokenize(s), target_processor.tokenize(t)
        return s.to_tensor(), s.row_lengths(), t.to_tensor(), t.row_lengths()

    ds = ds.batch(1024).map(
        tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    # Back to one unpadded example per element.
    ds = ds.unbatch().map(lambda s, ns, t, nt: (s[:ns], t[:nt]))
    if bucket_boundaries:
        ds = ds.bucket_by_sequence_length(
            lambda s, t: tf.maximum(tf.shape(s)[0], tf.shape(t)[0]),
            bucket_boundaries=list(bucket_boundaries),
            bucket_batch_sizes=[batch_size] * (len(bucket_boundaries) + 1),
        )
    else:
        ds = ds.padded_batch(batch_size)

    def to_inputs(source, target):
        source = tf.cast(source, tf.int32)
        target = tf.cast(target, tf.int32)
        return (
            {"source_ids": source, "target_in": target[:, :-1]},
            target[:, 1:],
        )

    return ds.map(to_inputs).prefetch(tf.data.AUTOTUNE)


# ----------------------------------------------------------------------
# Loss and metrics.


@keras.saving.register_keras_serializable(package="nmt")
class MaskedLoss(keras.losses.Loss):
    """Token cross-entropy averaged over the non-padding targets.

    `loss = sum_t m_t CE_t / sum_t m_t` with `m_t = [y_t != 0]`, the
    cross-entropy of logits against one-hot labels smoothed by
    `label_smoothing` (`(1 - e) onehot + e / V`).
    """

    def __init__(self, label_smoothing=0.0, name="masked_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        logits = ops.cast(y_pred, "float32")
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        if self.label_smoothing:
            labels = ops.one_hot(y_true, ops.shape(logits)[-1])
            per_token = keras.losses.categorical_crossentropy(
                labels, logits, from_logits=True, label_smoothing=self.label_smoothing
            )
        else:
            per_token = keras.losses.sparse_categorical_crossentropy(
                y_true, logits, from_logits=True
            )
        token_mean = ops.sum(per_token * mask) / ops.maximum(ops.sum(mask), 1.0)
        # One value per example, so that the Keras reduction (a mean over
        # the batch) returns the token mean unchanged.
        return ops.ones_like(per_token[:, 0]) * token_mean

    def get_config(self):
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing})
        return config


@keras.saving.register_keras_serializable(package="nmt")
class MaskedAccuracy(keras.metrics.Metric):
    """Share of non-padding target tokens predicted exactly (argmax)."""

    def __init__(self, name="masked_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        mask = ops.not_equal(y_true, 0)
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        hits = ops.logical_and(mask, ops.equal(predicted, y_true))
        self.correct.assign_add(ops.sum(ops.cast(hits, "float32")))
        self.count.assign_add(ops.sum(ops.cast(mask, "float32")))

    def result(self):
        return self.correct / ops.maximum(self.count, 1.0)

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)


def get_strategy(name):
    """The `tf.distribute` strategy the model is built under.

    `"default"` is the default strategy (one device: the GPU when there is
    one, the CPU otherwise); `"mirrored"` replicates over the local GPUs;
    `"multi-worker"` over the workers of `TF_CONFIG` (see `distribute`).
    """
    return distribute.get_strategy(name)


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


def compile_model(seq2seq, train_config, total_steps):
    seq2seq.training_model.compile(
        optimizer=keras.optimizers.Adam(
            learning_rate_schedule(train_config, total_steps), clipnorm=1.0
        ),
        loss=MaskedLoss(train_config.label_smoothing),
        metrics=[MaskedAccuracy()],
        jit_compile=train_config.jit_compile,
    )


class _EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["epoch_seconds"] = time.time() - self._start


# ----------------------------------------------------------------------


def prepare(run_dir, data_config, text_config, log=print):
    """Loads and splits the data, learns the vocabularies (once per run)."""
    corpus, splits = load_splits(data_config)
    log(
        f"data: {len(corpus)} pairs ({corpus.skipped} malformed lines skipped"
        + (f": {dict(corpus.reasons)}" if corpus.skipped else "")
        + "); split "
        + ", ".join(f"{n} {len(s)}" for n, s in splits.items())
    )
    if len(corpus) == 0:
        raise ValueError(
            f"No usable sentence pairs in {list(data_config.paths)}: "
            f"{corpus.skipped} lines skipped"
            + (f" ({dict(corpus.reasons)})" if corpus.skipped else "")
        )
    if len(splits["train"]) == 0:
        raise ValueError(f"The training split is empty. Received: paths={data_config.paths}")
    for side, size, lower, index in (
        ("source", text_config.source_vocab_size, text_config.source_lower_case, 0),
        ("target", text_config.target_vocab_size, text_config.target_lower_case, 1),
    ):
        path = _path(run_dir, f"{side}_vocab.txt")
        if not os.path.exists(path):
            vocab = text_lib.learn_vocabulary(
                [pair[index] for pair in splits["train"].pairs], size, lower
            )
            text_lib.save_vocabulary(vocab, path)
            log(f"{side} vocabulary: {len(vocab)} tokens -> {path}")
    return splits


def train(run_dir, data_config, text_config, model_config, train_config, log=print):
    """Trains a model; returns `(seq2seq, history dict)`.

    `model_config.source_vocab_size`/`target_vocab_size` are overwritten by
    the sizes of the learned vocabularies.
    """
    # First: MultiWorkerMirroredStrategy must exist before any TF op runs.
    strategy = get_strategy(train_config.strategy)
    # Workers other than the chief write to their own sub-directory.
    run_dir = distribute.worker_dir(run_dir, strategy)
    os.makedirs(run_dir, exist_ok=True)
    keras.utils.set_random_seed(train_config.seed)
    policy = distribute.mixed_precision_policy(train_config.mixed_precision)
    if policy:
        keras.config.set_dtype_policy(policy)
    splits = prepare(run_dir, data_config, text_config, log=log)
    source, target = make_processors(run_dir, text_config)
    model_config = dataclasses.replace(
        model_config,
        source_vocab_size=source.vocab_size,
        target_vocab_size=target.vocab_size,
    )
    save_run_config(run_dir, data_config, text_config, model_config, train_config)

    train_ds = make_dataset(
        splits["train"], source, target, train_config.batch_size,
        shuffle=True, bucket_boundaries=train_config.bucket_boundaries,
        seed=train_config.seed, repeat=True,
    )
    steps_per_epoch = train_config.steps_per_epoch or max(
        math.ceil(len(splits["train"]) / train_config.batch_size), 1
    )
    validation = splits["validation"] if len(splits["validation"]) else None
    val_ds = (
        make_dataset(validation, source, target, train_config.batch_size)
        if validation is not None
        else None
    )
    with strategy.scope():
        seq2seq = model_lib.build_model(model_config)
        compile_model(seq2seq, train_config, steps_per_epoch * train_config.epochs)
    # keras-team/keras#20585 (no-op unless the strategy spans 2+ workers).
    distribute.apply_multi_worker_fit_workaround(seq2seq.training_model, strategy)
    monitor = "val_loss" if val_ds is not None else "loss"
    os.makedirs(_path(run_dir, "checkpoints"), exist_ok=True)
    callbacks = [
        _EpochTimer(),
        # Two backups: a run killed while writing the latest one resumes
        # from the one before (the file would be truncated otherwise).
        keras.callbacks.BackupAndRestore(
            _path(run_dir, "backup"), double_checkpoint=True
        ),
        keras.callbacks.ModelCheckpoint(
            _path(run_dir, "checkpoints/epoch_{epoch:02d}.weights.h5"),
            save_weights_only=True,
        ),
        keras.callbacks.EarlyStopping(
            monitor=monitor, patience=train_config.patience,
            restore_best_weights=True,
        ),
    ]
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(keras.callbacks.TensorBoard(_path(run_dir, "logs")))
    else:
        log("tensorboard is not installed: no TensorBoard logs")
    verbose = train_config.verbose
    if verbose == "auto":
        verbose = 1 if os.isatty(1) else 2
    # Keras warns when the validation set (of unknown length: bucketing)
    # is exhausted, which is how every validation pass ends.
    warnings.filterwarnings("ignore", message="Your input ran out of data")
    start = time.time()
    history = seq2seq.training_model.fit(
        train_ds,
        validation_data=val_ds,
        epochs=train_config.epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,  # the pipeline shuffles
    )
    elapsed = time.time() - start
    seq2seq.training_model.save_weights(_path(run_dir, "model.weights.h5"))
    record = {k: [float(x) for x in v] for k, v in history.history.items()}
    record["train_seconds"] = elapsed
    with open(_path(run_dir, "history.json"), "w") as f:
        json.dump(record, f, indent=2)
    log(f"trained {len(history.epoch)} epochs in {elapsed:.0f} s -> {run_dir}")
    return seq2seq, record


def teacher_forced_attention(seq2seq, source_processor, target_processor, pairs, batch_size=256):
    """Attention weights of the model fed the reference targets.

    Returns:
        A list of `(weights (T, S), source_ids, target_ids)` numpy triples,
        one per pair, unpadded; row `t` is the attention used to predict
        target token `t + 1` (the token after `[START]`).
    """
    out = []
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        src = source_processor.tokenize([s for s, _ in chunk])
        tgt = target_processor.tokenize([t for _, t in chunk])
        src_dense = tf.cast(src.to_tensor(), tf.int32)
        tgt_dense = tf.cast(tgt.to_tensor(), tf.int32)
        weights = seq2seq.attention_model(
            {"source_ids": src_dense, "target_in": tgt_dense[:, :-1]}, training=False
        )
        weights = np.asarray(weights)
        for j in range(len(chunk)):
            s_ids = src[j].numpy()
            t_ids = tgt[j].numpy()
            out.append((weights[j, : len(t_ids) - 1, : len(s_ids)], s_ids, t_ids))
    return out
