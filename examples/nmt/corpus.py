"""Sentence pairs as plain Python: the `Corpus`, its words and its splits.

- `Corpus`: the pairs, what was skipped reading them and, for the dates
  data, the true word alignments.
- `pretokenize`: the Python mirror of the TensorFlow pre-tokenization of
  `text.py` (normalisation, optional lower-casing, punctuation split); the
  alignments are expressed in its words.
- `filter_corpus`, `subset`, `take`; `split_pairs`: a deterministic
  train/validation/test split (by a hash of the source sentence, so
  duplicated sources never straddle two splits).
- `corpus_rows`, `corpus_from_rows`: a split as the rows of its file in a
  run directory (`keras_attention.training.splits.save_held_out`).
"""

import collections
import dataclasses
import unicodedata

from keras_attention.training.splits import SPLIT_NAMES
from keras_attention.training.splits import check_split_fractions
from keras_attention.training.splits import split_of


# Characters split off as words of their own: Unicode punctuation (P*) and
# symbols (S*). The same rule is applied in TensorFlow (`text.py`) with the
# regular expression `[\p{P}\p{S}]`.
_PUNCT_CATEGORIES = ("P", "S")


@dataclasses.dataclass
class Corpus:
    """Sentence pairs and what was skipped while reading them.

    Attributes:
        pairs: List of `(source, target)` strings.
        skipped: Number of malformed lines skipped.
        reasons: `collections.Counter` of skip reasons.
        alignments: For the dates data, one alignment per pair (see
            `dates.date_pair`); `None` for real corpora.
        languages: For the dates data, the source language of each pair.
        fields: For the dates data, for each pair the field of each target
            word (`"weekday"`, `"day"`, `"month"`, `"year"` or `None`).
        links: With guided alignment, the reference links of each pair
            (`(line_number, {(source_word, target_word)})`, see
            `data.attach_links`), carried with the pair through filtering
            and splitting; else `None`.
    """

    pairs: list
    skipped: int = 0
    reasons: collections.Counter = dataclasses.field(
        default_factory=collections.Counter
    )
    alignments: list = None
    languages: list = None
    fields: list = None
    links: list = None

    def __len__(self):
        return len(self.pairs)


# The optional lists of `Corpus` with one entry per pair.
_PER_PAIR = ("alignments", "languages", "fields", "links")


def normalize(text, lower_case=True):
    """NFKC normalisation and optional lower-casing.

    Whitespace is left as it is: `pretokenize` splits on any run of it.
    """
    text = unicodedata.normalize("NFKC", text)
    if lower_case:
        text = text.lower()
    return text


def _is_punct(char):
    return unicodedata.category(char)[0] in _PUNCT_CATEGORIES


def pretokenize(text, lower_case=True):
    """Splits a sentence into words as `WordPieceTokenizer` does before
    its WordPiece step.

    Normalises (NFKC), lower-cases if asked, splits punctuation and symbols
    off as words of their own and splits on whitespace.

    >>> pretokenize("Freitag, 20. Oktober 1933")
    ['freitag', ',', '20', '.', 'oktober', '1933']
    """
    text = normalize(text, lower_case)
    spaced = "".join(f" {c} " if _is_punct(c) else c for c in text)
    return spaced.split()


# ----------------------------------------------------------------------
# Filtering and splitting.


def filter_corpus(corpus, max_words=None, max_examples=None):
    """Drops pairs longer than `max_words` words, then keeps at most
    `max_examples` pairs (the first ones, so the result is deterministic)."""
    keep = []
    for i, (source, target) in enumerate(corpus.pairs):
        if max_words is not None and (
            len(pretokenize(source)) > max_words
            or len(pretokenize(target, lower_case=False)) > max_words
        ):
            continue
        keep.append(i)
    if max_examples is not None:
        keep = keep[:max_examples]
    return subset(corpus, keep, corpus.skipped, corpus.reasons)


def subset(corpus, indices, skipped=0, reasons=None):
    """The pairs of `corpus` at `indices`, with their alignments, languages,
    fields and links; `skipped` and `reasons` describe the new corpus."""
    indices = list(indices)
    per_pair = {}
    for name in _PER_PAIR:
        values = getattr(corpus, name)
        per_pair[name] = (
            None if values is None else [values[i] for i in indices]
        )
    return Corpus(
        pairs=[corpus.pairs[i] for i in indices],
        skipped=skipped,
        reasons=collections.Counter() if reasons is None else reasons,
        **per_pair,
    )


def take(corpus, count):
    """The first `count` pairs of `corpus` (all of them if fewer)."""
    return subset(corpus, range(min(count, len(corpus))))


def split_pairs(corpus, validation_fraction=0.05, test_fraction=0.05):
    """Deterministic train/validation/test split of a `Corpus`.

    Returns:
        A dict from split name to `Corpus`.
    """
    check_split_fractions(validation_fraction, test_fraction)
    indices = {name: [] for name in SPLIT_NAMES}
    for i, (source, _) in enumerate(corpus.pairs):
        indices[split_of(source, validation_fraction, test_fraction)].append(i)
    return {
        name: subset(corpus, idx, corpus.skipped if name == "train" else 0)
        for name, idx in indices.items()
    }


# ----------------------------------------------------------------------
# The split files of a run directory.

# The field of a target word that has none, in a split file.
NO_FIELD = "-"


def corpus_rows(corpus):
    """The rows of a split's file in a run directory: `(source, target)`
    for each pair or, where the corpus has true alignments (the dates),
    `(source, target, links, fields)`: the alignment as Pharaoh links
    (`s-t`, 0-based indices of the `pretokenize` words of the source and
    of the target, cased), and the field of each target word, separated by
    spaces (`NO_FIELD` for none; the column is empty without fields).
    `corpus_from_rows` reads them back; what evaluation does not use (the
    languages, guided alignment links, skip counts) is not kept."""
    from keras_attention.alignment import format_pharaoh

    if corpus.alignments is None:
        return [tuple(pair) for pair in corpus.pairs]
    fields = corpus.fields or [None] * len(corpus)
    return [
        (
            source,
            target,
            format_pharaoh(
                {(s, t) for t, sources in enumerate(alignment)
                 for s in sources}
            ),
            "" if names is None
            else " ".join(NO_FIELD if f is None else f for f in names),
        )
        for (source, target), alignment, names in zip(
            corpus.pairs, corpus.alignments, fields
        )
    ]


def corpus_from_rows(rows):
    """The `Corpus` of `corpus_rows`' rows (pairs, alignments, fields)."""
    from keras_attention.alignment import parse_pharaoh

    rows = list(rows)
    corpus = Corpus(pairs=[(row[0], row[1]) for row in rows])
    if not rows or len(rows[0]) < 4:
        return corpus
    corpus.alignments, corpus.fields = [], []
    for number, (_, target, links, names) in enumerate(rows, 1):
        names = tuple(None if f == NO_FIELD else f for f in names.split())
        sure, _ = parse_pharaoh(links, where=f"split file row {number}")
        words = len(names) or len(pretokenize(target, lower_case=False))
        corpus.alignments.append([
            tuple(sorted(s for s, t in sure if t == word))
            for word in range(words)
        ])
        corpus.fields.append(names)
    if not any(corpus.fields):
        corpus.fields = None
    return corpus
