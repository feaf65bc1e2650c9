"""Hard links from soft (word-level) attention.

A link is a `(source, target)` pair of 0-based word indices, source first
as in the Pharaoh format; an alignment is a `set` of links.
"""

from typing import Iterable, Optional, Sequence

import numpy as np

from keras_attention.alignment import subwords
from keras_attention.checks import check_choice
from keras_attention.checks import check_float
from keras_attention.checks import check_links
from keras_attention.typing import ArrayLike

METHODS = ("argmax", "threshold")


def hard_links(
    matrix: ArrayLike,
    method: str = "argmax",
    threshold: float = 0.5,
) -> set:
    """Hard links of a word-level attention matrix.

    - `"argmax"`: one link per target word, to its highest-weighted source
      word (`argmax_j A[i, j]`); a row with no positive weight gives no
      link.
    - `"threshold"`: every link whose weight is at least `threshold`
      (`A[i, j] >= threshold`, and positive).

    Args:
        matrix: `(target_words, source_words)` attention, e.g. from
            `word_attention` (special tokens have no column there, so no
            link can point at one).
        method: `"argmax"` or `"threshold"`. Defaults to `"argmax"`.
        threshold: The minimum weight of a link with
            `method="threshold"`. Defaults to `0.5`.

    Returns:
        A set of `(source_word, target_word)` pairs.

    Raises:
        ValueError: if `matrix` is not a 2-D numeric array, `method` is
            unknown, or `threshold` is not a finite number. NaN weights
            are no links.

    Example:

    >>> sorted(hard_links([[0.9, 0.1], [0.3, 0.7]]))
    [(0, 0), (1, 1)]
    >>> sorted(hard_links([[0.5, 0.5], [0.1, 0.2]], "threshold", 0.4))
    [(0, 0), (1, 0)]
    """
    try:
        matrix = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "`matrix` must be a 2-D (target_words, source_words) array of "
            f"weights. Received: matrix={matrix!r:.80}"
        ) from None
    if matrix.ndim != 2:
        raise ValueError(
            "`matrix` must be a 2-D (target_words, source_words) array. "
            f"Received: matrix.shape={matrix.shape}"
        )
    check_choice("method", method, METHODS)
    threshold = check_float("threshold", threshold)
    # A NaN weight is no link (and takes no argmax from a real one).
    matrix = np.where(np.isnan(matrix), 0.0, matrix)
    if method == "argmax":
        links = set()
        if matrix.shape[1] == 0:
            return links
        best = np.argmax(matrix, axis=1)
        for t, s in enumerate(best):
            if matrix[t, s] > 0:
                links.add((int(s), t))
        return links
    targets, sources = np.nonzero((matrix >= threshold) & (matrix > 0))
    return {(int(s), int(t)) for t, s in zip(targets, sources)}


def attention_links(
    weights: ArrayLike,
    source_tokens: Sequence,
    target_tokens: Sequence,
    method: str = "argmax",
    threshold: float = 0.5,
    scheme: str = subwords.WORDPIECE,
    special_tokens: Optional[Iterable[str]] = None,
) -> set:
    """Word links of one sentence pair from its sub-word attention.

    `hard_links(word_attention(weights, ...), method, threshold)`.

    Args:
        weights: `(T, S)` attention over tokens.
        source_tokens: The source token strings.
        target_tokens: The target token strings.
        method: `"argmax"` or `"threshold"`. Defaults to `"argmax"`.
        threshold: See `hard_links`. Defaults to `0.5`.
        scheme: `"wordpiece"` or `"sentencepiece"`. Defaults to
            `"wordpiece"`.
        special_tokens: Tokens that belong to no word. Defaults to
            `subwords.DEFAULT_SPECIAL_TOKENS`.

    Returns:
        A set of `(source_word, target_word)` pairs.
    """
    matrix = subwords.word_attention(
        weights, source_tokens, target_tokens, scheme, special_tokens
    )
    return hard_links(matrix, method, threshold)


def transpose_links(links: Iterable) -> set:
    """Swaps source and target: the links of the reverse direction.

    A target-to-source model gives links `(target_word, source_word)`
    (its own source first); `transpose_links` puts them in the
    `(source_word, target_word)` orientation of the forward model, as
    `symmetrize` expects.
    """
    return {(t, s) for s, t in check_links("links", links)}


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix` with each row divided by its sum; a row summing to 0
    stays zeros. Keeps the array's dtype (a float array)."""
    total = matrix.sum(axis=1, keepdims=True)
    return np.divide(matrix, total, out=np.zeros_like(matrix), where=total > 0)
