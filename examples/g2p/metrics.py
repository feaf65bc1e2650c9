"""G2P metrics: word error rate and phone error rate.

The published convention (Bisani & Ney 2008; Novak et al. 2016;
Toshniwal & Livescu 2016): a word is right if the hypothesis equals any of
its reference pronunciations; the phone error rate is the edit distance to
the closest reference divided by that reference's length, summed over the
corpus (total edits / total reference phones).
"""

from rapidfuzz.distance import Levenshtein


def closest_reference(hypothesis, references):
    """`(edits, reference)` of the reference closest to `hypothesis`.

    Ties go to the shorter reference, then to the first given, so the
    phone error rate never depends on the order of equal references.
    """
    if not references:
        raise ValueError("`references` must hold at least one pronunciation.")
    best = None
    for ref in references:
        edits = Levenshtein.distance(list(hypothesis), list(ref))
        key = (edits, len(ref))
        if best is None or key < best[0]:
            best = (key, ref)
    return best[0][0], best[1]


def g2p_scores(hypotheses, references):
    """Corpus WER and PER, in percent.

    Args:
        hypotheses: one pronunciation (a sequence of phones) per word.
        references: for each word, a list of its reference pronunciations.

    Returns:
        A dict with `"wer"`, `"per"` (percent), `"words"`, `"word_errors"`,
        `"phone_edits"` and `"reference_phones"`.

    Raises:
        ValueError: if the two lists differ in length or are empty.
    """
    if len(hypotheses) != len(references):
        raise ValueError(
            "`hypotheses` and `references` must have the same length. "
            f"Received: {len(hypotheses)} and {len(references)}"
        )
    if not hypotheses:
        raise ValueError("`hypotheses` must not be empty.")
    word_errors = edits_total = phones_total = 0
    for hyp, refs in zip(hypotheses, references):
        hyp = tuple(hyp)
        edits, ref = closest_reference(hyp, refs)
        word_errors += edits != 0
        edits_total += edits
        phones_total += len(ref)
    return {
        "wer": 100.0 * word_errors / len(hypotheses),
        "per": 100.0 * edits_total / max(phones_total, 1),
        "words": len(hypotheses),
        "word_errors": word_errors,
        "phone_edits": edits_total,
        "reference_phones": phones_total,
    }
