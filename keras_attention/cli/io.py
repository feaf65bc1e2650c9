"""The text reader of every file the command line reads.

UTF-8 with or without a byte-order mark, LF or CRLF line ends, a `.gz`
file decompressed; a byte that is not UTF-8 is reported with its line
number. Blank lines are skipped.

- `iter_lines(path)`: `(line_number, text)` of every line, as it is read;
- `read_lines(path)`: the same, as a list;
- `read_texts(path)`: one text a line;
- `read_pairs(path, data_format, target_file)`: sentence pairs, from a TSV
  file (`source<TAB>target`, further columns ignored) or from two aligned
  files (line `n` of one translates line `n` of the other);
- `iter_stream(stream)`: the lines of a binary stream (stdin) as they come.
"""

from typing import BinaryIO
from typing import Iterator
from typing import List
from typing import Optional
from typing import Tuple

import codecs
import gzip
import os
import zlib

from keras_attention.cli.errors import CliError

DATA_FORMATS = ("tsv", "parallel")


def _decode(raw: bytes, name: str, number: int) -> str:
    """One line (without its line end) as text."""
    if number == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CliError(
            f"{name}:{number}: not UTF-8 (byte 0x{raw[e.start]:02x} at "
            f"column {e.start + 1}); save the file as UTF-8"
        ) from None
    return text[:-1] if text.endswith("\r") else text


def _open(path: str, flag: str) -> BinaryIO:
    if not os.path.exists(path):
        raise CliError(f"{flag} {path}: no such file")
    if os.path.isdir(path):
        raise CliError(f"{flag} {path}: is a directory, not a text file")
    try:
        if path.endswith(".gz"):
            return gzip.open(path, "rb")
        return open(path, "rb")
    except OSError as e:
        raise CliError(f"{flag} {path}: cannot read ({e.strerror})") from None


def iter_lines(path: str, flag: str = "--file") -> Iterator[Tuple[int, str]]:
    """Every line of a file as `(line_number, text)`, blank ones included,
    numbered from 1, as it is read (a large file is never held whole); a
    last line end makes no extra line. A `.gz` file is decompressed.

    Args:
        path: The file.
        flag: The flag that named the file, for the messages.

    Raises:
        CliError: for a missing or unreadable file, a damaged `.gz`, or a
            line that is not UTF-8 (naming the line).
    """
    path = os.fspath(path)
    number = 0
    with _open(path, flag) as f:
        try:
            for number, raw in enumerate(f, 1):
                yield number, _decode(raw.rstrip(b"\n"), path, number)
        except (OSError, EOFError, zlib.error) as e:
            reason = getattr(e, "strerror", None) or e
            raise CliError(
                f"{flag} {path}: cannot read line {number + 1} ({reason})"
            ) from None


def read_lines(path: str, flag: str = "--file") -> List[Tuple[int, str]]:
    """Every line of a file as `(line_number, text)` (`iter_lines`)."""
    return list(iter_lines(path, flag))


def read_texts(path: str, flag: str = "--file") -> List[str]:
    """The non-blank lines of a file."""
    texts = [t.strip() for _, t in read_lines(path, flag) if t.strip()]
    if not texts:
        raise CliError(f"{flag} {path}: no text in the file")
    return texts


def _tsv_pairs(path: str) -> Tuple[List[str], List[str]]:
    sources, targets = [], []
    for number, line in read_lines(path, "--data"):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) < 2:
            raise CliError(
                f"{path}:{number}: expected 2 tab-separated columns "
                "(source<TAB>target), found 1"
            )
        source, target = columns[0].strip(), columns[1].strip()
        if not source or not target:
            side = "source" if not source else "target"
            raise CliError(f"{path}:{number}: the {side} column is empty")
        sources.append(source)
        targets.append(target)
    return sources, targets


def _parallel_pairs(
    path: str, target_file: str
) -> Tuple[List[str], List[str]]:
    source_lines = read_lines(path, "--data")
    target_lines = read_lines(target_file, "--target-file")
    if len(source_lines) != len(target_lines):
        raise CliError(
            f"parallel files of different lengths: --data {path} has "
            f"{len(source_lines)} lines, --target-file {target_file} has "
            f"{len(target_lines)}"
        )
    sources, targets = [], []
    for (number, source), (_, target) in zip(source_lines, target_lines):
        source, target = source.strip(), target.strip()
        if not source and not target:
            continue
        if not source or not target:
            blank = path if not source else target_file
            raise CliError(
                f"{blank}:{number}: blank line where the other file has a "
                "sentence"
            )
        sources.append(source)
        targets.append(target)
    return sources, targets


def read_pairs(
    path: str,
    data_format: Optional[str] = None,
    target_file: Optional[str] = None,
) -> Tuple[List[str], List[str]]:
    """Sentence pairs `(sources, targets)` of `--data` (and
    `--target-file`).

    Args:
        path: The TSV file, or the source side of two aligned files.
        data_format: `"tsv"` or `"parallel"`. Defaults to `"parallel"`
            with a `target_file`, else `"tsv"`.
        target_file: The target side of two aligned files.

    Raises:
        CliError: naming the file and line of what is wrong.
    """
    if data_format is None:
        data_format = "tsv" if target_file is None else "parallel"
    if data_format == "parallel":
        if target_file is None:
            raise CliError(
                "--data-format parallel needs --target-file (the "
                "translations, one a line)"
            )
        sources, targets = _parallel_pairs(path, target_file)
    elif data_format == "tsv":
        if target_file is not None:
            raise CliError(
                "--target-file goes with --data-format parallel, not tsv"
            )
        sources, targets = _tsv_pairs(path)
    else:
        raise CliError(
            f"--data-format must be one of {list(DATA_FORMATS)}; got "
            f"{data_format!r}"
        )
    if not sources:
        raise CliError(f"--data {path}: no sentence pairs in the file")
    return sources, targets


def iter_stream(
    stream: BinaryIO, name: str = "<stdin>", keep_blank: bool = False
) -> Iterator[Tuple[int, str]]:
    """`(line_number, text)` of a binary stream, each line as soon as it
    is read (no read-ahead), stripped; blank lines skipped unless
    `keep_blank`."""
    for number, raw in enumerate(iter(stream.readline, b""), 1):
        text = _decode(raw.rstrip(b"\n"), name, number)
        if keep_blank or text.strip():
            yield number, text.strip()
