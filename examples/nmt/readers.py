"""Readers of real corpora for the NMT example.

The Anki/Tatoeba format of the TensorFlow tutorials
(`English<TAB>Other[<TAB>attribution]`), plain two-column TSV, two
line-aligned files (`train.de` / `train.en`), `.gz` accepted, and
TensorFlow Datasets names (needs network access and
`tensorflow-datasets`).

Files are read as every file of the command line
(`keras_attention.cli.io.iter_lines`): UTF-8 with or without a byte-order
mark, LF or CRLF line ends. Malformed lines (wrong number of columns, an
empty side) are skipped and counted by reason; what stops the reading (a
missing file, a directory, a damaged `.gz`, a line that is not UTF-8 or
holds a NUL byte) is a `CliError` that names the file, and the line.
"""

import collections
import os
import re

from examples.nmt.corpus import Corpus
from keras_attention.cli.errors import CliError
from keras_attention.cli.io import iter_lines

# Directions of an Anki file: Other -> English, or English -> Other.
DIRECTIONS = ("to-english", "from-english")
# The flag that names the files in the messages.
FLAG = "--data"


def _lines(path):
    """`(line_number, text)` of each line of a data file (`.gz` too).

    A NUL character is refused as a byte that is not UTF-8 is: it is what
    UTF-16 files (and binary files) look like when read as UTF-8.
    """
    path = str(path)
    for number, line in iter_lines(path, FLAG):
        if "\x00" in line:
            raise CliError(
                f"{path}:{number}: NUL byte, not UTF-8 text (a UTF-16 or "
                "binary file?); save the file as UTF-8"
            )
        yield number, line


def _read_columns(path, min_columns, max_columns, reasons):
    """Yields the tab-separated columns of each well-formed line."""
    for _, line in _lines(path):
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
        A `Corpus`; malformed lines (not 2 or 3 columns, an empty side)
        are skipped and counted.

    Raises:
        CliError: naming the file (and the line) of what stops the
            reading: a missing file, a damaged `.gz`, a line that is not
            UTF-8.
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

    A pair with an empty side is skipped and counted, and so are the extra
    lines of the longer file.
    """
    reasons = collections.Counter()
    pairs = []
    source_lines, target_lines = _lines(source_path), _lines(target_path)
    while True:
        source = next(source_lines, None)
        target = next(target_lines, None)
        if source is None and target is None:
            break
        if source is None or target is None:
            reasons["unpaired line (files differ in length)"] += 1
            continue
        pair = _keep_pair(source[1], target[1], reasons)
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
    for number, line in _lines(path):
        columns = line.split("\t")
        if len(columns) == 3 and re.search(
            r"CC-BY|tatoeba", columns[2], re.IGNORECASE
        ):
            return "anki"
        if number > 200:
            break
    return "tsv"
