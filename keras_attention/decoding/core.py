"""The decode loop that every decoder shares, and its argument checks.

`run_loop` owns what all decoders have in common: the first step (outside
the loop, it gives the attention shape), the tiling of rows for beams, the
output buffers, prefix forcing, the end-token and length-limit bookkeeping,
the `keras.ops.while_loop` and the trimming of the outputs. A decoder gives
it one `choose` function that picks the next token of every row (and, for
beam search, the row each new hypothesis comes from).
"""

from typing import Any
from typing import Callable
from typing import Optional
from typing import Tuple

import keras
import numpy as np
from keras import ops

from keras_attention.checks import check_int
from keras_attention.checks import concrete_value
from keras_attention.decoding import args
from keras_attention.decoding.args import NEG_INF
from keras_attention.decoding.args import length_limits
from keras_attention.decoding.state import gather
from keras_attention.decoding.state import take_rows
from keras_attention.decoding.state import tile_state
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor

# ----------------------------------------------------------------------
# Output buffers: one row per hypothesis, one column per step. A tuple
# `(tokens,)` or `(tokens, attention)`: no `None` in the loop variables.


def _new_buffers(
    num_rows: IntOrTensor,
    width: IntOrTensor,
    pad_token: IntOrTensor,
    attention: Optional[Tensor],
):
    tokens = ops.full((num_rows, width), pad_token, dtype="int32")
    if attention is None:
        return (tokens,)
    trailing = tuple(ops.shape(attention)[1:])
    return tokens, ops.zeros((num_rows, width) + trailing, dtype="float32")


def _write_index(num_rows: IntOrTensor) -> Callable[[Tensor], Tensor]:
    """`index(t)`: the int32 `(num_rows, 2)` scatter indices of column `t`
    (`[row, t]` for every row). The rows are made once, before the loop;
    a step adds `t` to the second column (two ops)."""
    rows = ops.arange(num_rows, dtype="int32")
    base = ops.stack([rows, ops.zeros_like(rows)], axis=1)
    unit = ops.convert_to_tensor(np.array([0, 1], dtype="int32"))
    return lambda t: base + t * unit


def _write(
    buffers: tuple, index: Tensor, tokens: Tensor, attention: Optional[Tensor]
):
    """Writes one column of the buffers, at `index` (`_write_index`).

    With `ops.scatter_update` (`TensorScatterUpdate` on TensorFlow), not
    `ops.slice_update`, which is an XLA op there (`XlaDynamicUpdateSlice`)
    that an exported SavedModel would then need wherever it is served; a
    select over the whole buffer would cost `O(L)` per row and step.
    """
    written = (ops.scatter_update(buffers[0], index, tokens),)
    if len(buffers) == 2:
        written += (ops.scatter_update(buffers[1], index, attention),)
    return written


def zero_rows(tensor: Optional[Tensor], rows: Tensor) -> Optional[Tensor]:
    """`tensor` with the rows where `rows` (bool `(num_rows,)`) is set
    zeroed; `None` stays `None`."""
    if tensor is None:
        return None
    mask = ops.reshape(rows, (-1,) + (1,) * (len(tensor.shape) - 1))
    return ops.where(mask, 0.0, tensor)


def _gather_moved(state: NestedTensor, rows: Tensor, given: NestedTensor):
    """Re-gathers the leaves of `state` that the step changed.

    A leaf the step returned as is (the very tensor of `given`, its state
    argument: the memory, keys and mask of an attention wrapper) is the
    same in every copy of a sentence: tiled once, never changed. Gathering
    it within its sentence (as `rows` do) would copy it unchanged, at
    every step: the largest tensors of the state, for nothing.
    """
    given = keras.tree.flatten(given)
    leaves = keras.tree.flatten(state)
    if len(given) != len(leaves):
        given = [None] * len(leaves)
    gathered = [
        leaf if leaf is old else take_rows(leaf, rows)
        for leaf, old in zip(leaves, given)
    ]
    return keras.tree.pack_sequence_as(state, gathered)


def _is_traced_on_jax(value: Any):
    if keras.backend.backend() != "jax":
        return False
    import jax

    return isinstance(value, jax.core.Tracer)


def _trim(tensor: Optional[Tensor], steps: IntOrTensor):
    """Keeps the first `steps` columns, where shapes may be dynamic."""
    if tensor is None or _is_traced_on_jax(steps):
        return tensor
    return tensor[:, :steps]


def prefix_tokens(
    t: Tensor, prefix: Tuple[Tensor, Tensor]
) -> Tuple[Tensor, Tensor]:
    """`(forced, inside)`: the prefix token of every row at step `t`, and
    whether the row is still inside its prefix (bool `(rows,)`)."""
    tokens, lengths = prefix
    column = ops.minimum(t, ops.shape(tokens)[1] - 1)
    return gather(tokens, column, axis=1), t < lengths


def _force_prefix(
    log_probs: Tensor, vocab: Tensor, forced: Tensor, inside: Tensor
):
    """Rows still inside their prefix keep only the prefix token.

    `vocab`: int32 `(1, vocab_size)`, the token ids (made before the
    loop); `forced, inside` of `prefix_tokens`."""
    keep = ops.logical_or(
        ops.equal(vocab, ops.expand_dims(forced, 1)),
        ops.expand_dims(ops.logical_not(inside), 1),
    )
    return ops.where(keep, log_probs, args.FORBIDDEN)


def _pad_row(vocab: Tensor, pad_token: IntOrTensor) -> Tensor:
    """float32 `(1, vocab_size)`: the log-probs of a finished row, which
    extends only with `pad_token`, at zero cost (made before the loop)."""
    return ops.where(ops.equal(vocab, pad_token), 0.0, NEG_INF)


def check_forbidden_tokens(forbidden_tokens: Any) -> tuple:
    """`forbidden_tokens` as a tuple of non-negative Python ints."""
    if forbidden_tokens is None:
        return ()
    try:
        items = list(forbidden_tokens)
    except TypeError:
        items = None
    if items is None or isinstance(forbidden_tokens, (str, bytes)):
        raise ValueError(
            "`forbidden_tokens` must be a sequence of token ids. Received: "
            f"forbidden_tokens={forbidden_tokens!r:.80}"
        )
    return tuple(
        check_int(f"forbidden_tokens[{i}]", item, low=0)
        for i, item in enumerate(items)
    )


def allowed_tokens(
    forbidden: tuple, vocab_size: IntOrTensor, end_token: IntOrTensor
) -> Optional[Tensor]:
    """bool `(vocab_size,)`: the tokens a hypothesis may hold, `None` where
    none is forbidden. Made once, before the loop (a constant where the
    vocabulary size is static): the steps only read it.

    Raises a `ValueError` for a forbidden id outside a static vocabulary,
    or the end token (a hypothesis could never end).
    """
    if not forbidden:
        return None
    if isinstance(end_token, int) and end_token in forbidden:
        raise ValueError(
            "`forbidden_tokens` must not hold `end_token`: no hypothesis "
            f"could end. Received: forbidden_tokens={list(forbidden)}, "
            f"end_token={end_token}"
        )
    if isinstance(vocab_size, int):
        if max(forbidden) >= vocab_size:
            raise ValueError(
                f"`forbidden_tokens` must be token ids in [0, {vocab_size}), "
                "the vocabulary of the log_probs of `step_fn`. Received: "
                f"forbidden_tokens={list(forbidden)}"
            )
        mask = np.ones((vocab_size,), dtype=bool)
        mask[list(forbidden)] = False
        return ops.convert_to_tensor(mask)
    vocab = ops.arange(vocab_size, dtype="int32")
    ids = ops.convert_to_tensor(list(forbidden), dtype="int32")
    return ops.logical_not(
        ops.any(ops.equal(ops.expand_dims(vocab, 1), ids), axis=1)
    )


def _forbid(log_probs: Tensor, allowed: Tensor, inside: Optional[Tensor]):
    """The forbidden tokens below every other token (`FORBIDDEN`: under
    the `NEG_INF` of dead or finished beams too, so a beam search that runs
    out of live hypotheses fills its beams with those first); rows inside
    their prefix (`inside`, or `None` without a prefix) keep their prefix
    token whatever it is. `allowed`: bool `(1, vocab_size)`."""
    keep = allowed
    if inside is not None:
        keep = ops.logical_or(keep, ops.expand_dims(inside, 1))
    return ops.where(keep, log_probs, args.FORBIDDEN)


def buffer_width(
    bound: IntOrTensor, static_max_length: Optional[int]
) -> IntOrTensor:
    """Columns of the decode buffers: the static width where there is one,
    else the bound; at least one, for the write of step 0."""
    if static_max_length is not None:
        return max(int(static_max_length), 1)
    return max(bound, 1) if isinstance(bound, int) else ops.maximum(bound, 1)


def static_limits(
    static_max_length: Optional[int],
    bound: IntOrTensor,
    limits: Optional[Tensor],
) -> Tuple[IntOrTensor, Optional[Tensor]]:
    """`(bound, limits)` of `length_limits` within a static buffer width.

    Raises a `ValueError` where a limit is known to exceed
    `static_max_length`; inside a traced function (values unknown) limits
    above it count as it, as the docs of the decoders say.
    """
    static = check_int("static_max_length", static_max_length, low=0)
    known = concrete_value(bound)
    if known is not None and int(known) > static:
        raise ValueError(
            "`max_length` must be at most `static_max_length`, the width of "
            f"the output buffers. Received: max_length={int(known)} (at "
            f"most), static_max_length={static}"
        )
    if isinstance(bound, int):
        return bound, limits
    bound = ops.minimum(bound, static)
    return bound, None if limits is None else ops.minimum(limits, static)


def run_loop(
    step: StepFn,
    start_tokens: Tensor,
    initial_state: NestedTensor,
    choose: Callable[..., tuple],
    init_extras: Callable[[IntOrTensor, Optional[Tensor]], dict],
    end_token: IntOrTensor,
    pad_token: IntOrTensor,
    max_length: IntOrTensor,
    copies: IntOrTensor = 1,
    prefix: Optional[Tuple[Tensor, Tensor]] = None,
    pad_finished: bool = True,
    static_max_length: Optional[int] = None,
    forbidden_tokens: tuple = (),
    prepare: Optional[Callable[[IntOrTensor, IntOrTensor], None]] = None,
    constrain: bool = True,
) -> dict:
    """Runs a decode loop; returns every row's outputs.

    What does not change from step to step (the token ids, the masks of
    the forbidden and the pad tokens, the scatter indices of the buffers)
    is made once, before the loop: the loop body holds the per-step work
    only (tests/test_decoding_loop_ops.py counts its ops).

    Args:
        step: The checked step function (`checked_step`).
        start_tokens: int32 `(batch_size,)`.
        initial_state: The state of `batch_size` rows.
        choose: `(t, log_probs, attention, finished, lengths, at_limit,
            extras) -> (next_tokens, rows, extras)`. `log_probs` are already
            constrained (a finished row can only extend with `pad_token` at
            zero cost, a row inside its prefix only with its prefix token);
            `lengths` count the token chosen now for live rows; `at_limit`
            says whether this token is a row's last allowed one. `rows` is
            `None`, or int32 `(num_rows,)`: the row each new hypothesis
            extends, one of the `copies` rows of its own sentence (the loop
            re-gathers the state, buffers and flags with it, but not the
            state leaves the step passes through, see `_gather_moved`;
            `choose` re-gathers its own `extras`).
        init_extras: `(num_rows, attention) -> extras`, the decoder's own
            loop variables (a dict of tensors).
        end_token, pad_token: Checked token ids.
        max_length: The unchecked `max_length` argument.
        copies: Rows per sentence after the first step (the beam width).
        prefix: `None` or `(prefix, prefix_lengths)` of `batch_size` rows.
        pad_finished: Whether the loop constrains the log-probs of finished
            rows (`pad_token` only, at zero cost). `False` for a `choose`
            that gives finished rows `pad_token` and a zero log-prob
            itself, on `(num_rows,)` rather than `(num_rows, vocab_size)`.
        prepare: `None`, or `(num_rows, vocab_size) -> None`, called once
            before the first `choose`, outside the loop: where a decoder
            makes the tensors its `choose` reads at every step.
        constrain: `False` for a `choose` that applies the forbidden
            tokens and the prefix itself: it gets the step's scores as
            they are, a `prefix` keyword (`None` or `(forced, inside)` of
            `prefix_tokens`) and a `penalty` keyword (`None` or the
            float32 `(1, vocab_size)` row that is 0 at the tokens that are
            not forbidden and `-inf` at the others, made before the loop:
            one addition masks the forbidden tokens, cheaper than a select
            over the scores on TensorFlow). Needs `pad_finished=False`.

    Returns:
        A dict: `tokens` `(num_rows, L)`, `attention` `(num_rows, L, ...)` or
        `None`, `lengths` `(num_rows,)` and the final `extras`.
    """
    bound, limits = length_limits(max_length)
    if static_max_length is not None:
        bound, limits = static_limits(static_max_length, bound, limits)
    # Step 0 runs outside the loop: its outputs give the attention shape,
    # and it runs on `batch_size` rows (all beams would be equal).
    log_probs, state, attention = step(start_tokens, initial_state)
    args.check_limits_batch(limits, start_tokens)
    prefix = args.resolve_prefix(prefix, ops.shape(log_probs)[1])
    allowed = allowed_tokens(
        forbidden_tokens, ops.shape(log_probs)[1], end_token
    )
    if not (isinstance(copies, int) and copies == 1):
        log_probs, state, attention, limits, prefix = tile_state(
            (log_probs, state, attention, limits, prefix), copies
        )
    num_rows = ops.shape(log_probs)[0]
    vocab_size = ops.shape(log_probs)[1]
    if prepare is not None:
        prepare(num_rows, vocab_size)
    # The per-call tensors of the steps, made here, outside the loop.
    vocab = ops.expand_dims(ops.arange(vocab_size, dtype="int32"), 0)
    penalty = None
    if allowed is not None:
        allowed = ops.expand_dims(allowed, 0)
        if not constrain:
            penalty = ops.where(allowed, 0.0, float("-inf"))
    pad_row = _pad_row(vocab, pad_token) if pad_finished else None
    write_index = _write_index(num_rows)
    if limits is None:
        limits = ops.full((num_rows,), bound, dtype="int32")
    # A row's last step: `at_limit` below.
    last_steps = limits - 1
    # At least one column, for the write of step 0.
    width = buffer_width(bound, static_max_length)
    trailing = () if attention is None else tuple(attention.shape[1:])
    args.check_buffer_size(num_rows, width, trailing)
    buffers = _new_buffers(num_rows, width, pad_token, attention)

    def update(
        t: Tensor,
        log_probs: Tensor,
        attention: Optional[Tensor],
        state: NestedTensor,
        finished: Tensor,
        lengths: Tensor,
        buffers: tuple,
        ex: dict,
        given: NestedTensor = None,
    ):
        inside = forced = None
        if prefix is not None:
            forced, inside = prefix_tokens(t, prefix)
        if constrain and allowed is not None:
            log_probs = _forbid(log_probs, allowed, inside)
        if constrain and prefix is not None:
            log_probs = _force_prefix(log_probs, vocab, forced, inside)
        if pad_finished:
            # A finished row extends only with `pad_token`, at zero cost.
            log_probs = ops.where(
                ops.expand_dims(finished, 1), pad_row, log_probs
            )
        lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        at_limit = t >= last_steps
        more = {}
        if not constrain:
            more["prefix"] = None if prefix is None else (forced, inside)
            more["penalty"] = penalty
        tokens, rows, ex = choose(
            t, log_probs, attention, finished, lengths, at_limit, ex, **more
        )
        if rows is not None:
            finished, lengths, buffers, attention = take_rows(
                (finished, lengths, buffers, attention), rows
            )
            state = _gather_moved(state, rows, given)
        buffers = _write(
            buffers, write_index(t), tokens, zero_rows(attention, finished)
        )
        done = ops.logical_or(finished, ops.equal(tokens, end_token))
        done = ops.logical_or(done, at_limit)
        return tokens, state, done, lengths, buffers, ex

    zero = ops.convert_to_tensor(0, dtype="int32")
    tokens, state, finished, lengths, buffers, extras = update(
        zero,
        log_probs,
        attention,
        state,
        limits <= 0,
        ops.zeros((num_rows,), dtype="int32"),
        buffers,
        init_extras(num_rows, attention),
    )

    def cond(
        t: Tensor,
        tokens: Tensor,
        state: NestedTensor,
        finished: Tensor,
        lengths: Tensor,
        buffers: tuple,
        extras: dict,
    ):
        return ops.logical_and(t < bound, ops.logical_not(ops.all(finished)))

    def body(
        t: Tensor,
        tokens: Tensor,
        state: NestedTensor,
        finished: Tensor,
        lengths: Tensor,
        buffers: tuple,
        extras: dict,
    ):
        log_probs, new_state, attention = step(tokens, state)
        outputs = update(
            t, log_probs, attention, new_state, finished, lengths, buffers,
            extras, given=state,
        )
        return (t + 1,) + outputs

    t, _, _, _, lengths, buffers, extras = ops.while_loop(
        cond,
        body,
        (zero + 1, tokens, state, finished, lengths, buffers, extras),
    )
    # `t` steps ran; none when every limit is 0.
    steps = ops.minimum(t, bound)
    if static_max_length is not None:
        buffers = tuple(b[:, :static_max_length] for b in buffers)
        steps = static_max_length
    elif isinstance(bound, int):
        buffers = tuple(b[:, :bound] for b in buffers)
    return {
        "tokens": _trim(buffers[0], steps),
        "attention": _trim(buffers[1], steps) if len(buffers) == 2 else None,
        "lengths": lengths,
        "extras": extras,
    }
