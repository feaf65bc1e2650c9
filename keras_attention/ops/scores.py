"""Pure attention score functions, written with `keras.ops` only.

Each function maps a batch of queries and keys to unnormalised scores of
shape `(batch_size, Tq, S)`. They own no weights: the layers in this package
hold the weights and pass them in, so the functions can be reused, tested
against numpy and composed freely.
"""

import math
from typing import Callable
from typing import Optional
from typing import Tuple
from typing import Union

from keras import ops

from keras_attention.ops.single_query import one_query_scores
from keras_attention.typing import IntOrTensor
from keras_attention.typing import Tensor


def dot_score(
    query: Tensor, key: Tensor, scale: Optional[Union[float, Tensor]] = None
) -> Tensor:
    """Luong "dot" score `e_ij = q_i . k_j` (Luong et al., 2015).

    Args:
        query: `(batch_size, Tq, dim)`.
        key: `(batch_size, S, dim)`.
        scale: Optional scalar multiplied into the scores.

    Returns:
        Scores of shape `(batch_size, Tq, S)`.
    """
    if query.shape[1] == 1:
        scores = one_query_scores(query, key)
    else:
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
    if scale is not None:
        scores = scores * scale
    return scores


def multiplicative_key_projection(key: Tensor, kernel: Tensor) -> Tensor:
    """Projects keys for the Luong "general" score: `k W^T`.

    With `kernel` W of shape `(Dq, Dk)`, `q^T W k = q . (W k)`, so the keys can
    be projected once per memory, to `(batch_size, S, Dq)`, and each decoder
    step is then a plain dot score.
    """
    return ops.matmul(key, ops.transpose(kernel))


def additive_score(
    query_proj: Tensor,
    key_proj: Tensor,
    v: Tensor,
    max_block_elements: Optional[int] = None,
) -> Tensor:
    """Bahdanau score `e_ij = v^T tanh(W1 k_j + W2 q_i + b)`.

    Reference: Bahdanau et al., 2014.

    The projections are computed by the caller: `query_proj = q W2 + b` of
    shape `(batch_size, Tq, units)` and `key_proj = k W1` of shape
    `(batch_size, S, units)`. The `tanh(...)` term has
    `batch_size * Tq * S * units` elements, which the naive formulation
    (`keras.layers.AdditiveAttention`) materialises several times over in the
    forward and backward passes.

    Here the gradient is written by hand (`keras.ops.custom_gradient`):

        h_ij = tanh(qp_i + kp_j)
        de/dqp_i = v * sum_j g_ij (1 - h_ij^2)
        de/dkp_j = v * sum_i g_ij (1 - h_ij^2)
        de/dv    = sum_ij g_ij h_ij

    When the whole term fits in `max_block_elements` elements (or for one
    decoder step, `Tq == 1`), it is computed in one piece and kept for the
    backward pass. Otherwise it is computed in blocks of at most
    `max_block_elements` elements (groups of examples times blocks of query
    rows, at least one query row of one example, `S * units` elements),
    in a loop, and each block is recomputed in the backward pass: nothing of
    size `batch_size * Tq * S * units` is ever stored, and the blocks are
    small enough to stay in the CPU caches.

    Args:
        query_proj: `(batch_size, Tq, units)`.
        key_proj: `(batch_size, S, units)`.
        v: `(units,)`.
        max_block_elements: Optional bound on the number of elements of one
            block of the `tanh` term. `None` computes it in one piece.

    Returns:
        Scores of shape `(batch_size, Tq, S)`.
    """
    batch, num_queries, units = _dims(query_proj)
    source = _dims(key_proj)[1]
    total = _product(batch, num_queries, source, units)
    if (
        max_block_elements is None
        or (isinstance(num_queries, int) and num_queries == 1)
        or (isinstance(total, int) and total <= max_block_elements)
    ):
        return _additive_score_whole(query_proj, key_proj, v)
    return _additive_score_blocked(
        query_proj, key_proj, v, max_block_elements
    )


def additive_block_shape(
    batch: IntOrTensor,
    num_queries: IntOrTensor,
    source: IntOrTensor,
    units: IntOrTensor,
    max_block_elements: int,
) -> Tuple[IntOrTensor, IntOrTensor]:
    """Examples per group and query rows per block of the blocked score.

    A block holds `examples * rows * source * units` elements: at most
    `max_block_elements`, or one query row of one example (`source * units`)
    when that alone is larger.

    Returns:
        `(examples, rows)`, Python integers for static sizes (tensors for
        sizes only known at run time, on the TensorFlow backend).
    """
    per_row = _product(source, units)
    rows = _clip(_floordiv(max_block_elements, per_row), 1, num_queries)
    per_example = _product(num_queries, per_row)
    examples = _clip(_floordiv(max_block_elements, per_example), 1, batch)
    return examples, rows


def _block_scores(q_block: Tensor, k_block: Tensor, v: Tensor):
    hidden = ops.tanh(
        ops.expand_dims(q_block, -2) + ops.expand_dims(k_block, -3)
    )
    return hidden, ops.squeeze(ops.matmul(hidden, ops.expand_dims(v, -1)), -1)


def _block_grads(hidden: Tensor, upstream: Tensor, v: Tensor):
    """Gradients of `sum(upstream * (hidden @ v))` w.r.t. qp, kp and v."""
    units = hidden.shape[-1]
    grad_v = ops.matmul(
        ops.reshape(upstream, (1, -1)), ops.reshape(hidden, (-1, units))
    )[0]
    # sum_j g_ij (1 - h_ij^2) = sum_j g_ij - sum_j g_ij h_ij^2: one pass
    # fewer over the block than forming (1 - h^2).
    weighted = ops.expand_dims(upstream, -1) * ops.square(hidden)
    grad_q = (
        ops.expand_dims(ops.sum(upstream, axis=-1), -1)
        - ops.sum(weighted, axis=-2)
    ) * v
    grad_k = (
        ops.expand_dims(ops.sum(upstream, axis=-2), -1)
        - ops.sum(weighted, axis=-3)
    ) * v
    return grad_q, grad_k, grad_v


@ops.custom_gradient
def _additive_score_whole(query_proj: Tensor, key_proj: Tensor, v: Tensor):
    hidden, scores = _block_scores(query_proj, key_proj, v)

    def grad(*args, upstream: Optional[Tensor] = None):
        if upstream is None:
            (upstream,) = args
        return _block_grads(hidden, upstream, v)

    return scores, grad


def _additive_score_blocked(
    query_proj: Tensor, key_proj: Tensor, v: Tensor, max_block_elements: int
):
    batch, num_queries, units = _dims(query_proj)
    source = _dims(key_proj)[1]
    examples, rows = additive_block_shape(
        batch, num_queries, source, units, max_block_elements
    )
    num_groups = _ceildiv(batch, examples)
    num_blocks = _ceildiv(num_queries, rows)
    padded_batch = _product(num_groups, examples)
    padded_queries = _product(num_blocks, rows)

    def pad(x: Tensor, padded_rows: IntOrTensor, rows_now: IntOrTensor):
        # Zero rows: padded queries get zero upstream gradient, so they add
        # nothing to the key and `v` gradients; they are sliced off.
        return ops.pad(
            x, [[0, padded_batch - batch], [0, padded_rows - rows_now], [0, 0]]
        )

    def group_slices(qp: Tensor, kp: Tensor, g: IntOrTensor):
        start = g * examples
        q_g = ops.slice(qp, [start, 0, 0], [examples, padded_queries, units])
        k_g = ops.slice(kp, [start, 0, 0], [examples, source, units])
        return q_g, k_g

    def row_block(x: Tensor, j: IntOrTensor):
        return ops.slice(x, [0, j * rows, 0], [examples, rows, _dims(x)[-1]])

    row_ids = ops.reshape(ops.arange(padded_queries), (1, -1, 1))

    def place(buffer: Tensor, block: Tensor, j: IntOrTensor):
        # Writes the rows of block `j` into `buffer` (select, no scatter:
        # every backend, and the rows are only `examples * Tq` vectors).
        in_block = ops.logical_and(
            row_ids >= j * rows, row_ids < (j + 1) * rows
        )
        return ops.where(in_block, ops.tile(block, (1, num_blocks, 1)), buffer)

    @ops.custom_gradient
    def blocked(qp: Tensor, kp: Tensor, v: Tensor):
        def group_scores(g: IntOrTensor):
            q_g, k_g = group_slices(qp, kp, g)

            def body(j: IntOrTensor, carry: tuple):
                out, token = carry
                j = j + token
                _, block = _block_scores(row_block(q_g, j), k_g, v)
                return place(out, block, j), _zero_after(block)

            init = (
                ops.zeros((examples, padded_queries, source), qp.dtype),
                ops.zeros((), "int32"),
            )
            return ops.fori_loop(0, num_blocks, body, init)[0]

        scores = _sequential_map(
            group_scores,
            num_groups,
            ops.zeros((examples, padded_queries, source), qp.dtype),
        )
        scores = ops.reshape(scores, (padded_batch, padded_queries, source))

        def grad(*args, upstream: Optional[Tensor] = None):
            if upstream is None:
                (upstream,) = args
            upstream = ops.cast(upstream, qp.dtype)

            def group_grads(g: IntOrTensor):
                q_g, k_g = group_slices(qp, kp, g)
                g_g = ops.slice(
                    upstream,
                    [g * examples, 0, 0],
                    [examples, padded_queries, source],
                )

                def body(j: IntOrTensor, carry: tuple):
                    grad_q, grad_k, grad_v, token = carry
                    j = j + token
                    hidden, _ = _block_scores(row_block(q_g, j), k_g, v)
                    dq, dk, dv = _block_grads(hidden, row_block(g_g, j), v)
                    return (
                        place(grad_q, dq, j),
                        grad_k + dk,
                        grad_v + dv,
                        _zero_after(dv),
                    )

                init = (
                    ops.zeros_like(q_g),
                    ops.zeros_like(k_g),
                    ops.zeros_like(v),
                    ops.zeros((), "int32"),
                )
                return ops.fori_loop(0, num_blocks, body, init)[:3]

            grad_q, grad_k, grad_v = _sequential_map(
                group_grads,
                num_groups,
                (
                    ops.zeros((examples, padded_queries, units), qp.dtype),
                    ops.zeros((examples, source, units), qp.dtype),
                    ops.zeros_like(v),
                ),
            )
            grad_q = ops.reshape(grad_q, (padded_batch, padded_queries, units))
            grad_k = ops.reshape(grad_k, (padded_batch, source, units))
            return grad_q, grad_k, ops.sum(grad_v, axis=0)

        return scores, grad

    scores = blocked(
        pad(query_proj, padded_queries, num_queries),
        pad(key_proj, source, source),
        v,
    )
    return scores[:batch, :num_queries]


def _sequential_map(
    fn: Callable[[Tensor], Tensor], n: IntOrTensor, like: Tensor
):
    """`ops.map(fn, arange(n))` with one iteration at a time.

    `ops.map` is `tf.map_fn` on TensorFlow, which runs up to ten iterations
    at once (ten groups of blocks in memory); `ops.scan` runs them in turn.
    Its carry is the previous output (unused), which also keeps the carry
    and the outputs of the same structure, as every backend accepts.

    Args:
        fn: Callable from an int32 scalar index to a structure of tensors.
        n: Number of iterations.
        like: Zeros of the structure and shapes `fn` returns.

    Returns:
        The outputs of `fn`, stacked on a new first axis.
    """

    def step(carry: Tensor, index: Tensor):
        out = fn(index)
        return out, out

    return ops.scan(step, like, xs=ops.arange(n))[1]


def _zero_after(x: Tensor):
    """An int32 zero computed from `x`.

    Adding it to the next block's start index makes that block wait for
    this one: TensorFlow's `while_loop` would otherwise run up to ten
    iterations at once, and hold ten blocks in memory.
    """
    return ops.minimum(ops.cast(ops.any(ops.isnan(x)), "int32"), 0)


def _dims(x: Tensor):
    """Static sizes as Python integers, unknown ones as scalar tensors."""
    dynamic = ops.shape(x)
    return tuple(
        s if s is not None else dynamic[i] for i, s in enumerate(x.shape)
    )


def _product(*sizes):
    out = 1
    for size in sizes:
        out = out * size
    return out


def _floordiv(a: IntOrTensor, b: IntOrTensor):
    return a // b


def _ceildiv(a: IntOrTensor, b: IntOrTensor):
    return (a + b - 1) // b


def _clip(x: IntOrTensor, low: int, high: IntOrTensor):
    if isinstance(x, int) and isinstance(high, int):
        return max(low, min(x, high))
    dtype = (high if isinstance(x, int) else x).dtype
    return ops.clip(ops.cast(x, dtype), low, ops.cast(high, dtype))


def sqrt_dim_scale(dim: int) -> float:
    """The fixed `1 / sqrt(dim)` of scaled dot-product attention."""
    return 1.0 / math.sqrt(dim)
