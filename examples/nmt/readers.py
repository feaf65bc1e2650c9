"""Readers of real corpora for the NMT example.

The Anki/Tatoeba format of the TensorFlow tutorials
(`English<TAB>Other[<TAB>attribution]`), plain two-column TSV, two
line-aligned files (`train.de` / `train.en`), `.gz` accepted, and
TensorFlow Datasets names (needs network access and
`tensorflow-datasets`). Malformed lines are skipped and counted by reason;
file errors become `ValueError`s that name the file (and the line).
"""

import collections
import gzip
import os
import re
import zlib

from examples.nmt.corpus import Corpus

# Directions of an Anki file: Other -> English, or English -> Other.
DIRECTIONS = ("to-english", "from-english")


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
    if direction not in DIRECTIONS:
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
