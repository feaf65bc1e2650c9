"""Whitespace words of raw sentences and the NMT example's tokens.

Pharaoh files (`train --guided-alignment`, `align`, the gold standards)
speak of the whitespace words of the raw pairs; the model reads
WordPiece pieces. `word_positions` gives, for each whitespace word of a
raw sentence, its token positions:

1. a whitespace word is `raw.split()`'s word of the raw sentence;
2. it becomes its WordPiece pieces (`WordPieceTokenizer.tokenize_words`:
   punctuation and symbols split off, `"l'homme."` is the pieces of
   `l ' homme .`, one `[UNK]` for a part the vocabulary cannot spell);
3. the positions count the pieces from 0 without `[START]`: for the
   source they are the columns of the attention (`[END]`, the last
   column, belongs to no word); for the target, position `p` is the
   attention row that predicts piece `p` (row `t` reads the target
   token before it, `[START]` for row 0; the last row predicts `[END]`
   and belongs to no word). Pieces cut by `max_tokens` have no
   position.

A link between two whitespace words links every piece of one to every
piece of the other (`token_links`); the attention of whitespace word
`j` on `i` is the mean over `j`'s pieces of the summed weights on `i`'s
pieces (`whitespace_attention`, the rule of `word_attention`).
"""

from typing import List
from typing import Sequence

import numpy as np


def piece_counts(processor, texts: Sequence[str]) -> List[List[int]]:
    """Pieces of each whitespace word of each text (`processor` is a
    framed `WordPieceTokenizer`), before any cut to `max_tokens`."""
    counts = []
    for i in range(0, len(texts), 1024):
        ragged = processor.tokenize_words(list(texts[i : i + 1024]))
        flat = ragged.values.row_lengths().numpy().tolist()
        k = 0
        for n in ragged.row_lengths().numpy().tolist():
            counts.append(flat[k : k + n])
            k += n
    return counts


def token_room(processor) -> int:
    """Content pieces a framed tokenizer keeps (`max_tokens` without
    `[START]`/`[END]`)."""
    return (
        processor.max_tokens
        - int(processor.add_start)
        - int(processor.add_end)
    )


def word_positions(
    text: str,
    counts: Sequence[int],
    room: int = None,
):
    """Token positions of each whitespace word of a raw sentence.

    Args:
        text: The raw sentence.
        counts: Pieces of each of its whitespace words (`piece_counts`).
        room: Positions from `room` on were cut (`token_room`). Defaults
            to none cut.

    Returns:
        A list, per whitespace word of `text.split()`, of its positions
        (counted from 0 without `[START]`, see the module docstring); a
        word cut off gets `[]`. `None` when the text has not
        `len(counts)` whitespace words (NFKC normalisation that creates
        spaces).

    >>> word_positions("L'homme dort.", [4, 2])
    [[0, 1, 2, 3], [4, 5]]
    """
    if len(text.split()) != len(counts):
        return None
    out, position = [], 0
    for count in counts:
        pieces = range(position, position + count)
        position += count
        out.append([p for p in pieces if room is None or p < room])
    return out


def token_links(links, source_positions, target_positions) -> set:
    """Token links `(source column, target row)` of whitespace word links.

    Args:
        links: `(source_word, target_word)` pairs over whitespace words.
        source_positions: `word_positions` of the source.
        target_positions: `word_positions` of the target.

    Raises:
        ValueError: for a link to a word the sentence does not have.
    """
    out = set()
    for s, t in links:
        if not (
            0 <= s < len(source_positions) and 0 <= t < len(target_positions)
        ):
            raise ValueError(
                f"Link {s}-{t} is out of range: the pair has "
                f"{len(source_positions)} source and {len(target_positions)} "
                "target whitespace words"
            )
        for column in source_positions[s]:
            for row in target_positions[t]:
                out.add((column, row))
    return out


def whitespace_attention(weights, source_positions, target_positions):
    """Attention `(target words, source words)` over whitespace words.

    `A[j, i] = mean_{t in j} sum_{s in i} weights[t, s]`, the rule of
    `word_attention`, over the positions of `word_positions`; a word with
    no position (cut off) gets a zero row or column.
    """
    weights = np.asarray(weights, dtype=np.float64)
    out = np.zeros((len(target_positions), len(source_positions)))
    for i, columns in enumerate(source_positions):
        if not columns:
            continue
        column = weights[:, columns].sum(axis=1)
        for j, rows in enumerate(target_positions):
            if rows:
                out[j, i] = column[rows].mean()
    return out


