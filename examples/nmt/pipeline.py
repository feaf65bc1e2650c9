"""Input pipeline of the NMT example: vocabularies and `tf.data` batches.

`prepare` loads and splits the configured data and learns the WordPiece
vocabularies of a run from its training split; `make_dataset` turns a
`Corpus` into batches of `({"source_ids", "target_in"}, target_out)` for
`model.fit`, tokenized with the run's `text.TextProcessor`s.
"""

import os

import tensorflow as tf

from examples.nmt import data as data_lib
from examples.nmt import run as run_lib
from examples.nmt import text as text_lib


def prepare(run_dir, data_config, text_config, log=print):
    """Loads and splits the data, learns the vocabularies (once per run).

    A vocabulary file already in the run directory (a resumed run) is kept.

    Returns:
        The dict of splits of `data.load_splits`.

    Raises:
        ValueError: if there are no usable pairs or no training pairs.
    """
    corpus, splits = data_lib.load_splits(data_config)
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
        raise ValueError(
            "The training split is empty. "
            f"Received: paths={data_config.paths}"
        )
    sides = (
        ("source", text_config.source_vocab_size,
         text_config.source_lower_case, 0),
        ("target", text_config.target_vocab_size,
         text_config.target_lower_case, 1),
    )
    for side, size, lower, index in sides:
        name = run_lib.SOURCE_VOCAB if index == 0 else run_lib.TARGET_VOCAB
        path = run_lib.run_path(run_dir, name)
        if not os.path.exists(path):
            vocab = text_lib.learn_vocabulary(
                [pair[index] for pair in splits["train"].pairs], size, lower
            )
            text_lib.save_vocabulary(vocab, path)
            log(f"{side} vocabulary: {len(vocab)} tokens -> {path}")
    return splits


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
