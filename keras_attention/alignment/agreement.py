"""Soft symmetrization: the links both directions' attention agree on.

`symmetrize` combines the *hard* links of the two directions. Here the
two directions' word attention is combined before any link is taken:
with `forward` the `(target_words, source_words)` attention of the
source-to-target model (each row a distribution over the source words)
and `reverse` the `(source_words, target_words)` attention of the
target-to-source model (each row a distribution over the target words),

    agreement[t, s] = sqrt(forward[t, s] * reverse[s, t])

the geometric mean of the two probabilities that `s` and `t` translate
each other, and the links are the word pairs where it reaches a
threshold. A pair that one direction gives all its mass and the other
none gets no link; words with no counterpart in the other sentence get
none. This is the test-time half of alignment by agreement (Liang et al.,
2006) and the extraction of Mask-Align (Chen et al., 2021).

References:
- [Liang et al., 2006](https://aclanthology.org/N06-1014/), "Alignment
  by Agreement".
- [Chen et al., 2021](https://aclanthology.org/2021.acl-long.369/),
  "Mask-Align: Self-Supervised Neural Word Alignment".
"""

import numpy as np

from keras_attention.checks import check_float
from keras_attention.checks import check_weight_matrix
from keras_attention.typing import ArrayLike

# The name this symmetrization goes by where the methods of `symmetrize`
# (on hard links) are also offered (`Translator.align`, the `align`
# commands).
AGREEMENT = "agreement"


def agreement_matrix(forward: ArrayLike, reverse: ArrayLike) -> np.ndarray:
    """`sqrt(forward * reverse.T)`: the two directions' agreement.

    Args:
        forward: `(target_words, source_words)` attention of the
            source-to-target direction, weights >= 0.
        reverse: `(source_words, target_words)` attention of the
            target-to-source direction (as that model gives it, its own
            target words first).

    Returns:
        A `(target_words, source_words)` `float64` matrix.

    Raises:
        ValueError: if a matrix is not 2-D, holds a NaN, an infinity or a
            negative weight, or `reverse.T` has not the shape of `forward`.
    """
    forward = check_weight_matrix("forward", forward)
    reverse = check_weight_matrix("reverse", reverse)
    if reverse.shape[::-1] != forward.shape:
        raise ValueError(
            "`reverse` must be the (source_words, target_words) attention "
            "of the pair whose (target_words, source_words) attention is "
            f"`forward`: shape {forward.shape[::-1]}. Received: forward of "
            f"shape {forward.shape}, reverse of shape {reverse.shape}"
        )
    return np.sqrt(forward * reverse.T)


def agreement_links(
    forward: ArrayLike, reverse: ArrayLike, threshold: float = 0.3
) -> set:
    """The links where the two directions' attention agree.

    Every `(s, t)` with `sqrt(forward[t, s] * reverse[s, t]) >= threshold`
    (`agreement_matrix`). With rows that are distributions, a link needs
    a geometric mean of at least `threshold` in both directions, so a
    word gets at most `1 / threshold` links in each.

    Args:
        forward: `(target_words, source_words)` attention of the
            source-to-target direction (e.g. `word_attention`, or
            `reweight_by_prior` of it).
        reverse: `(source_words, target_words)` attention of the
            target-to-source direction.
        threshold: A number in `(0, 1]`. Defaults to `0.3`.

    Returns:
        A set of `(source_word, target_word)` links.

    Raises:
        ValueError: as `agreement_matrix`, or if `threshold` is not in
            `(0, 1]`.

    Example:

    >>> forward = [[0.9, 0.1], [0.5, 0.5]]   # 2 target x 2 source words
    >>> reverse = [[0.9, 0.1], [0.0, 1.0]]   # 2 source x 2 target words
    >>> sorted(agreement_links(forward, reverse, 0.3))
    [(0, 0), (1, 1)]
    """
    threshold = check_float(
        "threshold", threshold, low=0.0, high=1.0, low_open=True
    )
    matrix = agreement_matrix(forward, reverse)
    targets, sources = np.nonzero(matrix >= threshold)
    return {(int(s), int(t)) for t, s in zip(targets, sources)}
