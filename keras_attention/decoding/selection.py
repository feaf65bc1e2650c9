"""The `k` largest scores of every row, fast on wide rows.

Beam search keeps, at every step, the `k` best of `beam_width *
vocab_size` extensions of each sentence: a top-k over rows of tens of
thousands of scores. TensorFlow's CPU `TopKV2` pushes every element
through a heap (about 1.3 ns an element on 2 Xeon cores for `k = 5`,
against 0.1 ns for a vectorized maximum: `python -m
benchmarks.vocab_ops`), so on TensorFlow `top_k` first
narrows each row down to the chunks that can hold its `k` best (see
`top_k`); elsewhere it is `keras.ops.top_k`.
"""

import math
from typing import Any
from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.typing import Tensor

# Rows narrower than this go to one `TopKV2`: below it the extra ops of
# the chunked search cost more than they save.
MIN_CHUNKED_WIDTH = 4096


def chunk_size(width: int, k: int) -> int:
    """Elements per chunk for rows of `width` and a top-`k`: near
    `sqrt(width / k)`, which balances the top-k over the chunk maxima
    (`width / size` elements) against the one over the `k` chosen chunks
    (`k * size`); a divisor of `width` in `[size / 2, 2 * size]` where
    there is one (the rows are then reshaped as they are, not padded)."""
    size = max(1, round(math.sqrt(width / k)))
    divisors = [
        c for c in range(max(1, size // 2), 2 * size + 1) if width % c == 0
    ]
    return min(divisors, key=lambda c: abs(c - size)) if divisors else size


def _chunking(x: Tensor, k: Any) -> Optional[Tuple[int, int, int]]:
    """`(width, size, chunks)` of the chunked search of `top_k`, or `None`
    where it does not apply: another backend, a tensor `k`, a dynamic or
    narrow width, or fewer chunks than `k`. Decided in Python, from static
    values only (never a comparison of tensors inside a traced function).
    """
    width = x.shape[-1]
    if (
        keras.backend.backend() != "tensorflow"
        or not isinstance(k, int)
        or not isinstance(width, int)
        or width < MIN_CHUNKED_WIDTH
    ):
        return None
    size = chunk_size(width, k)
    chunks = -(-width // size)
    return None if chunks < k else (width, size, chunks)


def top_k(x: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """`keras.ops.top_k(x, k, sorted=True)` of a `(rows, width)` tensor
    without NaN: the `k` largest values of every row, largest first,
    equal values in index order, and their int32 indices.

    On TensorFlow, for a Python int `k` and a static `width` of at least
    `MIN_CHUNKED_WIDTH`, the exact same result from a maximum of every
    chunk of `chunk_size` elements (one vectorized pass), a top-`k` of the
    chunk maxima (the `k` best elements lie in the `k` chunks with the
    largest maxima, lower chunks first on ties), and a top-`k` of those
    chunks' elements gathered in index order. Rows whose width the chunk
    size does not divide are padded with `-inf` after their last element
    (behind every real one, ties included).
    """
    plan = _chunking(x, k)
    if plan is None:
        values, indices = ops.top_k(x, k, sorted=True)
        return values, ops.cast(indices, "int32")
    import tensorflow as tf

    width, size, chunks = plan
    if chunks * size != width:
        x = tf.pad(
            x, [[0, 0], [0, chunks * size - width]],
            constant_values=float("-inf"),
        )
    blocks = tf.reshape(x, [-1, chunks, size])
    _, best_chunks = tf.math.top_k(tf.reduce_max(blocks, axis=-1), k)
    best_chunks = tf.sort(best_chunks, axis=-1)
    candidates = tf.gather(blocks, best_chunks, axis=1, batch_dims=1)
    values, where = tf.math.top_k(tf.reshape(candidates, [-1, k * size]), k)
    chunk = tf.gather(best_chunks, where // size, axis=1, batch_dims=1)
    return values, chunk * size + where % size
