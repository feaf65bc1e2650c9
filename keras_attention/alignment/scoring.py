"""Alignment error rate, precision and recall (Och & Ney, 2003).

With `A` the hypothesis links, `S` the sure and `P` the possible gold links
(`S ⊆ P`), counted over the whole corpus (sums of the per-sentence set
sizes, not means of per-sentence rates):

- precision `= |A ∩ P| / |A|`
- recall `= |A ∩ S| / |S|`
- AER `= 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)`

Reference:
- [Och & Ney, 2003](https://aclanthology.org/J03-1002/), "A systematic
  comparison of various statistical alignment models", section 5.
"""

from typing import Iterable, Optional

from keras_attention.checks import check_corpus


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else float("nan")


def alignment_scores(
    hypotheses: Iterable,
    sure: Iterable,
    possible: Optional[Iterable] = None,
) -> dict:
    """Corpus-level AER, precision and recall.

    Args:
        hypotheses: Per sentence, an iterable of `(source, target)` links.
        sure: Per sentence, the sure gold links `S`.
        possible: Optional, per sentence, the possible gold links `P`;
            each is completed with the sure links, so `S ⊆ P` holds even
            if the file lists only the possible-only links. Defaults to
            `P = S`.

    Returns:
        A dict with `"aer"`, `"precision"`, `"recall"` (floats in [0, 1];
        `nan` when a denominator is 0) and the counts `"hypothesis"`
        (`|A|`), `"sure"` (`|S|`), `"possible"` (`|P|`), `"hits_sure"`
        (`|A ∩ S|`), `"hits_possible"` (`|A ∩ P|`), `"sentences"`.

    Raises:
        ValueError: if the corpora do not have the same number of
            sentences, if one is a single alignment (a set of links) rather
            than a list with one per sentence, or holds the `(sure,
            possible)` pairs of `read_pharaoh`, strings (`"0-0"`) or links
            that are not pairs of non-negative integers.

    Example:

    >>> scores = alignment_scores([{(0, 0), (1, 2)}], [{(0, 0), (1, 1)}],
    ...                           [{(1, 2)}])
    >>> round(scores["aer"], 4), scores["precision"], scores["recall"]
    (0.25, 1.0, 0.5)
    """
    hypotheses = check_corpus("hypotheses", hypotheses)
    sure = check_corpus("sure", sure)
    possible = (
        [set()] * len(sure) if possible is None
        else check_corpus("possible", possible)
    )
    if not len(hypotheses) == len(sure) == len(possible):
        raise ValueError(
            "`hypotheses`, `sure` and `possible` must have one alignment "
            f"per sentence each. Received: {len(hypotheses)}, {len(sure)} "
            f"and {len(possible)} sentences"
        )
    n_a = n_s = n_p = hits_s = hits_p = 0
    for a, s, p in zip(hypotheses, sure, possible):
        p = p | s
        n_a += len(a)
        n_s += len(s)
        n_p += len(p)
        hits_s += len(a & s)
        hits_p += len(a & p)
    return {
        "aer": 1.0 - _ratio(hits_s + hits_p, n_a + n_s),
        "precision": _ratio(hits_p, n_a),
        "recall": _ratio(hits_s, n_s),
        "hypothesis": n_a,
        "sure": n_s,
        "possible": n_p,
        "hits_sure": hits_s,
        "hits_possible": hits_p,
        "sentences": len(sure),
    }
