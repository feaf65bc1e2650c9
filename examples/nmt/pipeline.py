"""Input pipeline of the NMT example: vocabularies and `tf.data` batches.

`prepare` loads and splits the configured data and learns the WordPiece
vocabularies of a run from its training split; `make_dataset` turns a
`Corpus` into batches of `({"source_ids", "target_in"}, target_out)` for
`model.fit`, tokenized with the run's `text.TextProcessor`s.

Guided alignment (`TrainConfig.guided_alignment`): `split_links` gives the
reference links of every pair of each split (read from a Pharaoh file with
one line per pair of the data file, before filtering), `guided_token_links`
turns them into token links (`align.word_positions`), and `make_dataset`
with `links=` yields `({"source_ids", "target_in"}, {"logits":
target_out, "attention": reference (batch, T, S)})`, the reference padded
with -1 (`keras_attention.alignment.GuidedAlignmentLoss`).
"""

import collections
import os

import numpy as np
import tensorflow as tf

from examples.nmt import align as align_lib
from examples.nmt import data as data_lib
from examples.nmt import run as run_lib
from examples.nmt import text as text_lib
from keras_attention import alignment as al


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


def split_links(data_config, path, splits):
    """The reference links of every pair of each split.

    The file has one Pharaoh line per pair of the data (in file order, as
    read, before filtering; sure and possible links both count). A pair
    keeps its line through filtering and splitting: the lines are matched
    to the pairs of the splits by their text, first line first (filtering
    and splitting keep the file order, and equal pairs fall in the same
    split).

    Returns:
        A dict from split name to a list (one per pair) of
        `(line_number, links)`, `links` a set of `(source_word,
        target_word)`.

    Raises:
        ValueError: if the file has another number of lines than the data
            has pairs.
    """
    raw = data_lib.load_corpus(
        list(data_config.paths),
        data_format=data_config.data_format,
        direction=data_config.direction,
        num_dates=data_config.num_dates,
        seed=data_config.seed,
    )
    lines = al.read_pharaoh(path)
    if len(lines) != len(raw):
        raise ValueError(
            f"The guided alignment file must have one line per pair of "
            f"the data: {len(raw)} pairs read ({raw.skipped} malformed "
            f"lines skipped). Received: {len(lines)} lines in {path!r}"
        )
    queues = collections.defaultdict(collections.deque)
    for number, (pair, (sure, possible)) in enumerate(zip(raw.pairs, lines)):
        queues[tuple(pair)].append((number + 1, set(sure) | set(possible)))
    return {
        name: [queues[tuple(pair)].popleft() for pair in split.pairs]
        for name, split in splits.items()
    }


def guided_token_links(corpus, links, source_processor, target_processor):
    """Token links `(source column, target row)` of each pair.

    Args:
        corpus: A `Corpus` split.
        links: Its list of `split_links`.
        source_processor: The run's source `text.TextProcessor`.
        target_processor: The run's target `text.TextProcessor`.

    Returns:
        A list of sets (see `align.token_links`); a pair whose words
        cannot be matched (`align.word_positions` gives `None`) gets no
        links.

    Raises:
        ValueError: for a link out of range, naming the line.
    """
    sources = [s for s, _ in corpus.pairs]
    targets = [t for _, t in corpus.pairs]
    s_counts = align_lib.piece_counts(source_processor, sources)
    t_counts = align_lib.piece_counts(target_processor, targets)
    s_room = align_lib.token_room(source_processor)
    t_room = align_lib.token_room(target_processor)
    out = []
    for i, (number, word_links) in enumerate(links):
        s_pos = align_lib.word_positions(
            sources[i], s_counts[i], source_processor.lower_case, s_room
        )
        t_pos = align_lib.word_positions(
            targets[i], t_counts[i], target_processor.lower_case, t_room
        )
        if s_pos is None or t_pos is None:
            out.append(set())
            continue
        try:
            out.append(align_lib.token_links(word_links, s_pos, t_pos))
        except ValueError as e:
            raise ValueError(f"{e} (guided alignment line {number})") from e
    return out


def _flat_links(links):
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


def padded_widths(bucket_boundaries, max_tokens):
    """The padded lengths of `make_dataset(fixed_shapes=True)`: the longest
    sentence of each length bucket (`boundary - 1`, for the boundaries
    below `max_tokens`), then `max_tokens`, the longest any sentence is."""
    widths = {b - 1 for b in bucket_boundaries or () if 1 < b <= max_tokens}
    return sorted(widths | {max_tokens})


def _pad_columns(ids, width):
    return tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]]])


def make_dataset(
    corpus,
    source_processor,
    target_processor,
    batch_size,
    shuffle=False,
    bucket_boundaries=None,
    seed=0,
    repeat=False,
    links=None,
    fixed_shapes=False,
    lexical=False,
):
    """`tf.data` pipeline of `({"source_ids", "target_in"}, target_out)`.

    Tokenizes in batches of 1024 with the tensorflow-text ops, then either
    buckets by length (`bucket_boundaries`, so a batch holds sentences of
    similar length and little padding) or pads each batch to its longest
    sentence; prefetches.

    With `links` (one set of `(source column, target row)` token links per
    pair, `guided_token_links`), the targets are `{"logits": target_out,
    "attention": reference}`: the dense `(T, S)` reference of each pair
    (1 at each link), padded with -1.

    With `lexical` (the lexical alignment head), the targets are
    `{"logits": target_out, "lexical": target_out}` (the head's loss masks
    by the same ids).

    With `fixed_shapes`, every batch is padded to the longest length its
    bucket can hold (`padded_widths`), not to its own longest sentence:
    the batches then come in one shape per bucket (two where the last
    batch of a bucket is short), so that an XLA-compiled train step
    (`--jit-compile`) compiles a handful of times instead of once per new
    batch shape.
    """
    sources = [s for s, _ in corpus.pairs]
    targets = [t for _, t in corpus.pairs]
    ds = tf.data.Dataset.from_tensor_slices(
        (
            tf.constant(sources, tf.string),
            tf.constant(targets, tf.string),
            tf.range(len(sources), dtype=tf.int64),
        )
    )
    if shuffle:
        ds = ds.shuffle(len(sources), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()

    def tokenize(s, t, index):
        s, t = source_processor.tokenize(s), target_processor.tokenize(t)
        return (
            s.to_tensor(), s.row_lengths(), t.to_tensor(), t.row_lengths(),
            index,
        )

    ds = ds.batch(1024).map(
        tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    # Back to one unpadded example per element.
    ds = ds.unbatch().map(lambda s, ns, t, nt, i: (s[:ns], t[:nt], i))
    if links is None:
        ds = ds.map(lambda s, t, i: (s, t))
        padding = None
    else:
        flat, splits = _flat_links(links)
        flat, splits = tf.constant(flat), tf.constant(splits)

        def reference(s, t, i):
            pair = flat[splits[i] : splits[i + 1]]
            shape = tf.stack([tf.shape(t)[0] - 1, tf.shape(s)[0]])
            matrix = tf.scatter_nd(
                pair, tf.ones([tf.shape(pair)[0]], tf.float32), shape
            )
            return s, t, tf.minimum(matrix, 1.0)

        ds = ds.map(reference, num_parallel_calls=tf.data.AUTOTUNE)
        zero = tf.constant(0, tf.int64)
        padding = (zero, zero, tf.constant(-1.0, tf.float32))
    if bucket_boundaries:
        ds = ds.bucket_by_sequence_length(
            lambda s, t, *_: tf.maximum(tf.shape(s)[0], tf.shape(t)[0]),
            bucket_boundaries=list(bucket_boundaries),
            bucket_batch_sizes=[batch_size] * (len(bucket_boundaries) + 1),
            padding_values=padding,
        )
    else:
        ds = ds.padded_batch(batch_size, padding_values=padding)

    def pad_to_width(source, target, *reference):
        # One bucket's sentences are all shorter than its boundary: the
        # first width that holds the batch's longest is the bucket's.
        longest = tf.maximum(tf.shape(source)[1], tf.shape(target)[1])
        width = widths[tf.searchsorted(widths, [longest])[0]]
        source = _pad_columns(source, width)
        target = _pad_columns(target, width)
        if not reference:
            return source, target
        matrix = reference[0]
        matrix = tf.pad(
            matrix,
            [[0, 0], [0, width - 1 - tf.shape(matrix)[1]],
             [0, width - tf.shape(matrix)[2]]],
            constant_values=-1.0,
        )
        return source, target, matrix

    if fixed_shapes:
        widths = tf.constant(
            padded_widths(
                bucket_boundaries,
                max(source_processor.max_tokens, target_processor.max_tokens),
            ),
            tf.int32,
        )
        ds = ds.map(pad_to_width)

    def to_inputs(source, target, *reference):
        source = tf.cast(source, tf.int32)
        target = tf.cast(target, tf.int32)
        inputs = {"source_ids": source, "target_in": target[:, :-1]}
        if lexical:
            return inputs, {"logits": target[:, 1:], "lexical": target[:, 1:]}
        if not reference:
            return inputs, target[:, 1:]
        return inputs, {"logits": target[:, 1:], "attention": reference[0]}

    return ds.map(to_inputs).prefetch(tf.data.AUTOTUNE)
