"""Longer training pairs joined from shorter ones, their links shifted.

A corpus of short sentences teaches an alignment head (or a guided
attention) that drifts off the diagonal in long sentences. Two to four
pairs of the corpus joined into one (each side joined with a space, the
links of the later parts shifted by the words before them) are long
sentences with the same labels, at new lengths and offsets: appended to
the training pairs of a guided alignment run, they close most of the gap
the long sentences open (the alignment results page).

Plain Python: words are whitespace words, as in `parse_pharaoh` files.
"""

import random
from typing import Iterable, List, Optional, Sequence, Tuple

from keras_attention.checks import check_corpus
from keras_attention.checks import check_int


def join_pairs(pairs: Iterable) -> Tuple[str, str, set]:
    """One sentence pair from several: `(source, target, links)`.

    Args:
        pairs: `(source, target, links)` triples: the sentences as
            whitespace-separated words, the links `(source, target)` word
            indices of that pair.

    Returns:
        The sources joined with a space, the targets joined with a space,
        and every pair's links, each shifted by the source and target
        words of the pairs before it.

    Example:

    >>> source, target, links = join_pairs([
    ...     ("le chat", "the cat", {(0, 0), (1, 1)}),
    ...     ("dort", "sleeps", {(0, 0)})])
    >>> source, target, sorted(links)
    ('le chat dort', 'the cat sleeps', [(0, 0), (1, 1), (2, 2)])
    """
    sources, targets, links = [], [], set()
    for source, target, pair_links in pairs:
        di, dj = len(sources), len(targets)
        links |= {(i + di, j + dj) for i, j in pair_links}
        sources += source.split()
        targets += target.split()
    return " ".join(sources), " ".join(targets), links


def concatenate_pairs(
    sources: Sequence[str],
    targets: Sequence[str],
    links: Sequence,
    count: int,
    parts: int = 2,
    max_parts: Optional[int] = None,
    max_words: int = 60,
    seed: Optional[int] = 0,
) -> Tuple[List[str], List[str], List[set]]:
    """`count` longer pairs, each joined from distinct pairs of a corpus.

    Each new pair joins `k` distinct pairs drawn at random, `k` drawn
    uniformly from `parts..max_parts`, among the pairs with at most
    `max_words // k` words on each side (`join_pairs`): every new pair has
    at most `max_words` words a side. Append them to the training pairs
    of a guided alignment run (`GuidedAlignmentLoss`); the pairs to align
    stay as they are.

    Args:
        sources: The source sentences (whitespace words).
        targets: Their translations, one per source.
        links: One alignment per pair: `(source, target)` word links.
        count: How many pairs to make (0 or more).
        parts: The fewest pairs joined into one (2 or more).
        max_parts: The most pairs joined into one (default: `parts`).
        max_words: The longest side of a new pair, in words.
        seed: Seed of the draws (`None`: not seeded).

    Returns:
        `(sources, targets, links)` of the `count` new pairs.

    Raises:
        ValueError: for sequences of different lengths, a link outside its
            pair's words, a `count` below 0, `parts` below 2, `max_parts`
            below `parts`, or fewer than `k` pairs short enough for `k`
            parts.
        ArgumentTypeError: for a non-integer `count`, `parts`, `max_parts`
            or `max_words`.

    Example:

    >>> src, tgt, lk = concatenate_pairs(
    ...     ["le chat", "il dort"], ["the cat", "he sleeps"],
    ...     [{(0, 0), (1, 1)}, {(0, 0), (1, 1)}], count=1)
    >>> sorted(lk[0])
    [(0, 0), (1, 1), (2, 2), (3, 3)]
    """
    count = check_int("count", count, low=0)
    parts = check_int("parts", parts, low=2)
    max_parts = check_int("max_parts", max_parts, low=parts, allow_none=True)
    max_words = check_int("max_words", max_words, low=1)
    links = check_corpus("links", links)
    sources, targets = list(sources), list(targets)
    if not len(sources) == len(targets) == len(links):
        raise ValueError(
            "`sources`, `targets` and `links` must have one entry per pair. "
            f"Received: {len(sources)} sources, {len(targets)} targets and "
            f"{len(links)} alignments"
        )
    words = []
    for n, (source, target, pair_links) in enumerate(
        zip(sources, targets, links)
    ):
        m, t = len(source.split()), len(target.split())
        bad = [(i, j) for i, j in pair_links if i >= m or j >= t]
        if bad:
            raise ValueError(
                f"`links[{n}]` holds {sorted(bad)[0]}, outside its pair of "
                f"{m} source and {t} target words. Received: "
                f"sources[{n}]={source!r:.80}, targets[{n}]={target!r:.80}"
            )
        words.append(max(m, t))
    sizes = range(parts, (max_parts or parts) + 1)
    fits = {}
    for k in sizes:
        fits[k] = [n for n, w in enumerate(words) if w <= max_words // k]
        if count and len(fits[k]) < k:
            raise ValueError(
                f"Fewer than {k} pairs have at most {max_words // k} words a "
                f"side, so none can be joined {k} at a time under "
                f"max_words={max_words}. Received: {len(fits[k])} such pairs"
            )
    rng = random.Random(seed)
    out_sources, out_targets, out_links = [], [], []
    for _ in range(count):
        k = rng.choice(sizes)
        chosen = rng.sample(fits[k], k)
        source, target, joined = join_pairs(
            (sources[n], targets[n], links[n]) for n in chosen
        )
        out_sources.append(source)
        out_targets.append(target)
        out_links.append(joined)
    return out_sources, out_targets, out_links
