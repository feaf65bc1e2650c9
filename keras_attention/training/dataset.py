"""The `tf.data` pipeline that feeds `Seq2Seq.fit` (TensorFlow).

`make_dataset` turns sentence pairs into batches of `({"source_ids",
"target_in"}, {"logits": target_out, ...})`, tokenized by the caller's
tokenizers (`serving.Tokenizer`), bucketed by length, optionally with the
reference links of guided alignment.
"""

from typing import Any
from typing import List
from typing import Optional
from typing import Sequence
from keras_attention.typing import Tensor

import numpy as np
import tensorflow as tf


# Shuffle buffer of a `tf.data` corpus of unknown size, in pairs.
SHUFFLE_BUFFER = 100_000


def _flat_links(links: Any):
    """Ragged token links as a flat `(N, 2)` `[row, column]` array and row
    splits (`links[i]` is `flat[splits[i]:splits[i + 1]]`)."""
    splits = np.zeros(len(links) + 1, dtype=np.int64)
    splits[1:] = np.cumsum([len(x) for x in links])
    flat = np.zeros((int(splits[-1]), 2), dtype=np.int32)
    k = 0
    for pair_links in links:
        for column, row in sorted(pair_links):
            flat[k] = (row, column)
            k += 1
    return flat, splits


def padded_widths(
    bucket_boundaries: Optional[Sequence[int]], max_tokens: int
) -> List[int]:
    """The padded lengths of `make_dataset(fixed_shapes=True)`: the longest
    sentence of each length bucket (`boundary - 1`, for the boundaries
    below `max_tokens`), then `max_tokens`, the longest any sentence is."""
    widths = {b - 1 for b in bucket_boundaries or () if 1 < b <= max_tokens}
    return sorted(widths | {max_tokens})


def _pad_columns(ids: Tensor, width: int):
    return tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]]])


def make_dataset(
    corpus: Any,
    source_processor: Any,
    target_processor: Any,
    batch_size: int,
    shuffle: bool = False,
    bucket_boundaries: Optional[Sequence[int]] = None,
    seed: Optional[int] = 0,
    repeat: bool = False,
    links: Any = None,
    fixed_shapes: bool = False,
    lexical: bool = False,
    cache: Optional[bool] = None,
    teacher: Any = None,
    distillation_weight: float = 0.5,
) -> Any:
    """`tf.data` pipeline of `({"source_ids", "target_in"}, target_out)`.

    Tokenizes in batches of 1024 with the tensorflow-text ops, then either
    buckets by length (`bucket_boundaries`, so a batch holds sentences of
    similar length and little padding) or pads each batch to its longest
    sentence; prefetches.

    The targets are `target_out` (`Seq2Seq` reads a tensor as the
    `"logits"` target), or a dict over its outputs: with `links` (one set
    of `(source column, target row)` token links per pair), `{"logits":
    target_out, "alignment": reference}`, the dense `(T, S)`
    reference of each pair (1 at each link), padded with -1
    (`keras_attention.alignment.GuidedAlignmentLoss`).

    With `lexical` (the lexical alignment head), `"lexical": target_out`
    is in the dict (the head's loss masks by the same ids).

    With `teacher`, the `(flat, splits)` distributions of
    `keras_attention.training.distillation.teacher_distributions` (one
    `(T_i, V)` block per pair, in `corpus` order), the `"logits"` target
    is each pair's distributions `(1 - w) onehot(target_out) + w teacher`
    (`w` the `distillation_weight`), padded with rows of zeros.

    With `fixed_shapes`, every batch is padded to the longest length its
    bucket can hold (`padded_widths`), not to its own longest sentence:
    the batches then come in one shape per bucket (two where the last
    batch of a bucket is short), so that an XLA-compiled train step
    (`--jit-compile`) compiles a handful of times instead of once per new
    batch shape.

    Args:
        corpus: An object with `pairs`, a list of `(source, target)`
            strings, or a `tf.data.Dataset` of `(source, target)` string
            scalars (shuffled in a buffer of its size, or of
            `SHUFFLE_BUFFER` pairs where its size is unknown).
        source_processor: The source tokenizer (`tokenize(strings)`:
            ragged ids with `[END]`; `max_tokens`).
        target_processor: The target tokenizer (ids with `[START]` and
            `[END]`).
        batch_size: Pairs per batch.
        cache: Whether the tokenized pairs are kept in memory after the
            first pass (shuffling and batching then read them from there).
            Defaults to `True` for a list of pairs, `False` for a
            `tf.data.Dataset`.
    """
    if isinstance(corpus, tf.data.Dataset):
        ds = corpus.enumerate().map(lambda i, pair: (pair[0], pair[1], i))
        size = int(corpus.cardinality())
        buffer = size if size > 0 else SHUFFLE_BUFFER
    else:
        sources = [s for s, _ in corpus.pairs]
        targets = [t for _, t in corpus.pairs]
        ds = tf.data.Dataset.from_tensor_slices(
            (
                tf.constant(sources, tf.string),
                tf.constant(targets, tf.string),
                tf.range(len(sources), dtype=tf.int64),
            )
        )
        buffer = size = len(sources)

    def tokenize(s: Tensor, t: Tensor, index: Any) -> Any:
        s, t = source_processor.tokenize(s), target_processor.tokenize(t)
        return (
            s.to_tensor(),
            s.row_lengths(),
            t.to_tensor(),
            t.row_lengths(),
            index,
        )

    ds = ds.batch(1024).map(
        tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    # Back to one unpadded example per element.
    ds = ds.unbatch().map(lambda s, ns, t, nt, i: (s[:ns], t[:nt], i))
    if cache is None:
        cache = not isinstance(corpus, tf.data.Dataset)
    if cache:
        # Tokenized once: an epoch then reads ids from memory (a new
        # iterator over the tokenizing graph costs about a second).
        ds = ds.cache()
    if shuffle:
        ds = ds.shuffle(
            max(buffer, 1), seed=seed, reshuffle_each_iteration=True
        )
    if repeat:
        ds = ds.repeat()
    # Per-pair extras, looked up by the pair's index: (name, make, the
    # padding value, whether the source length pads its last axis).
    extras = []
    if links is not None:
        flat, splits = (tf.constant(x) for x in _flat_links(links))

        def reference(s: Tensor, t: Tensor, i: Any) -> Tensor:
            pair = flat[splits[i] : splits[i + 1]]
            shape = tf.stack([tf.shape(t)[0] - 1, tf.shape(s)[0]])
            matrix = tf.scatter_nd(
                pair, tf.ones([tf.shape(pair)[0]], tf.float32), shape
            )
            return tf.minimum(matrix, 1.0)

        extras.append(("alignment", reference, -1.0, True))
    if teacher is not None:
        if size >= 0 and len(teacher[1]) - 1 != size:
            raise ValueError(
                "`teacher` must hold the distributions of every pair of "
                f"`corpus` ({size} pairs). Received: distributions of "
                f"{len(teacher[1]) - 1} pairs"
            )
        soft, soft_splits = (tf.constant(x) for x in teacher)
        vocab_size = int(teacher[0].shape[1])

        def distributions(s: Tensor, t: Tensor, i: Any) -> Tensor:
            rows = tf.cast(soft[soft_splits[i] : soft_splits[i + 1]], tf.float32)
            reference = tf.one_hot(t[1:], vocab_size)
            return (1.0 - distillation_weight) * reference + (
                distillation_weight * rows
            )

        extras.append(("logits", distributions, 0.0, False))
    ds = ds.map(
        lambda s, t, i: (s, t) + tuple(make(s, t, i) for _, make, *_ in extras),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    padding = None
    if extras:
        zero = tf.constant(0, tf.int64)
        padding = (zero, zero) + tuple(
            tf.constant(value, tf.float32) for _, _, value, _ in extras
        )
    if bucket_boundaries:
        ds = ds.bucket_by_sequence_length(
            lambda s, t, *_: tf.maximum(tf.shape(s)[0], tf.shape(t)[0]),
            bucket_boundaries=list(bucket_boundaries),
            bucket_batch_sizes=[batch_size] * (len(bucket_boundaries) + 1),
            padding_values=padding,
        )
    else:
        ds = ds.padded_batch(batch_size, padding_values=padding)

    def pad_to_width(source: Tensor, target: Any, *matrices: Any) -> Any:
        # One bucket's sentences are all shorter than its boundary: the
        # first width that holds the batch's longest is the bucket's.
        longest = tf.maximum(tf.shape(source)[1], tf.shape(target)[1])
        width = widths[tf.searchsorted(widths, [longest])[0]]
        padded = [_pad_columns(source, width), _pad_columns(target, width)]
        for matrix, (_, _, value, by_source) in zip(matrices, extras):
            last = width - tf.shape(matrix)[2] if by_source else 0
            padded.append(
                tf.pad(
                    matrix,
                    [[0, 0], [0, width - 1 - tf.shape(matrix)[1]], [0, last]],
                    constant_values=value,
                )
            )
        return tuple(padded)

    if fixed_shapes:
        widths = tf.constant(
            padded_widths(
                bucket_boundaries,
                max(source_processor.max_tokens, target_processor.max_tokens),
            ),
            tf.int32,
        )
        ds = ds.map(pad_to_width)

    def to_inputs(source: Tensor, target: Any, *matrices: Any) -> Any:
        source = tf.cast(source, tf.int32)
        target = tf.cast(target, tf.int32)
        inputs = {"source_ids": source, "target_in": target[:, :-1]}
        if not (lexical or extras):
            return inputs, target[:, 1:]
        targets = {"logits": target[:, 1:]}
        if lexical:
            targets["lexical"] = target[:, 1:]
        for matrix, (name, *_) in zip(matrices, extras):
            targets[name] = matrix
        return inputs, targets

    return ds.map(to_inputs).prefetch(tf.data.AUTOTUNE)
