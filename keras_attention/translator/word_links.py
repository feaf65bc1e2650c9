"""Word links of sentence pairs from a `Seq2Seq`'s teacher-forced weights.

The tokenizers group their pieces by whitespace word
(`Tokenizer.tokenize_words`); this module turns a `(T, S)` matrix of piece
weights into links between whitespace words (`text.split()` indices):
the word attention is `keras_attention.alignment.group_attention` over
the piece positions of each word (`word_matrix`), whose links
`Translator.align` takes. TensorFlow: the tokenizers' ops.
"""

from typing import Any
from typing import List
from keras_attention.typing import Tensor

import numpy as np

from keras_attention.alignment import group_attention


def word_positions(
    tokenizer: Any, texts: List[str], offset: int, room: int
) -> List[List[List[int]]]:
    """For each text, for each whitespace word, the positions of its
    pieces in the framed id sequence (`offset` tokens before the first
    piece, `room` pieces kept at most: pieces past the cut have none)."""
    counts = tokenizer.tokenize_words(texts).row_lengths(axis=2)
    out = []
    for row in counts.to_list():
        groups, start = [], offset
        for n in row:
            end = min(start + n, offset + room)
            groups.append(list(range(start, max(start, end))))
            start += n
        out.append(groups)
    return out


def word_matrix(
    weights: Tensor,
    source_groups: List[List[int]],
    target_groups: List[List[int]],
) -> np.ndarray:
    """The `(target_words, source_words)` attention of one pair from its
    `(T, S)` teacher-forced weights; target row `t` is the step that
    predicts the target piece at position `t + 1` of the framed target."""
    rows = [[t - 1 for t in group] for group in target_groups]
    return group_attention(np.asarray(weights), source_groups, rows)
