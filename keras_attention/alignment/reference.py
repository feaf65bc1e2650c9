"""Reference word alignments of a corpus with eflomal, symmetrized.

The links that guided alignment trains on (a Pharaoh file, one line per
sentence pair, `source-target` pairs of 0-based whitespace-word indices)
made by a statistical aligner:

1. each whitespace word of a pair is lower-cased and split into word and
   punctuation tokens (`"Va-t'en!"` -> `va - t ' en !`);
2. eflomal (Östling & Tiedemann, 2016) aligns the tokens in both
   directions;
3. the token links are mapped back to the whitespace words (two words are
   linked when any of their tokens are);
4. the two directions are symmetrized with `symmetrize` (default
   grow-diag-final-and).

eflomal is an optional dependency (the `align` extra), imported only when
`eflomal_token_links` runs:

    pip install "keras-seq2seq-attention[align]"

Example:

>>> pairs = [("le chat dort", "the cat sleeps")] * 50  # doctest: +SKIP
>>> links = reference_links(pairs)                       # doctest: +SKIP
>>> sorted(links["symmetric"][0])                        # doctest: +SKIP
[(0, 0), (1, 1), (2, 2)]
"""

import os
import re
import tempfile
from typing import Callable
from typing import Optional
from typing import Sequence

from keras_attention.alignment.links import transpose_links
from keras_attention.alignment.pharaoh import read_pharaoh
from keras_attention.alignment.symmetrization import METHODS
from keras_attention.alignment.symmetrization import symmetrize_corpus

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)

# `(source_lines, target_lines) -> (forward, reverse)`: the token links of
# each line in both directions, each a list of sets of `(source, target)`.
Aligner = Callable[[Sequence[str], Sequence[str]], tuple]


def tokenize_words(text: str) -> list:
    """The tokens of each whitespace word of `text`.

    Example:

    >>> tokenize_words("Va-t'en !")
    [['va', '-', 't', "'", 'en'], ['!']]
    """
    return [_TOKEN.findall(word.lower()) or [word] for word in text.split()]


def _flatten(words: list) -> tuple:
    """The tokens of a sentence and, for each token, the index of its word."""
    tokens, owner = [], []
    for i, word_tokens in enumerate(words):
        tokens.extend(word_tokens)
        owner.extend([i] * len(word_tokens))
    return tokens, owner


def eflomal_token_links(
    source_lines: Sequence[str], target_lines: Sequence[str]
) -> tuple:
    """Token links of every line pair with eflomal, in both directions.

    Args:
        source_lines: Space-separated source tokens, one string per pair.
        target_lines: The target tokens of the same pairs.

    Returns:
        `(forward, reverse)`: for each pair, the set of `(source_token,
        target_token)` links of the source-to-target and of the
        target-to-source model (both oriented source first).

    Raises:
        ImportError: if eflomal is not installed.
    """
    try:
        import eflomal
    except ImportError as err:
        raise ImportError(
            "Reference alignments need eflomal, the `align` extra: "
            'pip install "keras-seq2seq-attention[align]"'
        ) from err
    with tempfile.TemporaryDirectory(prefix="eflomal-") as workdir:
        fwd = os.path.join(workdir, "fwd.txt")
        rev = os.path.join(workdir, "rev.txt")
        eflomal.Aligner().align(
            [line + "\n" for line in source_lines],
            [line + "\n" for line in target_lines],
            links_filename_fwd=fwd,
            links_filename_rev=rev,
        )
        return (
            [set(sure) for sure, _ in read_pharaoh(fwd)],
            [set(sure) for sure, _ in read_pharaoh(rev)],
        )


def reference_links(
    pairs: Sequence,
    method: str = "grow-diag-final-and",
    transpose: bool = False,
    aligner: Optional[Aligner] = None,
) -> dict:
    """Word links of sentence pairs from a statistical aligner.

    Args:
        pairs: `(source, target)` raw sentences (whitespace words).
        method: The symmetrization of `symmetrize`. Defaults to
            `"grow-diag-final-and"`.
        transpose: Whether the links are returned for the other direction
            (`(target_word, source_word)`; `forward` and `reverse` swap
            too), as a model trained target -> source reads them. Defaults
            to `False`.
        aligner: A function `(source_lines, target_lines) -> (forward,
            reverse)` of token links. Defaults to `eflomal_token_links`.

    Returns:
        A dict with `forward`, `reverse` and `symmetric`: for each pair,
        a set of `(source_word, target_word)` links over the whitespace
        words of the pair.

    Raises:
        ValueError: if `method` is unknown, a pair is not two non-empty
            strings, or the aligner returns another number of pairs.
        ImportError: if eflomal is needed and not installed.
    """
    if method not in METHODS:
        raise ValueError(
            f"`method` must be one of {METHODS}. Received: method={method!r}"
        )
    sources, targets = [], []
    for i, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list)) or len(pair) != 2
            or not all(isinstance(s, str) and s.strip() for s in pair)
        ):
            raise ValueError(
                "Each pair must be two non-empty strings (source, target). "
                f"Received: pairs[{i}]={pair!r}"
            )
        sources.append(_flatten(tokenize_words(pair[0])))
        targets.append(_flatten(tokenize_words(pair[1])))
    aligner = aligner or eflomal_token_links
    forward, reverse = aligner(
        [" ".join(tokens) for tokens, _ in sources],
        [" ".join(tokens) for tokens, _ in targets],
    )
    if len(forward) != len(sources) or len(reverse) != len(sources):
        raise ValueError(
            f"The aligner must return links for each of the {len(sources)} "
            f"pairs. Received: {len(forward)} forward, {len(reverse)} reverse"
        )

    def to_words(token_links: list) -> list:
        return [
            {(s_owner[s], t_owner[t]) for s, t in links}
            for links, (_, s_owner), (_, t_owner)
            in zip(token_links, sources, targets)
        ]

    forward, reverse = to_words(forward), to_words(reverse)
    symmetric = symmetrize_corpus(forward, reverse, method)
    if transpose:
        forward, reverse = (
            [transpose_links(x) for x in reverse],
            [transpose_links(x) for x in forward],
        )
        symmetric = [transpose_links(x) for x in symmetric]
    return {"forward": forward, "reverse": reverse, "symmetric": symmetric}
