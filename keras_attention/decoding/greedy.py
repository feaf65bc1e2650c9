"""Greedy decoding: at every step, the most probable token."""

from typing import Callable
from typing import Optional
from typing import Sequence
from typing import Tuple

import keras
import numpy as np
from keras import ops

from keras_attention.decoding import args
from keras_attention.decoding import core
from keras_attention.decoding.args import NEG_INF
from keras_attention.decoding.state import gather
from keras_attention.decoding.state import take_per_row
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor


def best_tokens(log_probs: Tensor) -> Tuple[Tensor, Tensor]:
    """The argmax of every row (the first on ties) and its value.

    On TensorFlow a plain `ArgMax` and a batched gather of the values, not
    `keras.ops.argmax`, whose TensorFlow version first rewrites every
    `-0.0` (four more passes over the `(rows, vocab_size)` matrix at every
    step), nor a top-1 `TopKV2`, a slower pass than `ArgMax` at these
    widths (`python -m benchmarks.vocab_ops`).
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tokens = tf.argmax(log_probs, axis=-1, output_type=tf.int32)
    else:
        tokens = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
    return tokens, take_per_row(log_probs, tokens)


def _maxima(
    logits: Tensor,
    probs: Tensor,
    penalty: Optional[Tensor],
    forbidden: Tuple[int, ...],
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """`(best, top, largest, most_probable)` of every row: the best allowed
    token and its logit, the largest logit and the largest probability,
    with no pass over the vocabulary besides the mask's and the pick's.

    The largest logit is the best allowed token's or a forbidden one's,
    and so is the largest probability: they are read from the forbidden
    columns and the picked token, not from maxima over the vocabulary.
    """
    masked = logits if penalty is None else logits + penalty
    best, top = best_tokens(masked)
    largest, most_probable = top, take_per_row(probs, best)
    if forbidden:
        ids = ops.convert_to_tensor(np.array(forbidden, dtype="int32"))
        largest = ops.maximum(
            largest, ops.max(gather(logits, ids, axis=1), axis=1)
        )
        most_probable = ops.maximum(
            most_probable, ops.max(gather(probs, ids, axis=1), axis=1)
        )
    return best, top, largest, most_probable


def best_allowed(
    logits: Tensor,
    penalty: Optional[Tensor] = None,
    prefix: Optional[Tuple[Tensor, Tensor]] = None,
    first_allowed: int = 0,
    forbidden: Tuple[int, ...] = (),
) -> Tuple[Tensor, Tensor]:
    """Greedy decoding's pick from raw scores, without a vocabulary-wide
    `log_softmax` or NaN guard: `(tokens, log_probs)`, `(rows,)` each.

    The token is the best one of `logits` `(rows, vocab_size)` that is not
    forbidden (`penalty`: float32 `(1, vocab_size)`, 0 at the allowed
    tokens and `-inf` at the `forbidden` ids, a tuple of Python ints; or `None` and `()`: every token), the forced one of a row inside
    its `prefix` (`(forced, inside)`).

    Its log-probability is `log_softmax(logits)` at the token, from one
    softmax (one vectorized pass on every backend, where TensorFlow's
    `LogSoftmax` is not) and no other pass over the vocabulary: with `m`
    the largest logit and `p` the largest probability, `(logit - m) +
    log(p)`, `m` and `p` read at the picked and the forbidden tokens
    (`_maxima`). `p` is at least `1 / vocab_size`, so its logarithm is
    exact to float32 rounding, and `(logit - m)` first keeps the precision
    where the logits are large.

    These are the token and log-probability of the decoders' general path
    (`log_softmax` over the vocabulary, NaN and values below `NEG_INF`
    counted as `NEG_INF`, the forbidden tokens below them, the first
    maximum): a row whose picked log-probability is NaN or at most
    `NEG_INF` (a NaN or infinite score in the row, whose softmax is then
    NaN throughout, or every allowed token that improbable) gets `NEG_INF`
    and, outside its prefix, `first_allowed`, the first token that is not
    forbidden.
    """
    if (penalty is None) != (not forbidden):
        raise ValueError(
            "`penalty` and `forbidden` must describe the same tokens: the "
            "row that masks them and their ids, or neither. Received: "
            f"penalty={penalty!r:.60}, forbidden={forbidden}"
        )
    probs = ops.softmax(logits, axis=-1)
    best, top, largest, most_probable = _maxima(
        logits, probs, penalty, forbidden
    )
    tokens, chosen = best, top
    if prefix is not None:
        forced, inside = prefix
        tokens = ops.where(inside, forced, best)
        chosen = take_per_row(logits, tokens)
    # (logit - max) first: exact where the logits are large.
    log_probs = (chosen - largest) + ops.log(most_probable)
    good = log_probs > NEG_INF
    keep = good if prefix is None else ops.logical_or(good, inside)
    return (
        ops.where(keep, tokens, first_allowed),
        ops.where(good, log_probs, NEG_INF),
    )


def greedy_choose(
    pad_token: IntOrTensor, forbidden: Optional[tuple] = None
) -> Callable[..., tuple]:
    """The `choose` of greedy decoding (for `run_loop(...,
    pad_finished=False)`): the argmax of every live row, `pad_token` at a
    zero log-prob for the finished ones.

    With `forbidden` (a tuple, for `run_loop(..., constrain=False)`) the
    rows are raw scores, and the pick is `best_allowed`'s."""
    first = None
    if forbidden is not None:
        first = next(
            i for i in range(len(forbidden) + 1) if i not in forbidden
        )

    def choose(
        t: Tensor,
        log_probs: Tensor,
        attention: Optional[Tensor],
        finished: Tensor,
        lengths: Tensor,
        at_limit: Tensor,
        ex: dict,
        prefix: Optional[Tuple[Tensor, Tensor]] = None,
        penalty: Optional[Tensor] = None,
    ) -> Tuple[Tensor, None, dict]:
        if first is None:
            tokens, chosen = best_tokens(log_probs)
        else:
            tokens, chosen = best_allowed(
                log_probs, penalty, prefix, first, forbidden
            )
        pad = ops.cast(pad_token, "int32")
        tokens = ops.where(finished, pad, tokens)
        chosen = ops.where(finished, 0.0, chosen)
        return tokens, None, {"log_probs": ex["log_probs"] + chosen}

    return choose


def row_extras(num_rows: IntOrTensor, attention: Optional[Tensor]) -> dict:
    """The one loop variable of greedy and sampling decoding."""
    return {"log_probs": ops.zeros((num_rows,), dtype="float32")}


def row_result(out: dict) -> dict:
    """The decoders' dict from `core.run_loop`'s for one row per sentence."""
    return {
        "tokens": out["tokens"],
        "lengths": out["lengths"],
        "scores": out["extras"]["log_probs"],
        "log_probs": out["extras"]["log_probs"],
        "attention": out["attention"],
    }


def greedy_decode(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    max_length: IntOrTensor,
    pad_token: Optional[IntOrTensor] = None,
    from_logits: bool = False,
    prefix: Optional[Tensor] = None,
    prefix_lengths: Optional[Tensor] = None,
    static_max_length: Optional[int] = None,
    forbidden_tokens: Sequence[int] = (),
) -> dict:
    """Greedy decoding: at every step, feeds back the most probable token.

    `y_t = argmax_v log p(v | y_<t, x)` until the end token or the length
    limit. The loop is a `keras.ops.while_loop` that stops as soon as every
    sentence has ended, so it runs inside a `tf.function` and exports to a
    SavedModel.

    Args:
        step_fn: Callable `(tokens, state) -> (log_probs, new_state,
            attention)`, see `keras_attention.decoding`. Sentences that have
            ended keep being fed `pad_token`; their outputs are ignored.
        start_tokens: int `(batch_size,)` tensor, or a scalar token id used
            for every sentence, the first input of `step_fn`.
        initial_state: Nested structure of tensors, each of shape
            `(batch_size, ...)`.
        end_token: Integer token id (or scalar tensor) that ends a sentence.
        max_length: Maximum number of tokens of a hypothesis: a
            non-negative Python integer, a scalar integer tensor, or an int
            `(batch_size,)` tensor of per-sentence limits, e.g. relative to
            the source length: `2 * source_lengths + 10`. `0` gives an empty
            hypothesis (length 0, score 0); negative tensor entries count as
            `0`. On JAX under `jit` pass a Python integer or a
            `static_max_length`.
        pad_token: Token written after the end of a hypothesis. Defaults to
            `end_token`.
        from_logits: If `True`, `step_fn` returns logits, and the decoder
            normalizes only the token it picks (`best_allowed`): the
            tokens and scores of a step that returns `log_softmax(logits)`,
            without a vocabulary-wide `log_softmax` at every step, the
            faster way to decode greedily. Defaults to `False`.
        prefix: Optional int `(batch_size, P)` tensor: sentence `b` starts
            with `prefix[b, :prefix_lengths[b]]`, whatever the model
            prefers (its log-probabilities count in the score). The ids
            must lie in the vocabulary of `step_fn`'s log-probabilities
            (checked where the values are known; inside a traced function
            a row's prefix ends at its first id outside it). Defaults to
            `None`.
        prefix_lengths: Optional int `(batch_size,)`, the length of each
            prefix, in `[0, P]` (checked where known, clamped in a graph;
            the rest of a row is padding). Defaults to the number of
            leading non-negative ids of each row: `-1` is padding.
        static_max_length: Optional non-negative Python int at least every
            entry of `max_length`: the outputs get exactly this many
            columns `L`, a static shape, so the whole loop compiles with
            per-sentence limits under XLA (`jit_compile=True` on
            TensorFlow, `jax.jit`), where buffer shapes must be known.
            A known `max_length` above it raises; inside a traced function
            larger entries count as `static_max_length`. Defaults to
            `None`: `L` is the number of steps run.
        forbidden_tokens: Token ids no hypothesis may hold before its
            end (outside its prefix), whatever the model prefers, e.g. the
            padding and start tokens: their log-probs are set below every
            other token's at every step (a mask made once, before the
            loop). Not `end_token`. Defaults to `()`.

    Returns:
        A dict with `tokens` `(batch_size, L)`, `lengths`, `scores`,
        `log_probs` (both the sum of log-probabilities here) and `attention`
        `(batch_size, L, S)`, see `keras_attention.decoding`.

    Log-probabilities that are NaN or below `NEG_INF` (`-inf`) count as
    `NEG_INF`, so scores stay finite.

    Raises:
        ValueError: on a negative `max_length` (or a per-sentence one of
            another batch size), token ids outside the vocabulary, a
            `prefix` or `prefix_lengths` of the wrong shape, batch size or
            values, a state tensor without the batch dimension, or step
            outputs of the wrong shape.

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
    forbidden = core.check_forbidden_tokens(forbidden_tokens)
    # From logits, only the picked token is normalized (`best_allowed`).
    step, start, end_token, pad_token, prefix = args.check_common(
        step_fn, start_tokens, initial_state, end_token, pad_token,
        from_logits, prefix, prefix_lengths, normalize_logits=False,
    )
    from_logits = bool(from_logits)  # a bool: check_common checked it
    choose = greedy_choose(pad_token, forbidden if from_logits else None)
    out = core.run_loop(
        step, start, initial_state, choose, row_extras,
        end_token, pad_token, max_length, prefix=prefix, pad_finished=False,
        static_max_length=static_max_length, forbidden_tokens=forbidden,
        constrain=not from_logits,
    )
    return row_result(out)
