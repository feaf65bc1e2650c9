"""A distortion prior: word pairs near the diagonal are likelier links.

Translations of related languages keep most words near the same relative
position. fast_align (Dyer et al., 2013) writes that as a prior over the
source position of target word `i` of `m`:

    p(j | i, m, n) ∝ exp(-tension * |i / m - j / n|)

(positions from 1, `n` source words), flat at `tension=0` and sharper
toward the diagonal as it grows (fast_align starts at 4 and fits it to
its links; `estimate_tension` fits it to any links). Multiplied into
a row of attention and renormalized, it keeps the attention's choice
between neighbouring words and damps links that jump across the sentence,
such as a function word at the end of one sentence linked to the first
word of the other.

References:
- [Dyer et al., 2013](https://aclanthology.org/N13-1073/), "A Simple,
  Fast, and Effective Reparameterization of IBM Model 2".
"""

import collections
from typing import Sequence

import numpy as np

from keras_attention.alignment.links import normalize_rows
from keras_attention.checks import check_corpus
from keras_attention.checks import check_float
from keras_attention.checks import check_positive_int
from keras_attention.checks import check_weight_matrix
from keras_attention.typing import ArrayLike


def diagonal_prior(
    target_words: int, source_words: int, tension: float = 4.0
) -> np.ndarray:
    """fast_align's diagonal prior, unnormalized.

    Args:
        target_words: The number of target words `m`, >= 1.
        source_words: The number of source words `n`, >= 1.
        tension: How sharply the prior falls off the diagonal, a finite
            number >= 0 (0: flat). Defaults to `4.0`, fast_align's initial
            value.

    Returns:
        A `(target_words, source_words)` `float64` matrix, entry `[i, j]`
        `exp(-tension * |(i + 1) / m - (j + 1) / n|)`, in `(0, 1]`.

    Raises:
        ValueError: if a length is not a positive integer or `tension` is
            not a finite number >= 0.

    Example:

    >>> diagonal_prior(2, 2, tension=1.0).round(3).tolist()
    [[1.0, 0.607], [0.607, 1.0]]
    """
    target_words = check_positive_int("target_words", target_words)
    source_words = check_positive_int("source_words", source_words)
    tension = check_float("tension", tension, low=0.0)
    rows = np.arange(1, target_words + 1, dtype=np.float64) / target_words
    cols = np.arange(1, source_words + 1, dtype=np.float64) / source_words
    return np.exp(-tension * np.abs(rows[:, None] - cols[None, :]))


def favor_diagonal(attention: ArrayLike, tension: float = 4.0) -> np.ndarray:
    """The attention times `diagonal_prior`, renormalized per target word.

    Args:
        attention: `(target_words, source_words)` word attention, weights
            >= 0 (each row a distribution over the source words).
        tension: As `diagonal_prior`. Defaults to `4.0`.

    Returns:
        A `float64` matrix of `attention`'s shape whose rows sum to 1 (a
        row of zeros stays zeros): still distributions, as
        `agreement_links` needs.

    Raises:
        ValueError: if `tension` is not a finite number >= 0, or the
            matrix is not 2-D or holds a NaN, an infinity or a negative
            weight.

    Example:

    >>> favor_diagonal([[0.5, 0.5], [0.5, 0.5]], tension=1.0).round(3)[0]
    array([0.622, 0.378])
    """
    tension = check_float("tension", tension, low=0.0)
    attention = check_weight_matrix("attention", attention)
    if attention.size == 0:  # no word on one side: nothing to favour
        return attention
    return normalize_rows(
        attention * diagonal_prior(*attention.shape, tension=tension)
    )


def estimate_tension(
    links: Sequence,
    source_lengths: Sequence[int],
    target_lengths: Sequence[int],
    max_tension: float = 100.0,
) -> float:
    """The tension under which `links` are likeliest (maximum likelihood).

    Each link `(j, i)` (source word `j`, target word `i`, from 0) of a pair
    of `n` source and `m` target words counts as a draw of `j` from
    `diagonal_prior(m, n, tension)[i]` normalized over the source words;
    the log-likelihood is concave in the tension, and its maximum is found
    by bisection on its derivative (the links' mean distance from the
    diagonal against the prior's). Fit it to a first pass's links (the
    attention's own, as fast_align fits its own) to choose
    `favor_diagonal`'s tension for a language pair.

    Args:
        links: One set of `(source_word, target_word)` links per pair.
        source_lengths: The number of source words of each pair.
        target_lengths: The number of target words of each pair.
        max_tension: The largest tension returned, a finite number > 0.
            Defaults to `100.0`.

    Returns:
        A float in `[0, max_tension]`: `0` where the links lie no closer
        to the diagonal than chance, `max_tension` where all of them lie
        as close as they can.

    Raises:
        ValueError: if the three sequences differ in length, a length is
            not a positive integer, a link lies outside its pair, there are
            no links, or `max_tension` is not a finite number > 0.

    Example:

    >>> round(estimate_tension([{(0, 0), (1, 1)}] * 10, [2] * 10, [2] * 10,
    ...                        max_tension=50.0), 1)
    50.0
    """
    corpus = check_corpus("links", links)
    max_tension = check_float(
        "max_tension", max_tension, low=0.0, low_open=True
    )
    lengths = []
    for name, values in (("source_lengths", source_lengths),
                         ("target_lengths", target_lengths)):
        values = list(values)
        if len(values) != len(corpus):
            raise ValueError(
                f"`{name}` must hold one length per pair of `links` "
                f"({len(corpus)}). Received: {len(values)} lengths"
            )
        lengths.append([check_positive_int(name, v) for v in values])
    # Links grouped by (m, n, i): the prior's row is the same for all.
    counts = collections.Counter()
    for pair, (links_, n, m) in enumerate(zip(corpus, *lengths)):
        for j, i in links_:
            if j >= n or i >= m:
                raise ValueError(
                    f"`links` of pair {pair} must lie inside its {n} source "
                    f"and {m} target words. Received: link ({j}, {i})"
                )
            counts[(m, n, i, j)] += 1
    if not counts:
        raise ValueError("`links` holds no link: nothing to fit the tension to.")
    rows = collections.defaultdict(list)  # (m, n, i) -> [(j, count)]
    for (m, n, i, j), count in counts.items():
        rows[(m, n, i)].append((j, count))
    distances, weights, observed = [], [], 0.0
    for (m, n, i), cells in rows.items():
        row = np.abs((i + 1) / m - np.arange(1, n + 1) / n)
        total = sum(count for _, count in cells)
        distances.append(row)
        weights.append(total)
        observed += sum(count * row[j] for j, count in cells)
    observed /= sum(weights)

    def expected(tension: float) -> float:
        # The prior's mean distance, link-weighted over the rows.
        mean = 0.0
        for row, weight in zip(distances, weights):
            p = np.exp(-tension * (row - row.min()))
            mean += weight * float(p @ row) / float(p.sum())
        return mean / sum(weights)

    # d/dtension of the log-likelihood is expected(tension) - observed,
    # decreasing in the tension.
    if expected(0.0) <= observed:
        return 0.0
    if expected(max_tension) >= observed:
        return max_tension
    low, high = 0.0, max_tension
    for _ in range(60):
        middle = 0.5 * (low + high)
        if expected(middle) > observed:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)
