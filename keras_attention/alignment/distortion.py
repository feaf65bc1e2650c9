"""A distortion prior: word pairs near the diagonal are likelier links.

Translations of related languages keep most words near the same relative
position. fast_align (Dyer et al., 2013) writes that as a prior over the
source position of target word `i` of `m`:

    p(j | i, m, n) ∝ exp(-tension * |i / m - j / n|)

(positions from 1, `n` source words), flat at `tension=0` and sharper
toward the diagonal as it grows (fast_align starts at 4). Multiplied into
a row of attention and renormalized, it keeps the attention's choice
between neighbouring words and damps links that jump across the sentence,
such as a function word at the end of one sentence linked to the first
word of the other.

References:
- [Dyer et al., 2013](https://aclanthology.org/N13-1073/), "A Simple,
  Fast, and Effective Reparameterization of IBM Model 2".
"""

import numpy as np

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
    weighted = attention * diagonal_prior(*attention.shape, tension=tension)
    total = weighted.sum(axis=1, keepdims=True)
    return np.divide(
        weighted, total, out=np.zeros_like(weighted), where=total > 0
    )
