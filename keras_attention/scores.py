"""Pure attention score functions, written with `keras.ops` only.

Each function maps a batch of queries and keys to unnormalised scores of
shape `(batch_size, Tq, S)`. They own no weights: the layers in this package
hold the weights and pass them in, so the functions can be reused, tested
against numpy and composed freely.
"""

import math

from keras import ops


def dot_score(query, key, scale=None):
    """Luong "dot" score `e_ij = q_i . k_j` (Luong et al., 2015).

    Args:
        query: `(batch_size, Tq, dim)`.
        key: `(batch_size, S, dim)`.
        scale: Optional scalar multiplied into the scores.

    Returns:
        Scores of shape `(batch_size, Tq, S)`.
    """
    scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
    if scale is not None:
        scores = scores * scale
    return scores


def multiplicative_key_projection(key, kernel):
    """Projects keys for the Luong "general" score: `k W^T`.

    With `kernel` W of shape `(Dq, Dk)`, `q^T W k = q . (W k)`, so the keys can
    be projected once per memory, to `(batch_size, S, Dq)`, and each decoder
    step is then a plain dot score.
    """
    return ops.matmul(key, ops.transpose(kernel))


def additive_score(query_proj, key_proj, v, max_block_elements=None):
    """Bahdanau score `e_ij = v^T tanh(W1 k_j + W2 q_i + b)` (Bahdanau et al., 2014).

    The projections are computed by the caller: `query_proj = q W2 + b` of
    shape `(batch_size, Tq, units)` and `key_proj = k W1` of shape
    `(batch_size, S, units)`. The intermediate `tanh(...)` tensor has
    `Tq * S * units` elements per example. When that exceeds
    `max_block_elements` (and `Tq`, `S` are known when the function is
    traced), the queries are processed in blocks of rows and each block is
    rematerialised in the backward pass (`keras.remat`), so the intermediate
    memory stays within `batch_size * max_block_elements` elements (plus one
    block's worth of gradient) in the forward and the backward pass.

    Args:
        query_proj: `(batch_size, Tq, units)`.
        key_proj: `(batch_size, S, units)`.
        v: `(units,)`.
        max_block_elements: Optional bound on the number of elements, per
            example, of the intermediate tensor. `None` computes it in one
            piece.

    Returns:
        Scores of shape `(batch_size, Tq, S)`.
    """
    v_col = ops.expand_dims(v, -1)

    def block_scores(q_block, k):
        hidden = ops.tanh(ops.expand_dims(q_block, 2) + ops.expand_dims(k, 1))
        return ops.squeeze(ops.matmul(hidden, v_col), -1)

    num_queries = query_proj.shape[1]
    rows = _rows_per_block(query_proj, key_proj, max_block_elements)
    if rows is None or num_queries is None or rows >= num_queries:
        return block_scores(query_proj, key_proj)
    block_fn = _remat(block_scores)
    blocks = [
        block_fn(query_proj[:, start : start + rows], key_proj)
        for start in range(0, num_queries, rows)
    ]
    return ops.concatenate(blocks, axis=1)


def _rows_per_block(query_proj, key_proj, max_block_elements):
    """Query rows per block so that one block fits `max_block_elements`."""
    if max_block_elements is None:
        return None
    source = key_proj.shape[1]
    units = query_proj.shape[-1]
    if source is None or units is None:
        return None
    return max(1, int(max_block_elements // (source * units)))


def _remat(fn):
    from keras import remat

    return remat(fn)


def sqrt_dim_scale(dim):
    """The fixed `1 / sqrt(dim)` of scaled dot-product attention."""
    return 1.0 / math.sqrt(dim)
