"""Greedy and beam search decoding of a step function, inside the graph.

Both decoders drive any step function

    log_probs, new_state, attention = step_fn(tokens, state)

with `tokens` int32 `(batch_size,)`, `state` any nested structure (dict,
tuple, list) of tensors that all have a leading batch dimension (the encoder
memory, its projected keys and its mask travel inside the state),
`log_probs` `(batch_size, vocab_size)` and `attention` `(batch_size, S)` (or
any `(batch_size, ...)` shape, or `None`). The whole decode loop is a
`keras.ops.while_loop`, so it runs eagerly, inside a `tf.function`, in an
exported SavedModel (one request per sentence, not per token) and on the
JAX and PyTorch backends.

The decoders return a dict:

- `tokens`: int32 `(batch_size, L)`, the chosen hypothesis of each
  sentence, `pad_token` after its end.
- `lengths`: int32 `(batch_size,)`, the number of tokens of each hypothesis,
  end token included (when it was produced).
- `scores`: float32 `(batch_size,)`, the score the decoder ranked by: the
  sum of the log-probabilities for greedy decoding, that sum divided by the
  GNMT length penalty for beam search.
- `log_probs`: float32 `(batch_size,)`, the sum of the log-probabilities of
  the hypothesis' tokens.
- `attention`: float32 `(batch_size, L, S)`, the attention weights the step
  function returned while producing each token of the chosen hypothesis
  (zeros after its end), or `None` when the step function returns `None`.

`L` is the number of steps that ran: the length of the longest hypothesis,
at most `max_length`. (On JAX under `jit`, where shapes must be static, the
outputs keep `L = max_length`.)

Reference:
    - [Wu et al., 2016](https://arxiv.org/abs/1609.08144) (GNMT, length
      penalty)
"""

import numbers

import keras
from keras import ops

from keras_attention.base_attention import _shape_str

# A log-probability that no real hypothesis reaches; finite, so that sums,
# differences and divisions never produce NaN.
NEG_INF = -1e9


def length_penalty(lengths, alpha):
    """GNMT length penalty `lp(Y) = ((5 + |Y|) / 6) ** alpha`.

    Beam search ranks hypotheses by `log P(Y) / lp(Y)`; `alpha = 0` ranks by
    the plain log-probability, larger `alpha` favours longer hypotheses.

    Reference:
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144), eq. 14

    Args:
        lengths: Integer tensor, hypothesis lengths (end token included).
        alpha: Non-negative float.

    Returns:
        float32 tensor of the shape of `lengths`.
    """
    lengths = ops.cast(lengths, "float32")
    return ops.power((5.0 + lengths) / 6.0, alpha)


def tile_state(state, multiplier):
    """Repeats every tensor of a nested state `multiplier` times on axis 0.

    Entry `b` of the batch becomes entries `b * multiplier` to
    `b * multiplier + multiplier - 1`, the layout beam search uses. Beam
    search calls this itself; it is public for step functions that need to
    tile something of their own.

    Args:
        state: Nested structure of tensors with a leading batch dimension.
        multiplier: Positive Python integer.

    Returns:
        The same structure, every tensor of shape
        `(batch_size * multiplier, ...)`.
    """
    if (
        isinstance(multiplier, bool)
        or not isinstance(multiplier, numbers.Integral)
        or multiplier < 1
    ):
        raise ValueError(
            "`multiplier` must be a positive integer. "
            f"Received: multiplier={multiplier!r}"
        )
    return keras.tree.map_structure(
        lambda x: ops.repeat(x, int(multiplier), axis=0), state
    )


# ----------------------------------------------------------------------
# Input validation.


def _check_positive_int(name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 1
    ):
        raise ValueError(
            f"`{name}` must be a positive integer. Received: {name}={value!r}"
        )
    return int(value)


def _start_tokens(start_tokens, initial_state):
    """`start_tokens` as int32 `(batch_size,)`; a scalar is broadcast."""
    tokens = ops.convert_to_tensor(start_tokens)
    dtype = keras.backend.standardize_dtype(tokens.dtype)
    if "int" not in dtype:
        raise ValueError(
            "`start_tokens` must be integer token ids. Received: "
            f"start_tokens.dtype={dtype}"
        )
    tokens = ops.cast(tokens, "int32")
    if len(tokens.shape) == 1:
        return tokens
    if len(tokens.shape) != 0:
        raise ValueError(
            "`start_tokens` must be a scalar or have shape (batch_size,). "
            f"Received: start_tokens.shape={_shape_str(tokens.shape)}"
        )
    leaves = keras.tree.flatten(initial_state)
    if not leaves:
        raise ValueError(
            "A scalar `start_tokens` needs a non-empty `initial_state` to "
            "read the batch size from. Received: initial_state="
            f"{initial_state!r}"
        )
    batch_size = ops.shape(leaves[0])[0]
    return ops.broadcast_to(tokens, (batch_size,))


def _check_state(state, tokens):
    batch = tokens.shape[0]
    for path, leaf in keras.tree.flatten_with_path(state):
        shape = tuple(leaf.shape)
        if len(shape) == 0:
            raise ValueError(
                "Every tensor of `initial_state` must have a leading batch "
                f"dimension. Received: initial_state{list(path)}.shape=()"
            )
        if batch is not None and shape[0] is not None and shape[0] != batch:
            raise ValueError(
                "Every tensor of `initial_state` must have the batch size "
                f"of `start_tokens`, ({batch}, ...). Received: "
                f"initial_state{list(path)}.shape={_shape_str(shape)}"
            )


def _beam_width(beam_width):
    """A Python int (checked), or an int32 scalar tensor at least 1."""
    if isinstance(beam_width, numbers.Integral) or isinstance(
        beam_width, (bool, float)
    ):
        return _check_positive_int("beam_width", beam_width)
    width = ops.convert_to_tensor(beam_width)
    dtype = keras.backend.standardize_dtype(width.dtype)
    if "int" not in dtype or len(width.shape) != 0:
        raise ValueError(
            "`beam_width` must be a positive integer or a scalar integer "
            f"tensor. Received: beam_width.dtype={dtype}, "
            f"beam_width.shape={_shape_str(width.shape)}"
        )
    return ops.maximum(ops.cast(width, "int32"), 1)


def _length_limits(max_length):
    """Returns `(bound, limits)`: the number of steps at most, and `None` or
    the int32 `(batch_size,)` per-sentence limits."""
    if isinstance(max_length, numbers.Integral) and not isinstance(
        max_length, bool
    ):
        return _check_positive_int("max_length", max_length), None
    if isinstance(max_length, (bool, float)):
        raise ValueError(
            "`max_length` must be a positive integer or an integer tensor. "
            f"Received: max_length={max_length!r}"
        )
    limits = ops.convert_to_tensor(max_length)
    dtype = keras.backend.standardize_dtype(limits.dtype)
    if "int" not in dtype:
        raise ValueError(
            "`max_length` must be a positive integer or an integer tensor. "
            f"Received: max_length.dtype={dtype}"
        )
    limits = ops.maximum(ops.cast(limits, "int32"), 1)
    if len(limits.shape) == 0:
        return limits, None
    if len(limits.shape) == 1:
        return ops.max(limits), limits
    raise ValueError(
        "`max_length` must be a scalar or have shape (batch_size,). "
        f"Received: max_length.shape={_shape_str(limits.shape)}"
    )


def _checked_step(step_fn, from_logits, token_ids):
    """Wraps `step_fn`: validates its outputs, casts to float32.

    `token_ids` maps argument names to the token ids (`end_token`, ...)
    that must be in the vocabulary.
    """

    def step(tokens, state):
        outputs = step_fn(tokens, state)
        if not isinstance(outputs, (tuple, list)) or len(outputs) != 3:
            raise ValueError(
                "`step_fn(tokens, state)` must return a tuple "
                "(log_probs, new_state, attention). Received: "
                f"{type(outputs).__name__} {outputs!r:.200}"
            )
        log_probs, new_state, attention = outputs
        # A while loop needs the exact structure of the state back (a cell
        # may return a list for a tuple).
        leaves, new_leaves = (
            keras.tree.flatten(state),
            keras.tree.flatten(new_state),
        )
        if len(leaves) != len(new_leaves):
            raise ValueError(
                "`step_fn` must return a new state with the structure of "
                f"its state argument ({len(leaves)} tensors). Received "
                f"{len(new_leaves)} tensors: new_state={new_state!r:.200}"
            )
        new_state = keras.tree.pack_sequence_as(state, new_leaves)
        batch = tokens.shape[0]
        if len(log_probs.shape) != 2 or (
            batch is not None
            and log_probs.shape[0] is not None
            and log_probs.shape[0] != batch
        ):
            raise ValueError(
                "`step_fn` must return log_probs of shape "
                f"({batch}, vocab_size). Received: "
                f"log_probs.shape={_shape_str(log_probs.shape)}"
            )
        vocab_size = log_probs.shape[1]
        for name, value in token_ids.items():
            if (
                isinstance(value, int)
                and vocab_size is not None
                and not (0 <= value < vocab_size)
            ):
                raise ValueError(
                    f"`{name}` must be a token id in [0, {vocab_size}), the "
                    "vocabulary of the log_probs of `step_fn`. Received: "
                    f"{name}={value}, log_probs.shape="
                    f"{_shape_str(log_probs.shape)}"
                )
        log_probs = ops.cast(log_probs, "float32")
        if from_logits:
            log_probs = ops.log_softmax(log_probs, axis=-1)
        if attention is not None:
            if len(attention.shape) < 2 or (
                batch is not None
                and attention.shape[0] is not None
                and attention.shape[0] != batch
            ):
                raise ValueError(
                    "`step_fn` must return attention of shape "
                    f"({batch}, S) or None. Received: "
                    f"attention.shape={_shape_str(attention.shape)}"
                )
            attention = ops.cast(attention, "float32")
        return log_probs, new_state, attention

    return step


# ----------------------------------------------------------------------
# Output buffers: one row per hypothesis, one column per step.


def _new_buffers(num_rows, bound, pad_token, attention):
    """`(tokens,)` or `(tokens, attention)`: no `None` in the loop vars."""
    tokens = ops.full((num_rows, bound), pad_token, dtype="int32")
    if attention is None:
        return (tokens,)
    trailing = tuple(ops.shape(attention)[1:])
    attn = ops.zeros((num_rows, bound) + trailing, dtype="float32")
    return tokens, attn


def _unpack(buffers):
    return buffers[0], (buffers[1] if len(buffers) == 2 else None)


def _write(buffers, t, tokens, attention):
    """Writes column `t` of the buffers.

    With `ops.scatter_update` (`TensorScatterUpdate` on TensorFlow), not
    `ops.slice_update`, which is an XLA op there (`XlaDynamicUpdateSlice`)
    that an exported SavedModel would then need wherever it is served; a
    select over the whole buffer would cost `O(L)` per row and step.
    """
    out_tokens, out_attn = _unpack(buffers)
    rows = ops.arange(ops.shape(out_tokens)[0], dtype="int32")
    index = ops.stack([rows, ops.full_like(rows, t)], axis=1)  # (rows, 2)
    out_tokens = ops.scatter_update(out_tokens, index, tokens)
    if out_attn is None:
        return (out_tokens,)
    return out_tokens, ops.scatter_update(out_attn, index, attention)


def _zero_rows(attention, rows_done):
    if attention is None:
        return None
    mask = ops.reshape(rows_done, (-1,) + (1,) * (len(attention.shape) - 1))
    return ops.where(mask, 0.0, attention)


def _is_traced_on_jax(value):
    if keras.backend.backend() != "jax":
        return False
    import jax

    return isinstance(value, jax.core.Tracer)


def _trim(tensor, steps):
    """Keeps the first `steps` columns, where shapes may be dynamic."""
    if tensor is None or _is_traced_on_jax(steps):
        return tensor
    return tensor[:, :steps]


def _check_tokens_arg(name, value):
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    tensor = ops.convert_to_tensor(value)
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    if len(tensor.shape) != 0 or "int" not in dtype:
        raise ValueError(
            f"`{name}` must be an integer token id. Received: {name}={value!r}"
        )
    return ops.cast(tensor, "int32")


def _reached_limit(t, limits):
    """Whether the token written at step `t` was the last one allowed."""
    if limits is None:
        return None
    return t + 1 >= limits


# ----------------------------------------------------------------------
# Greedy decoding.


def greedy_decode(
    step_fn,
    start_tokens,
    initial_state,
    end_token,
    max_length,
    pad_token=None,
    from_logits=False,
):
    """Greedy decoding: at every step, feeds back the most probable token.

    `y_t = argmax_v log p(v | y_<t, x)` until the end token or the length
    limit. The loop is a `keras.ops.while_loop` that stops as soon as every
    sentence has ended, so it runs inside a `tf.function` and exports to a
    SavedModel.

    Args:
        step_fn: Callable `(tokens, state) -> (log_probs, new_state,
            attention)`, see the module docstring. Sentences that have ended
            keep being fed `pad_token`; their outputs are ignored.
        start_tokens: int `(batch_size,)` tensor, or a scalar token id used
            for every sentence, the first input of `step_fn`.
        initial_state: Nested structure of tensors, each of shape
            `(batch_size, ...)`.
        end_token: Integer token id (or scalar tensor) that ends a sentence.
        max_length: Maximum number of tokens of a hypothesis: a Python
            integer, a scalar integer tensor, or an int `(batch_size,)`
            tensor of per-sentence limits, e.g. relative to the source
            length: `2 * source_lengths + 10`. On JAX under `jit` pass a
            Python integer.
        pad_token: Token written after the end of a hypothesis. Defaults to
            `end_token`.
        from_logits: If `True`, `step_fn` returns logits and the decoder
            applies `log_softmax`. Defaults to `False`.

    Returns:
        A dict with `tokens` `(batch_size, L)`, `lengths`, `scores`,
        `log_probs` (both the sum of log-probabilities here) and `attention`
        `(batch_size, L, S)`, see the module docstring.

    Raises:
        ValueError: on a non-positive `max_length`, a state tensor without
            the batch dimension, or step outputs of the wrong shape.

    Example:

    ```python
    def step_fn(tokens, state):
        logits, state, weights = decoder_step(tokens, state)
        return ops.log_softmax(logits), state, weights

    out = keras_attention.decoding.greedy_decode(
        step_fn, start_tokens=ops.full((batch,), START, "int32"),
        initial_state=state, end_token=END, max_length=50)
    out["tokens"], out["attention"]
    ```
    """
    start = _start_tokens(start_tokens, initial_state)
    _check_state(initial_state, start)
    end_token = _check_tokens_arg("end_token", end_token)
    pad_token = (
        end_token
        if pad_token is None
        else _check_tokens_arg("pad_token", pad_token)
    )
    bound, limits = _length_limits(max_length)
    step = _checked_step(
        step_fn,
        from_logits,
        {"end_token": end_token, "pad_token": pad_token},
    )

    def update(t, log_probs, attention, finished, lengths, scores, buffers):
        next_tokens = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
        next_tokens = ops.where(finished, pad_token, next_tokens)
        chosen = ops.take_along_axis(
            log_probs, ops.expand_dims(next_tokens, 1), axis=1
        )[:, 0]
        scores = scores + ops.where(finished, 0.0, chosen)
        lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        buffers = _write(
            buffers, t, next_tokens, _zero_rows(attention, finished)
        )
        done = ops.logical_or(finished, ops.equal(next_tokens, end_token))
        at_limit = _reached_limit(t, limits)
        if at_limit is not None:
            done = ops.logical_or(done, at_limit)
        return next_tokens, done, lengths, scores, buffers

    # Step 0 runs outside the loop: its outputs give the attention shape.
    log_probs, state, attention = step(start, initial_state)
    num_rows = ops.shape(start)[0]
    buffers = _new_buffers(num_rows, bound, pad_token, attention)
    zero = ops.convert_to_tensor(0, dtype="int32")
    tokens, finished, lengths, scores, buffers = update(
        zero,
        log_probs,
        attention,
        ops.zeros((num_rows,), dtype="bool"),
        ops.zeros((num_rows,), dtype="int32"),
        ops.zeros((num_rows,), dtype="float32"),
        buffers,
    )

    def cond(t, tokens, state, finished, lengths, scores, buffers):
        return ops.logical_and(t < bound, ops.logical_not(ops.all(finished)))

    def body(t, tokens, state, finished, lengths, scores, buffers):
        log_probs, new_state, attention = step(tokens, state)
        tokens, finished, lengths, scores, buffers = update(
            t, log_probs, attention, finished, lengths, scores, buffers
        )
        return t + 1, tokens, new_state, finished, lengths, scores, buffers

    t, _, _, _, lengths, scores, buffers = ops.while_loop(
        cond,
        body,
        (zero + 1, tokens, state, finished, lengths, scores, buffers),
    )
    out_tokens, out_attn = _unpack(buffers)
    return {
        "tokens": _trim(out_tokens, t),
        "lengths": lengths,
        "scores": scores,
        "log_probs": scores,
        "attention": _trim(out_attn, t),
    }


# ----------------------------------------------------------------------
# Beam search.


def beam_search_decode(
    step_fn,
    start_tokens,
    initial_state,
    end_token,
    max_length,
    beam_width=4,
    length_penalty=0.6,
    pad_token=None,
    from_logits=False,
    return_all_beams=False,
):
    """Beam search with GNMT length normalisation, inside the graph.

    Keeps the `beam_width` best partial hypotheses of every sentence. At each
    step every hypothesis is extended by every token, and the `beam_width`
    best extensions by

        score(Y) = log P(Y | X) / lp(Y),   lp(Y) = ((5 + |Y|) / 6) ** alpha

    survive (`|Y|` counts the end token). A hypothesis that produced the end
    token is finished: it only extends with `pad_token` at zero cost, so it
    keeps its score and competes with the live ones. The search stops when
    all hypotheses are finished or at the length limit; the best one by
    `score` is returned.

    The state is tiled by the decoder itself (every tensor of
    `initial_state` is repeated `beam_width` times on its batch axis, see
    `tile_state`) and reordered with the beams' back-pointers at every step,
    so the step function sees an ordinary batch of `batch_size * beam_width`
    rows and the attention of each hypothesis follows it. Sentences of the
    batch never influence one another.

    Reference:
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144) (GNMT)

    Args:
        step_fn: Callable `(tokens, state) -> (log_probs, new_state,
            attention)`, see the module docstring. It is called with
            `batch_size * beam_width` rows (the first call, before the beams
            differ, with `batch_size` rows).
        start_tokens: int `(batch_size,)` tensor, or a scalar token id.
        initial_state: Nested structure of tensors, each of shape
            `(batch_size, ...)`, not tiled.
        end_token: Integer token id (or scalar tensor) that ends a sentence.
        max_length: Python integer, scalar integer tensor, or int
            `(batch_size,)` tensor of per-sentence limits (e.g.
            `2 * source_lengths + 10`). On JAX under `jit` pass a Python
            integer.
        beam_width: Positive Python integer, `1` gives greedy decoding; or,
            on TensorFlow, a scalar int tensor, so that one exported
            signature takes the width as an input (values below 1 count as
            1). Defaults to `4`.
        length_penalty: Non-negative float, GNMT's `alpha`. `0` ranks by
            log-probability. Defaults to `0.6`.
        pad_token: Token written after the end of a hypothesis. Defaults to
            `end_token`.
        from_logits: If `True`, `step_fn` returns logits and the decoder
            applies `log_softmax`. Defaults to `False`.
        return_all_beams: If `True`, the dict also holds `beam_tokens`
            `(batch_size, beam_width, L)`, `beam_lengths`, `beam_scores`,
            `beam_log_probs` `(batch_size, beam_width)` and `beam_attention`
            `(batch_size, beam_width, L, S)`, best hypothesis first.
            Defaults to `False`.

    Returns:
        A dict with `tokens` `(batch_size, L)`, `lengths`, `scores` (the
        length-normalised score), `log_probs` and `attention`
        `(batch_size, L, S)` of the best hypothesis, see the module
        docstring.

    Raises:
        ValueError: on a non-positive `beam_width` or `max_length`, a
            negative `length_penalty`, a state tensor without the batch
            dimension, or step outputs of the wrong shape.

    Example:

    ```python
    out = keras_attention.decoding.beam_search_decode(
        step_fn, start_tokens=ops.full((batch,), START, "int32"),
        initial_state=state, end_token=END,
        max_length=2 * source_lengths + 10, beam_width=5)
    out["tokens"], out["scores"], out["attention"]
    ```
    """
    beam_width = _beam_width(beam_width)
    if (
        isinstance(length_penalty, bool)
        or not isinstance(length_penalty, numbers.Real)
        or length_penalty < 0
    ):
        raise ValueError(
            "`length_penalty` must be a non-negative float. "
            f"Received: length_penalty={length_penalty!r}"
        )
    alpha = float(length_penalty)
    start = _start_tokens(start_tokens, initial_state)
    _check_state(initial_state, start)
    end_token = _check_tokens_arg("end_token", end_token)
    pad_token = (
        end_token
        if pad_token is None
        else _check_tokens_arg("pad_token", pad_token)
    )
    bound, limits = _length_limits(max_length)
    if limits is not None:
        limits = ops.repeat(limits, beam_width, axis=0)
    step = _checked_step(
        step_fn,
        from_logits,
        {"end_token": end_token, "pad_token": pad_token},
    )
    k = beam_width

    # Step 0 on the untiled batch (all beams of a sentence would be equal),
    # then tile everything. Only beam 0 of each sentence is alive at first,
    # so the first top-k does not pick the same token from copies.
    log_probs, state, attention = step(start, initial_state)
    batch_size = ops.shape(start)[0]
    num_rows = batch_size * k
    log_probs = ops.repeat(log_probs, k, axis=0)
    state = keras.tree.map_structure(lambda x: ops.repeat(x, k, axis=0), state)
    if attention is not None:
        attention = ops.repeat(attention, k, axis=0)
    first_beam = ops.equal(ops.arange(k, dtype="int32"), 0)
    cum_log_probs = ops.tile(ops.where(first_beam, 0.0, NEG_INF), (batch_size,))
    buffers = _new_buffers(num_rows, bound, pad_token, attention)
    # Row offsets of each sentence's beams, to turn back-pointers into rows.
    offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * k, 1)

    def update(t, log_probs, attention, state, cum, finished, lengths, buffers):
        vocab_size = ops.shape(log_probs)[1]
        # A finished hypothesis extends only with `pad_token`, at zero cost.
        vocab = ops.arange(vocab_size, dtype="int32")
        pad_only = ops.where(ops.equal(vocab, pad_token), 0.0, NEG_INF)
        log_probs = ops.where(
            ops.expand_dims(finished, 1),
            ops.expand_dims(pad_only, 0),
            log_probs,
        )
        total = ops.expand_dims(cum, 1) + log_probs  # (rows, vocab)
        new_lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        normalised = total / ops.expand_dims(
            length_penalty_fn(new_lengths, alpha), 1
        )
        _, best = ops.top_k(
            ops.reshape(normalised, (-1, k * vocab_size)), k, sorted=True
        )
        best = ops.cast(best, "int32")  # (batch_size, k)
        parent = best // vocab_size
        next_tokens = ops.reshape(best % vocab_size, (-1,))
        rows = ops.reshape(parent + offsets, (-1,))
        cum = ops.reshape(
            ops.take_along_axis(
                ops.reshape(total, (-1, k * vocab_size)), best, axis=1
            ),
            (-1,),
        )
        parent_finished = ops.take(finished, rows, axis=0)
        lengths = ops.take(new_lengths, rows, axis=0)
        out_tokens, out_attn = _unpack(buffers)
        out_tokens = ops.take(out_tokens, rows, axis=0)
        if out_attn is not None:
            out_attn = ops.take(out_attn, rows, axis=0)
            attention = _zero_rows(
                ops.take(attention, rows, axis=0), parent_finished
            )
        buffers = (out_tokens,) if out_attn is None else (out_tokens, out_attn)
        buffers = _write(buffers, t, next_tokens, attention)
        state = keras.tree.map_structure(
            lambda x: ops.take(x, rows, axis=0), state
        )
        done = ops.logical_or(
            parent_finished, ops.equal(next_tokens, end_token)
        )
        at_limit = _reached_limit(t, limits)
        if at_limit is not None:
            done = ops.logical_or(done, at_limit)
        return next_tokens, state, cum, done, lengths, buffers

    zero = ops.convert_to_tensor(0, dtype="int32")
    tokens, state, cum, finished, lengths, buffers = update(
        zero,
        log_probs,
        attention,
        state,
        cum_log_probs,
        ops.zeros((num_rows,), dtype="bool"),
        ops.zeros((num_rows,), dtype="int32"),
        buffers,
    )

    def cond(t, tokens, state, cum, finished, lengths, buffers):
        return ops.logical_and(t < bound, ops.logical_not(ops.all(finished)))

    def body(t, tokens, state, cum, finished, lengths, buffers):
        log_probs, new_state, attention = step(tokens, state)
        tokens, state, cum, finished, lengths, buffers = update(
            t,
            log_probs,
            attention,
            new_state,
            cum,
            finished,
            lengths,
            buffers,
        )
        return t + 1, tokens, state, cum, finished, lengths, buffers

    t, _, _, cum, _, lengths, buffers = ops.while_loop(
        cond,
        body,
        (zero + 1, tokens, state, cum, finished, lengths, buffers),
    )
    out_tokens, out_attn = _unpack(buffers)
    out_tokens = _trim(out_tokens, t)
    out_attn = _trim(out_attn, t)
    scores = cum / length_penalty_fn(lengths, alpha)

    # The last top-k sorted each sentence's beams by their final score, so
    # beam 0 is the best one.
    def per_beam(x):
        if x is None:
            return None
        return ops.reshape(x, (batch_size, k) + tuple(ops.shape(x)[1:]))

    def top_beam(x):
        return None if x is None else per_beam(x)[:, 0]

    result = {
        "tokens": top_beam(out_tokens),
        "lengths": top_beam(lengths),
        "scores": top_beam(scores),
        "log_probs": top_beam(cum),
        "attention": top_beam(out_attn),
    }
    if return_all_beams:
        result.update(
            {
                "beam_tokens": per_beam(out_tokens),
                "beam_lengths": per_beam(lengths),
                "beam_scores": per_beam(scores),
                "beam_log_probs": per_beam(cum),
                "beam_attention": per_beam(out_attn),
            }
        )
    return result


# `beam_search_decode` has an argument named `length_penalty`.
length_penalty_fn = length_penalty
