"""Alignment accuracy of the NMT example on the dates data.

- Sub-words are grouped into words by the library
  (`keras_attention.alignment.word_groups`: a `##` piece continues the word
  before it; `[PAD]`, `[START]`, `[END]` belong to no word, `[UNK]` is a
  word); the attention of a target word on a source word is the mean over
  the target word's pieces of the summed weights on the source word's
  pieces (`word_attention`).
- Alignment accuracy (dates data, whose true alignments are known): the
  share of aligned target words whose highest attention falls on a true
  source word; target words with no counterpart (punctuation) are not
  counted. `alignment_accuracy_by_group` gives the same per group of words
  (`date_groups`: per field, weekday, day, month, year, and per month).
"""

import numpy as np

from examples.nmt.corpus import pretokenize
from keras_attention import alignment as al


def token_str(token):
    """A token (bytes or str) as `str`."""
    return token.decode("utf-8") if isinstance(token, bytes) else str(token)


# The library's rule (`keras_attention.alignment.subwords`): `##` pieces
# continue a word, `[PAD]`, `[START]`, `[END]` and `""` belong to no word,
# `[UNK]` is a word (it stands for a word of the text).
word_groups = al.word_groups
word_attention = al.word_attention


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
