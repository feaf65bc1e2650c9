"""Attention as word alignment in the NMT example.

- Sub-words are grouped into words (a `##` piece continues the word before
  it; reserved tokens belong to no word); the attention of a target word
  on a source word is the mean over the target word's pieces of the summed
  weights on the source word's pieces (`word_attention`).
- Alignment accuracy (dates data, whose true alignments are known): the
  share of aligned target words whose highest attention falls on a true
  source word; target words with no counterpart (punctuation) are not
  counted. `alignment_accuracy_by_group` gives the same per group of words
  (`date_groups`: per field, weekday, day, month, year, and per month).
- `teacher_forced_attention`: the attention of a trained model fed given
  reference translations.
"""

from typing import List
from typing import Sequence
from typing import Tuple

import keras
import numpy as np

from examples.nmt import text as text_lib
from examples.nmt.corpus import pretokenize
from keras_attention.checks import check_positive_int

_SPECIAL = set(text_lib.RESERVED_TOKENS) | {""}


def token_str(token):
    """A token (bytes or str) as `str`."""
    return token.decode("utf-8") if isinstance(token, bytes) else str(token)


def word_groups(tokens):
    """Groups sub-word tokens into words.

    Args:
        tokens: Sequence of token strings (bytes or str). Reserved tokens
            and `""` padding belong to no word.

    Returns:
        A list with, for each word, the list of its token positions.

    >>> word_groups(["[START]", "vend", "##redi", "20", "[END]", ""])
    [[1, 2], [3]]
    """
    groups = []
    for i, token in enumerate(tokens):
        token = token_str(token)
        if token in _SPECIAL:
            continue
        if token.startswith("##") and groups and groups[-1][-1] == i - 1:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def word_attention(weights, source_tokens, target_tokens):
    """Word-level attention `(target_words, source_words)`.

    Args:
        weights: `(T, S)` attention, row `t` for target token `t`, column
            `s` for source token `s`.
        source_tokens: The `S` source token strings.
        target_tokens: The `T` target token strings.
    """
    weights = np.asarray(weights, dtype=np.float64)
    source_words = word_groups(source_tokens)
    target_words = word_groups(target_tokens)
    out = np.zeros((len(target_words), len(source_words)))
    for i, t_pieces in enumerate(target_words):
        rows = weights[t_pieces]  # (pieces, S)
        for j, s_pieces in enumerate(source_words):
            out[i, j] = rows[:, s_pieces].sum(axis=1).mean()
    return out


def alignment_hits(weights, source_tokens, target_tokens, alignment):
    """Whether each target word's highest attention is on a true source word.

    Args:
        weights: `(T, S)` attention over the tokens.
        source_tokens: The `S` source token strings.
        target_tokens: The `T` target token strings.
        alignment: For each target word, the collection of indices of its
            true source words (empty: the word is not counted).

    Returns:
        A list with, for each target word, `True`/`False` (a hit or not)
        or `None` (not counted); `None` instead of the list when the number
        of target words differs from `len(alignment)` (a wrong
        translation) or the source has no word.
    """
    matrix = word_attention(weights, source_tokens, target_tokens)
    if matrix.shape[0] != len(alignment) or matrix.shape[1] == 0:
        return None
    return [
        (int(np.argmax(row)) in set(truth)) if truth else None
        for row, truth in zip(matrix, alignment)
    ]


def alignment_accuracy(examples):
    """Share of aligned target words whose highest attention is on a true
    source word.

    Args:
        examples: Iterable of `(weights, source_tokens, target_tokens,
            alignment)` (see `alignment_hits`). Examples whose number of
            target words differs from `len(alignment)` (a wrong
            translation) are skipped.

    Returns:
        `(accuracy, counted_words, used_examples)`; accuracy is `nan` when
        no word was counted.
    """
    hits = counted = used = 0
    for weights, source_tokens, target_tokens, alignment in examples:
        found = alignment_hits(weights, source_tokens, target_tokens, alignment)
        if found is None:
            continue
        used += 1
        for hit in found:
            if hit is not None:
                counted += 1
                hits += int(hit)
    accuracy = hits / counted if counted else float("nan")
    return accuracy, counted, used


def alignment_accuracy_by_group(examples):
    """Alignment accuracy of groups of target words (e.g. per date field).

    Args:
        examples: Iterable of `(weights, source_tokens, target_tokens,
            alignment, groups)`: `groups` gives, for each target word, the
            names of the groups it counts in (a word may be in several, or
            in none). Skipped and uncounted words as in
            `alignment_accuracy`.

    Returns:
        A dict, in order of first appearance, from group name to
        `{"accuracy": share of hits, "words": counted words}`.
    """
    hits, counted = {}, {}
    for weights, source, target, alignment, groups in examples:
        found = alignment_hits(weights, source, target, alignment)
        if found is None:
            continue
        for hit, names in zip(found, groups):
            if hit is None:
                continue
            for name in names:
                counted[name] = counted.get(name, 0) + 1
                hits[name] = hits.get(name, 0) + int(hit)
    return {
        name: {"accuracy": hits[name] / count, "words": count}
        for name, count in counted.items()
    }


def date_groups(fields, target):
    """The groups of each target word of a dates pair: its field and, for a
    month, `"month=<name>"` with the month of the reference.

    Args:
        fields: For each word of `corpus.pretokenize(target,
            lower_case=False)`, its field name or `None` (`Corpus.fields`).
        target: The reference target sentence.

    >>> date_groups(["weekday", None, "month", "day", None, "year"],
    ...             "Friday, October 20, 1933")
    [('weekday',), (), ('month', 'month=October'), ('day',), (), ('year',)]
    """
    words = pretokenize(target, lower_case=False)
    groups = []
    for field, word in zip(fields, words):
        if field is None:
            groups.append(())
        elif field == "month":
            groups.append((field, f"month={word}"))
        else:
            groups.append((field,))
    return groups


def teacher_forced_attention(
    seq2seq,
    source_processor,
    target_processor,
    pairs: Sequence[Tuple[str, str]],
    batch_size: int = 256,
) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Attention weights of the model fed the reference targets.

    The model reads each source and the reference target shifted right
    (`[START] y_1 ... y_n`), as in training, and returns the attention of
    every target position: the alignment the model assigns to a given
    translation (not to its own).

    Args:
        seq2seq: A `model.Seq2Seq` (e.g. from `run.load_trained`).
        source_processor: The run's source `text.TextProcessor`.
        target_processor: The run's target `text.TextProcessor`.
        pairs: Sequence of `(source, target)` strings.
        batch_size: Pairs per model call. Defaults to `256`.

    Returns:
        A list of `(weights (T, S), source_ids, target_ids)` numpy triples,
        one per pair, unpadded: `S = len(source_ids)` (with the source
        `[END]` when configured), `T = len(target_ids) - 1`; row `t` is the
        attention used to predict `target_ids[t + 1]` (the token after
        `[START]` first) and sums to 1 over the source tokens.
    """
    import tensorflow as tf

    batch_size = check_positive_int("batch_size", batch_size)
    out = []
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        src = source_processor.tokenize([s for s, _ in chunk])
        tgt = target_processor.tokenize([t for _, t in chunk])
        src_dense = tf.cast(src.to_tensor(), tf.int32)
        tgt_dense = tf.cast(tgt.to_tensor(), tf.int32)
        weights = seq2seq.attention_model(
            {"source_ids": src_dense, "target_in": tgt_dense[:, :-1]},
            training=False,
        )
        weights = keras.ops.convert_to_numpy(weights)
        for j in range(len(chunk)):
            s_ids = src[j].numpy()
            t_ids = tgt[j].numpy()
            out.append(
                (weights[j, : len(t_ids) - 1, : len(s_ids)], s_ids, t_ids)
            )
    return out
