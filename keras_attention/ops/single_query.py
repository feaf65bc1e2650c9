"""The two products of one decoder step's attention, fast at small batches.

At a decoding step the query is one vector per sentence, so the scores
`q . k_j` and the context `sum_j alpha_j v_j` are batched matrix-vector
products. On TensorFlow's CPU kernels (oneDNN) a batched matmul costs a
fixed ~0.09 ms a call, more than the whole product at batch 1: a
broadcast multiply and a sum do the same work in a few microseconds.
Past `ELEMENTWISE_LIMIT` multiply-adds the matmul's better throughput
wins, so each function picks one of the two by size: in Python where
the sizes are known when the graph is built (JAX, PyTorch, fixed-shape
signatures), with `ops.cond` where they are known only at run time
(TensorFlow signatures with a free batch size). Both give the same
values up to float rounding.
"""

from typing import Callable

import keras
from keras import ops

from keras_attention.typing import Tensor

# Multiply-adds (batch * source * dim) up to which one step's products run
# elementwise. Measured on 2 AMD EPYC cores, TensorFlow 2.21: the
# elementwise pair costs about 1 ns a multiply-add, the batched matmul
# about 85 us a call plus 0.35 ns a multiply-add, so they cross near 2^17.
ELEMENTWISE_LIMIT = 2**17

# Lower-precision dtypes keep the matmul, which accumulates in float32.
_ELEMENTWISE_DTYPES = ("float32", "float64")


def one_query_scores(query: Tensor, key: Tensor) -> Tensor:
    """Dot scores of one query per example: `(B, 1, D), (B, S, D) -> (B, 1, S)`.

    Args:
        query: `(batch_size, 1, dim)`.
        key: `(batch_size, S, dim)`.

    Returns:
        `query @ key^T`, shape `(batch_size, 1, S)`.
    """

    def elementwise():
        return ops.expand_dims(ops.sum(query * key, axis=-1), 1)

    def matmul():
        return ops.matmul(query, ops.transpose(key, (0, 2, 1)))

    return _by_size(key, elementwise, matmul)


def weighted_sum(weights: Tensor, value: Tensor) -> Tensor:
    """The context of one query per example: `(B, S), (B, S, D) -> (B, D)`.

    Args:
        weights: `(batch_size, S)`.
        value: `(batch_size, S, dim)`.

    Returns:
        `sum_j weights[:, j] * value[:, j]`, shape `(batch_size, dim)`.
    """

    def elementwise():
        return ops.sum(ops.expand_dims(weights, -1) * value, axis=1)

    def matmul():
        return ops.squeeze(ops.matmul(ops.expand_dims(weights, 1), value), 1)

    return _by_size(value, elementwise, matmul)


def _by_size(
    matrix: Tensor, elementwise: Callable[[], Tensor], matmul: Callable
) -> Tensor:
    """Runs `elementwise` when `matrix` has at most the limit's elements."""
    if keras.backend.standardize_dtype(matrix.dtype) not in _ELEMENTWISE_DTYPES:
        return matmul()
    static = tuple(matrix.shape)
    if all(isinstance(size, int) for size in static):
        size = static[0] * static[1] * static[2]
        return elementwise() if size <= ELEMENTWISE_LIMIT else matmul()
    dynamic = ops.shape(matrix)
    size = 1
    for i, dim in enumerate(static):
        size = size * (dim if isinstance(dim, int) else dynamic[i])
    return ops.cond(size <= ELEMENTWISE_LIMIT, elementwise, matmul)
