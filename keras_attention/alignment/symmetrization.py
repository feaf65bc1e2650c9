"""Symmetrization of two alignment directions (Koehn et al., 2003).

The heuristics of the Moses `symal` tool, followed step by step:

- `"intersection"`: links found in both directions (high precision).
- `"union"`: links found in either direction (high recall).
- `"grow"` / `"grow-diag"`: start from the intersection; repeatedly add a
  union link that neighbours a current link (horizontally or vertically;
  with `-diag` also diagonally) and touches a word not yet aligned.
- `"grow-diag-final"`: then add any remaining union link that touches a
  word not yet aligned (first the forward-only links, then the
  reverse-only links, each in (target, source) order).
- `"grow-diag-final-and"`: as `-final`, but only links whose two words are
  both not yet aligned.

Orientation: both directions are given as `(source, target)` links.
`forward` comes from the source-to-target model (a target word picks its
source words: attention of a source-to-target translation model, or
eflomal's forward links); in `symal` it is the "inverse" alignment
`b[target] = source`. `reverse` comes from the target-to-source model,
turned into `(source, target)` links with `transpose_links`; in `symal`
it is the "direct" alignment `a[source] = target`. The orientation matters
only for `-final` and `-final-and`, which try forward-only links first.

`symal` takes one link per word in each direction; here a direction may
be any set of links (e.g. from `hard_links(..., "threshold")`), and union
membership, coverage and the scan order are those of `symal`.

Reference:
- [Koehn et al., 2003](https://aclanthology.org/N03-1017/), "Statistical
  phrase-based translation"; Moses `symal/symal.cpp` (`printgrow`).
"""

import bisect
from typing import Iterable

from keras_attention.checks import check_choice
from keras_attention.checks import check_corpus
from keras_attention.checks import check_links

METHODS = (
    "intersection",
    "union",
    "grow",
    "grow-diag",
    "grow-diag-final",
    "grow-diag-final-and",
)
# (target, source) offsets, in symal's order: first the four
# horizontal/vertical neighbours, then the four diagonal ones.
_NEIGHBORS = ((-1, 0), (0, -1), (1, 0), (0, 1))
_DIAGONAL_NEIGHBORS = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def symmetrize(
    forward: Iterable,
    reverse: Iterable,
    method: str = "grow-diag-final-and",
) -> set:
    """Symmetrizes two alignment directions of one sentence pair.

    Args:
        forward: `(source, target)` links of the source-to-target
            direction.
        reverse: `(source, target)` links of the target-to-source
            direction (already transposed to source-first).
        method: One of `"intersection"`, `"union"`, `"grow"`,
            `"grow-diag"`, `"grow-diag-final"`, `"grow-diag-final-and"`.
            Defaults to `"grow-diag-final-and"`.

    Returns:
        A set of `(source, target)` links.

    Raises:
        ValueError: if `method` is unknown, or a link is not a pair of
            non-negative integers (`(1.7, 0)`, `"0-0"`).

    Example:

    >>> sorted(symmetrize({(0, 0), (1, 1)}, {(0, 0), (2, 1)}, "union"))
    [(0, 0), (1, 1), (2, 1)]
    """
    check_choice("method", method, METHODS)
    # symal keeps points as (target, source); so do we, for its scan order.
    fwd = {(t, s) for s, t in check_links("forward", forward)}
    rev = {(t, s) for s, t in check_links("reverse", reverse)}
    if method == "intersection":
        return {(s, t) for t, s in fwd & rev}
    if method == "union":
        return {(s, t) for t, s in fwd | rev}
    union = fwd | rev
    current = sorted(fwd & rev)
    in_current = set(current)
    covered_t = {t for t, _ in current}
    covered_s = {s for _, s in current}
    neighbors = _NEIGHBORS
    if method != "grow":
        neighbors = _NEIGHBORS + _DIAGONAL_NEIGHBORS

    added = True
    while added:
        added = False
        # A scan of a std::set that grows while it is scanned: points
        # inserted after the current one are visited in the same pass,
        # points inserted before it in the next pass.
        i = 0
        while i < len(current):
            t0, s0 = current[i]
            for dt, ds in neighbors:
                point = (t0 + dt, s0 + ds)
                if point not in union:
                    continue
                if point[0] in covered_t and point[1] in covered_s:
                    continue
                bisect.insort(current, point)
                in_current.add(point)
                covered_t.add(point[0])
                covered_s.add(point[1])
                added = True
            i = bisect.bisect_right(current, (t0, s0))

    if method in ("grow-diag-final", "grow-diag-final-and"):
        both = method == "grow-diag-final-and"
        for direction_only in (fwd - rev, rev - fwd):
            for point in sorted(union):
                if point not in direction_only or point in in_current:
                    continue
                t, s = point
                if both:
                    ok = t not in covered_t and s not in covered_s
                else:
                    ok = not (t in covered_t and s in covered_s)
                if ok:
                    in_current.add(point)
                    covered_t.add(t)
                    covered_s.add(s)
    return {(s, t) for t, s in in_current}


def symmetrize_corpus(
    forward: Iterable,
    reverse: Iterable,
    method: str = "grow-diag-final-and",
) -> list:
    """`symmetrize` of every sentence pair of a corpus.

    Args:
        forward: Iterable of per-sentence forward alignments.
        reverse: Iterable of per-sentence reverse alignments, in the same
            order and the `(source, target)` orientation.
        method: See `symmetrize`.

    Returns:
        A list of sets of `(source, target)` links.

    Raises:
        ValueError: if the two corpora have different lengths, or are
            not lists of alignments (see `alignment_scores`).
    """
    check_choice("method", method, METHODS)
    forward = check_corpus("forward", forward)
    reverse = check_corpus("reverse", reverse)
    if len(forward) != len(reverse):
        raise ValueError(
            "`forward` and `reverse` must have one alignment per sentence "
            f"each. Received: {len(forward)} and {len(reverse)} sentences"
        )
    return [symmetrize(f, r, method) for f, r in zip(forward, reverse)]
