"""Checks of word alignments: links, corpora of links, weight matrices.

A link is a `(source, target)` pair of non-negative integers; an alignment
is a set of links; a corpus is a sequence with one alignment per sentence;
a weight matrix is a `(target_words, source_words)` array of finite
weights >= 0 (word attention, a prior).
"""

import math
import numbers
from typing import Any
from typing import Optional

import numpy as np

from keras_attention.checks.scalars import python_scalar


def _index(value: Any) -> Optional[int]:
    """A non-negative integer index (integer-valued floats too), or `None`
    for anything else (1.7, NaN, "0", a bool)."""
    value = python_scalar(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value) if value >= 0 else None
    if isinstance(value, numbers.Real) and math.isfinite(value):
        if value == int(value) and value >= 0:
            return int(value)
    return None


def check_links(name: str, links: Any) -> set:
    """An alignment as a set of `(source, target)` pairs of Python ints.

    Links are pairs of non-negative integers (Python or numpy ints, or
    integer-valued floats such as `1.0`).

    Raises:
        ValueError: for a string alignment or link (`"0-0"`: see
            `parse_pharaoh`), a `(sure, possible)` pair of sets (as
            `read_pharaoh` returns per sentence), or a link that is not a
            pair of non-negative integers (`(1.7, 0)`, `(-1, 0)`).
    """
    if isinstance(links, (str, bytes)):
        raise ValueError(
            f"`{name}` must be an iterable of (source, target) pairs, not a "
            f"string (parse Pharaoh text with `parse_pharaoh`). Received: "
            f"{name}={links!r:.80}"
        )
    if (
        isinstance(links, (tuple, list))
        and len(links) == 2
        and all(isinstance(x, (set, frozenset)) for x in links)
    ):
        raise ValueError(
            f"`{name}` must be one set of (source, target) links. Received "
            "a (sure, possible) pair of sets, as `read_pharaoh` returns per "
            "sentence: pass the sure and the possible sets separately. "
            f"Received: {name}={links!r:.80}"
        )
    try:
        items = list(links)
    except TypeError:
        raise ValueError(
            f"`{name}` must be an iterable of (source, target) pairs. "
            f"Received: {name}={links!r:.80}"
        ) from None
    out = set()
    for link in items:
        pair = None
        if not isinstance(link, (str, bytes)):
            try:
                s, t = link
                pair = (_index(s), _index(t))
            except (TypeError, ValueError):
                pair = None
        if pair is None or None in pair:
            hint = (
                " (parse Pharaoh text with `parse_pharaoh`)"
                if isinstance(link, (str, bytes)) else ""
            )
            raise ValueError(
                f"`{name}` must hold (source, target) pairs of non-negative "
                f"integers{hint}. Received: {link!r} in {name}"
            )
        out.add(pair)
    return out


def check_corpus(name: str, corpus: Any) -> list:
    """A corpus of alignments (one per sentence) as a list of link sets.

    Raises:
        ValueError: for one alignment (a set of links) where a corpus is
            expected, an unordered corpus (a set), or a malformed
            alignment (see `check_links`).
    """
    if isinstance(corpus, (str, bytes, set, frozenset, dict)) or corpus is None:
        raise ValueError(
            f"`{name}` must be a sequence with one alignment (a set of "
            "(source, target) links) per sentence. Received: "
            f"{name}={corpus!r:.80} of type {type(corpus).__name__} (for one "
            f"sentence, pass [links])"
        )
    try:
        corpus = list(corpus)
    except TypeError:
        raise ValueError(
            f"`{name}` must be a sequence with one alignment per sentence. "
            f"Received: {name}={corpus!r:.80}"
        ) from None
    out = []
    for i, links in enumerate(corpus):
        if isinstance(links, (tuple, list)) and len(links) == 2 and all(
            _index(x) is not None for x in links
        ):
            raise ValueError(
                f"`{name}` must hold one alignment (a set of links) per "
                f"sentence. Received: {name}[{i}]={links!r}, one link (for "
                "one sentence, pass [links])"
            )
        out.append(check_links(f"{name}[{i}]", links))
    return out


def check_weight_matrix(name: str, value: Any) -> np.ndarray:
    """A `(target_words, source_words)` matrix of finite weights >= 0, as
    a `float64` numpy array (word attention, a prior of link rates).

    Raises:
        ValueError: for a value that is not a 2-D numeric array, or holds
            a NaN, an infinity or a negative weight.
    """
    try:
        matrix = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be a 2-D (target_words, source_words) array of "
            f"weights. Received: {name}={value!r:.80}"
        ) from None
    if matrix.ndim != 2:
        raise ValueError(
            f"`{name}` must be a 2-D (target_words, source_words) array. "
            f"Received: {name}.shape={matrix.shape}"
        )
    finite = np.isfinite(matrix)
    if not finite.all() or matrix.min(initial=0.0) < 0:
        raise ValueError(
            f"`{name}` must hold finite weights >= 0. Received: "
            f"min {np.min(np.where(finite, matrix, 0.0), initial=0.0)}, "
            f"{int(np.sum(~finite))} NaN or infinite"
        )
    return matrix
