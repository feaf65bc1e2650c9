"""Pharaoh alignment format: read and write.

One line per sentence pair, links separated by whitespace, each
`i-j` (a sure link) or `i?j` / `ipj` (a possible link), `i` a source word
index and `j` a target word index, 0-based (fast_align, eflomal, Moses,
OpenNMT, Marian). Some gold standards count from 1: `one_based=True`.

Sure and possible links (Och & Ney, 2003): `sure` is `S`, and the
`possible` set returned here is `P`, which includes `S` (`S ⊆ P`).
"""

import re
from typing import Iterable, Optional

from keras_attention.checks import ArgumentTypeError
from keras_attention.checks import check_bool
from keras_attention.checks import check_corpus
from keras_attention.checks import check_links

_LINK = re.compile(r"^(\d+)([-?p])(\d+)$")


def parse_pharaoh(
    line: str,
    one_based: bool = False,
    where: str = "line",
) -> tuple:
    """Parses one line of Pharaoh links.

    Args:
        line: The links, e.g. `"0-0 1-2 2?1"`.
        one_based: Whether the indices count from 1 (then `1-1` is the
            first source word and the first target word). Defaults to
            `False`.
        where: Where the line comes from, for error messages (e.g.
            `"gold.txt:12"`). Defaults to `"line"`.

    Returns:
        `(sure, possible)`: two sets of 0-based `(source, target)` pairs,
        `possible` including `sure`.

    Raises:
        ValueError: naming `where`, for a malformed link or, with
            `one_based=True`, an index 0.

    Example:

    >>> sure, possible = parse_pharaoh("0-0 1p2 2?1")
    >>> sorted(sure), sorted(possible)
    ([(0, 0)], [(0, 0), (1, 2), (2, 1)])
    """
    if isinstance(line, bytes):
        line = line.decode("utf-8")
    if not isinstance(line, str):
        raise ArgumentTypeError(
            "`line` must be a string of Pharaoh links. Received: "
            f"line={line!r:.80} of type {type(line).__name__}"
        )
    sure, possible = set(), set()
    offset = 1 if check_bool("one_based", one_based) else 0
    for token in line.split():
        match = _LINK.match(token)
        if match is None:
            raise ValueError(
                f"{where}: malformed link {token!r}: expected "
                "'i-j' (sure), 'i?j' or 'ipj' (possible) with non-negative "
                f"integers. Received: {line.strip()!r}"
            )
        s, kind, t = int(match.group(1)), match.group(2), int(match.group(3))
        if s < offset or t < offset:
            raise ValueError(
                f"{where}: link {token!r} has an index 0 in a 1-based "
                f"file (one_based=True). Received: {line.strip()!r}"
            )
        link = (s - offset, t - offset)
        possible.add(link)
        if kind == "-":
            sure.add(link)
    return sure, possible


def format_pharaoh(
    sure: Iterable,
    possible: Optional[Iterable] = None,
    one_based: bool = False,
) -> str:
    """One line of Pharaoh links (no newline), sorted by source, target.

    Args:
        sure: `(source, target)` links written `i-j`.
        possible: Optional links written `i?j` (those also in `sure` are
            written once, as sure).
        one_based: Whether to count from 1. Defaults to `False`.

    Raises:
        ValueError: if a link is not a pair of non-negative integers.

    Example:

    >>> format_pharaoh({(1, 0), (0, 0)}, possible={(2, 1)})
    '0-0 1-0 2?1'
    """
    sure = check_links("sure", sure)
    possible = check_links(
        "possible", () if possible is None else possible
    ) - sure
    offset = 1 if check_bool("one_based", one_based) else 0
    marks = {link: "-" for link in sure}
    marks.update({link: "?" for link in possible})
    return " ".join(
        f"{s + offset}{marks[(s, t)]}{t + offset}" for s, t in sorted(marks)
    )


def read_pharaoh(path: str, one_based: bool = False) -> list:
    """Reads a Pharaoh file: one `(sure, possible)` pair per line.

    Args:
        path: The file (UTF-8 text; an empty line is a sentence with no
            links).
        one_based: Whether the file counts from 1. Defaults to `False`.

    Returns:
        A list of `(sure, possible)` pairs of sets of 0-based links,
        `possible` including `sure` (see `parse_pharaoh`).

    Raises:
        ValueError: naming the file and the line, for malformed input.
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            out.append(parse_pharaoh(line, one_based, f"{path}:{number}"))
    return out


def write_pharaoh(
    path: str,
    sure: Iterable,
    possible: Optional[Iterable] = None,
    one_based: bool = False,
) -> None:
    """Writes one line of links per sentence pair.

    Args:
        path: The output file.
        sure: Per sentence, an iterable of `(source, target)` links,
            written `i-j`.
        possible: Optional, per sentence, the possible links, written
            `i?j` (unless also sure). Must have one entry per sentence.
        one_based: Whether to count from 1. Defaults to `False`.

    Raises:
        ValueError: if `possible` does not have one entry per sentence, or
            a link is malformed.
    """
    sure = check_corpus("sure", sure)
    possible = (
        [set()] * len(sure) if possible is None
        else check_corpus("possible", possible)
    )
    check_bool("one_based", one_based)
    if len(possible) != len(sure):
        raise ValueError(
            "`possible` must have one entry per sentence of `sure`. "
            f"Received: {len(possible)} and {len(sure)} sentences"
        )
    with open(path, "w", encoding="utf-8") as f:
        for s, p in zip(sure, possible):
            f.write(format_pharaoh(s, p, one_based) + "\n")
