"""Parallel data for the NMT example: embedded dates and real corpora.

Two sources of sentence pairs:

- `generate_dates`: human-readable dates in several languages (CLDR locale
  data through `babel`) translated to English, generated deterministically
  from a seed, with the true word alignment of every pair. No download.
- `load_corpus`: real corpora from a path: the Anki/Tatoeba format of the
  TensorFlow tutorials (`English<TAB>Other[<TAB>attribution]`), plain
  two-column TSV, two line-aligned files (`train.de` / `train.en`), `.gz`
  accepted; or a TensorFlow Datasets name (`tfds:NAME`, needs network access
  and `tensorflow-datasets`).

`split_pairs` gives a deterministic train/validation/test split (by a hash of
the source sentence, so duplicated sources never straddle two splits).

Everything here is plain Python: the TensorFlow text processing lives in
`text.py`. `pretokenize` is the Python mirror of the TensorFlow
pre-tokenization (normalisation, optional lower-casing, punctuation split);
the alignments are expressed in its words.
"""

import collections
import dataclasses
import datetime
import gzip
import os
import random
import re
import unicodedata
import zlib

# Languages of the embedded dates data (CLDR locale codes). Their date
# patterns put the fields in different orders: French "vendredi 20 octobre
# 1933", German "Freitag, 20. Oktober 1933", Turkish "20 Ekim 1933 Cuma".
DATE_LANGUAGES = ("fr", "de", "es", "it", "pt", "nl", "tr")
# CLDR date format lengths used: "full" has the weekday, "long" does not.
DATE_FORMATS = ("full", "long")
DATE_FIRST_YEAR = 1900
DATE_LAST_YEAR = 2099
DATE_TARGET_LOCALE = "en"

SPLIT_NAMES = ("train", "validation", "test")

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
            `generate_dates`); `None` for real corpora.
        languages: For the dates data, the source language of each pair.
    """

    pairs: list
    skipped: int = 0
    reasons: collections.Counter = dataclasses.field(
        default_factory=collections.Counter
    )
    alignments: list = None
    languages: list = None

    def __len__(self):
        return len(self.pairs)


# ----------------------------------------------------------------------
# Python mirror of the TensorFlow pre-tokenization.


def normalize(text, lower_case=True):
    """NFKC normalisation, optional lower-casing, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text)
    if lower_case:
        text = text.lower()
    return text


def _is_punct(char):
    return unicodedata.category(char)[0] in _PUNCT_CATEGORIES


def pretokenize(text, lower_case=True):
    """Splits a sentence into words as `text.TextProcessor` does.

    Normalises (NFKC), lower-cases if asked, splits punctuation and symbols
    off as words of their own and splits on whitespace.

    >>> pretokenize("Freitag, 20. Oktober 1933")
    ['freitag', ',', '20', '.', 'oktober', '1933']
    """
    text = normalize(text, lower_case)
    spaced = "".join(f" {c} " if _is_punct(c) else c for c in text)
    return spaced.split()


# ----------------------------------------------------------------------
# Embedded dates data.


def _format_fields(date, locale, length):
    """Formats `date` and returns `(text, [(start, end, field), ...])`.

    The string is built field by field from the CLDR pattern, so the
    character span of each field (weekday `E`, day `d`, month `M`, year `y`)
    is known; literal characters get the field `None`.
    """
    from babel import dates as babel_dates

    pattern = babel_dates.get_date_format(length, locale=locale).pattern
    fmt = babel_dates.DateTimeFormat(date, locale=locale)
    text, spans = "", []
    for kind, value in babel_dates.tokenize_pattern(pattern):
        if kind == "field":
            char, num = value
            piece = fmt[char * num]
            field = char
        else:
            piece, field = value, None
        spans.append((len(text), len(text) + len(piece), field))
        text += piece
    expected = babel_dates.format_date(date, length, locale=locale)
    if text != expected:  # pragma: no cover - guards against babel changes
        raise RuntimeError(
            f"Field-by-field formatting gave {text!r}, babel gives {expected!r}"
        )
    return text, spans


def _word_fields(text, spans, lower_case):
    """The field of each pre-tokenized word of `text`."""
    fields = []
    for start, end, field in spans:
        piece_words = pretokenize(text[start:end], lower_case)
        fields.extend([field] * len(piece_words))
    # Splitting span by span equals splitting the whole text only if no word
    # crosses a span boundary; check it.
    if len(fields) != len(pretokenize(text, lower_case)):  # pragma: no cover
        raise RuntimeError(f"A word crosses a field boundary in {text!r}")
    return fields


def date_pair(date, locale, length="full"):
    """One dates example: `(source, target, alignment)`.

    Args:
        date: `datetime.date`.
        locale: Source CLDR locale, e.g. `"fr"`.
        length: `"full"` (with the weekday) or `"long"`.

    Returns:
        `source` (e.g. `"vendredi 20 octobre 1933"`), `target` (English,
        `"Friday, October 20, 1933"`) and `alignment`: for each word of
        `pretokenize(target, lower_case=False)`, the tuple of indices of the
        words of `pretokenize(source)` it translates (empty for punctuation
        and other words with no counterpart).
    """
    source, source_spans = _format_fields(date, locale, length)
    target, target_spans = _format_fields(date, DATE_TARGET_LOCALE, length)
    source_fields = _word_fields(source, source_spans, lower_case=True)
    target_fields = _word_fields(target, target_spans, lower_case=False)
    alignment = []
    for field in target_fields:
        if field is None:
            alignment.append(())
        else:
            alignment.append(
                tuple(i for i, f in enumerate(source_fields) if f == field)
            )
    return source, target, alignment


def generate_dates(
    num_examples,
    seed=0,
    languages=DATE_LANGUAGES,
    formats=DATE_FORMATS,
    first_year=DATE_FIRST_YEAR,
    last_year=DATE_LAST_YEAR,
):
    """Generates the embedded dates data set, deterministically.

    Each example is a random date between `first_year` and `last_year` in a
    random language of `languages` and a random format of `formats`,
    translated to English. The same arguments always give the same data.

    Args:
        num_examples: Number of pairs.
        seed: Seed of the generator. Defaults to `0`.
        languages: Source locales. Defaults to `DATE_LANGUAGES`.
        formats: CLDR format lengths. Defaults to `("full", "long")`.
        first_year: First year. Defaults to `1900`.
        last_year: Last year. Defaults to `2099`.

    Returns:
        A `Corpus` with `alignments` and `languages` filled in.
    """
    rng = random.Random(seed)
    first = datetime.date(first_year, 1, 1).toordinal()
    last = datetime.date(last_year, 12, 31).toordinal()
    pairs, alignments, langs = [], [], []
    for _ in range(num_examples):
        date = datetime.date.fromordinal(rng.randint(first, last))
        locale = rng.choice(languages)
        length = rng.choice(formats)
        source, target, alignment = date_pair(date, locale, length)
        pairs.append((source, target))
        alignments.append(alignment)
        langs.append(locale)
    return Corpus(pairs=pairs, alignments=alignments, languages=langs)


# ----------------------------------------------------------------------
# Real corpora.


class _Lines:
    """The raw lines of a data file, as a context manager.

    Errors of the file (missing, a directory, unreadable, a corrupt `.gz`)
    become `ValueError`s that name the file, and the line for read errors,
    instead of tracebacks from deep inside `gzip` or `zlib`.
    """

    def __init__(self, path):
        self.path = str(path)
        self.number = 0
        try:
            if self.path.endswith(".gz"):
                self.file = gzip.open(self.path, "rb")
            else:
                self.file = open(self.path, "rb")
        except OSError as e:
            raise ValueError(
                f"Cannot open the data file {self.path!r}: {e.strerror or e}"
            ) from None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.file.close()

    def __iter__(self):
        try:
            for raw in self.file:
                self.number += 1
                yield raw
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(
                f"Cannot read the data file {self.path!r} at line "
                f"{self.number + 1}: {e}"
            ) from None


def _open_text(path):
    """Opens a text file (`.gz` transparently) for reading bytes by line."""
    return _Lines(path)


def _decode(raw):
    """The line as text, or `None` if it is not UTF-8 text.

    A NUL character counts as not UTF-8: it is what UTF-16 files (and
    binary files) look like when read as UTF-8.
    """
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def _read_columns(path, min_columns, max_columns, reasons):
    """Yields the tab-separated columns of each well-formed line."""
    with _open_text(path) as f:
        for raw in f:
            line = _decode(raw)
            if line is None:
                reasons["invalid UTF-8"] += 1
                continue
            if not line.strip():
                reasons["empty line"] += 1
                continue
            columns = line.split("\t")
            if not min_columns <= len(columns) <= max_columns:
                reasons[f"not {min_columns}-{max_columns} columns"] += 1
                continue
            yield columns


def _keep_pair(source, target, reasons):
    source, target = source.strip(), target.strip()
    if not source or not target:
        reasons["empty side"] += 1
        return None
    return source, target


def read_anki(path, direction="to-english"):
    """Reads the Anki/Tatoeba format `English<TAB>Other[<TAB>attribution]`.

    Args:
        path: File path, `.gz` accepted.
        direction: `"to-english"` (Other -> English, as in the TensorFlow
            tutorial) or `"from-english"`.

    Returns:
        A `Corpus`; malformed lines (not 2 or 3 columns, an empty side,
        invalid UTF-8) are skipped and counted.
    """
    if direction not in ("to-english", "from-english"):
        raise ValueError(
            "`direction` must be 'to-english' or 'from-english'. "
            f"Received: direction={direction!r}"
        )
    reasons = collections.Counter()
    pairs = []
    for columns in _read_columns(path, 2, 3, reasons):
        english, other = columns[0], columns[1]
        pair = (
            (other, english) if direction == "to-english" else (english, other)
        )
        pair = _keep_pair(*pair, reasons)
        if pair:
            pairs.append(pair)
    return Corpus(pairs=pairs, skipped=sum(reasons.values()), reasons=reasons)


def read_tsv(path):
    """Reads a plain TSV file `source<TAB>target` (exactly two columns)."""
    reasons = collections.Counter()
    pairs = []
    for columns in _read_columns(path, 2, 2, reasons):
        pair = _keep_pair(columns[0], columns[1], reasons)
        if pair:
            pairs.append(pair)
    return Corpus(pairs=pairs, skipped=sum(reasons.values()), reasons=reasons)


def read_parallel(source_path, target_path):
    """Reads two line-aligned files (e.g. `train.de` and `train.en`).

    A pair with an empty or undecodable side is skipped and counted, and so
    are the extra lines of the longer file.
    """
    reasons = collections.Counter()
    pairs = []
    with _open_text(source_path) as fs, _open_text(target_path) as ft:
        source_lines, target_lines = iter(fs), iter(ft)
        while True:
            raw_source = next(source_lines, None)
            raw_target = next(target_lines, None)
            if raw_source is None and raw_target is None:
                break
            if raw_source is None or raw_target is None:
                reasons["unpaired line (files differ in length)"] += 1
                continue
            source, target = _decode(raw_source), _decode(raw_target)
            if source is None or target is None:
                reasons["invalid UTF-8"] += 1
                continue
            pair = _keep_pair(source, target, reasons)
            if pair:
                pairs.append(pair)
    return Corpus(pairs=pairs, skipped=sum(reasons.values()), reasons=reasons)


def read_tfds(name, split="train", source_key=None, target_key=None):
    """Reads a TensorFlow Datasets translation set (needs network access).

    Args:
        name: TFDS name, e.g. `"ted_hrlr_translate/pt_to_en"`.
        split: TFDS split. Defaults to `"train"`.
        source_key, target_key: Feature names; default to the two language
            keys of the data set in `name`'s `x_to_y` order when present.
    """
    try:
        import tensorflow_datasets as tfds
    except ImportError as e:  # pragma: no cover - optional dependency
        raise ImportError(
            "TensorFlow Datasets names need `pip install tensorflow-datasets` "
            "and network access."
        ) from e
    data, info = tfds.load(name, split=split, with_info=True)
    keys = list(info.features.keys())
    if source_key is None or target_key is None:
        match = re.search(r"(\w+)_to_(\w+)", name)
        if match and {match.group(1), match.group(2)} <= set(keys):
            source_key, target_key = match.group(1), match.group(2)
        else:
            source_key, target_key = keys[0], keys[1]
    pairs = []
    for example in tfds.as_numpy(data):
        pair = (
            example[source_key].decode("utf-8"),
            example[target_key].decode("utf-8"),
        )
        if pair[0].strip() and pair[1].strip():
            pairs.append(pair)
    return Corpus(pairs=pairs)


def detect_format(path):
    """Guesses `"anki"` or `"tsv"` for a one-file corpus.

    Anki/Tatoeba files are recognised by an attribution column (`CC-BY`,
    `tatoeba`) in their first lines, or by their names (`fra.txt`,
    `spa-eng.txt.gz`: a three-letter language code); anything else is a
    plain `source<TAB>target` TSV. Pass `data_format` to be explicit.
    """
    name = os.path.basename(str(path))
    if re.fullmatch(r"[a-z]{3}(-[a-z]{3})?\.txt(\.gz)?", name):
        return "anki"
    with _open_text(path) as f:
        for i, raw in enumerate(f):
            line = _decode(raw)
            if line:
                columns = line.split("\t")
                if len(columns) == 3 and re.search(
                    r"CC-BY|tatoeba", columns[2], re.IGNORECASE
                ):
                    return "anki"
            if i >= 200:
                break
    return "tsv"


def load_corpus(
    paths,
    data_format="auto",
    direction="to-english",
    num_dates=20000,
    seed=0,
):
    """Loads a corpus given on the command line.

    Args:
        paths: `["dates"]` for the embedded data, `["tfds:NAME"]`, one file
            (Anki or TSV) or two line-aligned files `[source, target]`.
        data_format: `"auto"`, `"anki"`, `"tsv"` or `"parallel"`.
        direction: For Anki files, `"to-english"` or `"from-english"`.
        num_dates: Number of generated pairs for `"dates"`.
        seed: Seed of the dates generator.

    Returns:
        A `Corpus`.
    """
    if isinstance(paths, str):
        paths = [paths]
    paths = list(paths)
    if paths == ["dates"]:
        return generate_dates(num_dates, seed=seed)
    if len(paths) == 1 and paths[0].startswith("tfds:"):
        return read_tfds(paths[0][len("tfds:") :])
    if len(paths) == 2 or data_format == "parallel":
        if len(paths) != 2:
            raise ValueError(
                "The parallel format needs two files, source and target. "
                f"Received: paths={paths}"
            )
        return read_parallel(*paths)
    if len(paths) != 1:
        raise ValueError(
            "Expected 'dates', 'tfds:NAME', one file or two line-aligned "
            f"files. Received: paths={paths}"
        )
    (path,) = paths
    if not os.path.exists(path):
        raise ValueError(f"No such data file. Received: path={path!r}")
    if data_format == "auto":
        data_format = detect_format(path)
    if data_format == "anki":
        return read_anki(path, direction)
    if data_format == "tsv":
        return read_tsv(path)
    raise ValueError(
        "`data_format` must be 'auto', 'anki', 'tsv' or 'parallel'. "
        f"Received: data_format={data_format!r}"
    )


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
    return _subset(corpus, keep, corpus.skipped, corpus.reasons)


def _subset(corpus, indices, skipped=0, reasons=None):
    return Corpus(
        pairs=[corpus.pairs[i] for i in indices],
        skipped=skipped,
        reasons=collections.Counter() if reasons is None else reasons,
        alignments=(
            None
            if corpus.alignments is None
            else [corpus.alignments[i] for i in indices]
        ),
        languages=(
            None
            if corpus.languages is None
            else [corpus.languages[i] for i in indices]
        ),
    )


def split_of(source, validation_fraction, test_fraction):
    """The split (`"train"`, `"validation"`, `"test"`) of a source sentence.

    Decided by a CRC32 hash of the source, so it does not depend on the
    order of the file, on the sample limit or on the Python hash seed, and
    repeated sources always land in the same split.
    """
    bucket = zlib.crc32(source.encode("utf-8")) % 10000 / 10000.0
    if bucket < test_fraction:
        return "test"
    if bucket < test_fraction + validation_fraction:
        return "validation"
    return "train"


def split_pairs(corpus, validation_fraction=0.05, test_fraction=0.05):
    """Deterministic train/validation/test split of a `Corpus`.

    Returns:
        A dict from split name to `Corpus`.
    """
    for name, value in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if not 0.0 <= value < 1.0:
            raise ValueError(
                f"`{name}` must be in [0, 1). Received: {name}={value}"
            )
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "`validation_fraction + test_fraction` must be below 1. Received: "
            f"validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}"
        )
    indices = {name: [] for name in SPLIT_NAMES}
    for i, (source, _) in enumerate(corpus.pairs):
        indices[split_of(source, validation_fraction, test_fraction)].append(i)
    return {
        name: _subset(corpus, idx, corpus.skipped if name == "train" else 0)
        for name, idx in indices.items()
    }
