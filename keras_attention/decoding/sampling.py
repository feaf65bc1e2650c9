"""Sampling decoding: temperature, top-k and top-p (nucleus) sampling."""

import numbers
from typing import Optional
from typing import Union

import keras
from keras import ops

from keras_attention.checks import check_positive_int
from keras_attention.decoding import args
from keras_attention.decoding import core
from keras_attention.decoding.greedy import greedy_choose
from keras_attention.decoding.greedy import row_extras
from keras_attention.decoding.greedy import row_result
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor


# Top-p alone first looks for the nucleus among this many most probable
# tokens, and sorts the whole vocabulary only where it is not there.
NUCLEUS_CANDIDATES = 64


def _nucleus_cutoff(descending: Tensor, top_p: float):
    """The smallest probability of the nucleus, from sorted probabilities
    (a prefix of them that holds the nucleus is enough)."""
    before = ops.cumsum(descending, axis=-1) - descending
    # The first token always belongs to the nucleus.
    return ops.min(
        ops.where(before < top_p, descending, 2.0), axis=-1, keepdims=True
    )


def filter_logits(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
) -> Tensor:
    """The logits sampling draws from: tempered, then top-k, then top-p.

    Tokens outside the `top_k` largest logits, or outside the nucleus (the
    fewest most probable tokens whose probability sums to at least
    `top_p`), get a logit of `-1e9`.

    Args:
        logits: float `(num_rows, vocab_size)`, log-probabilities or logits.
        temperature: Positive float; the logits are divided by it.
            Defaults to `1.0`.
        top_k: Optional positive int. Defaults to `None` (no limit).
        top_p: Optional float in `(0, 1]`. Defaults to `None` (no limit).

    Returns:
        float32 `(num_rows, vocab_size)`.
    """
    logits = ops.cast(logits, "float32") / temperature
    vocab_size = logits.shape[-1]
    top = None
    if top_k is not None:
        if vocab_size is not None:
            top_k = min(top_k, vocab_size)
        top = ops.top_k(logits, top_k, sorted=True)[0]
        logits = ops.where(logits >= top[:, -1:], logits, core.NEG_INF)
    if top_p is None or top_p >= 1.0:
        return logits
    # One formula everywhere, so that the nucleus' smallest probability
    # compares equal to itself.
    log_total = ops.logsumexp(logits, axis=-1, keepdims=True)
    probs = ops.exp(logits - log_total)
    if top is not None:
        # The top-k hold all the probability now: only they are sorted.
        cutoff = _nucleus_cutoff(ops.exp(top - log_total), top_p)
    else:

        def full_sort():
            descending = ops.flip(ops.sort(probs, axis=-1), axis=-1)
            return _nucleus_cutoff(descending, top_p)

        if vocab_size is None or vocab_size <= NUCLEUS_CANDIDATES:
            cutoff = full_sort()
        else:
            candidates = ops.exp(
                ops.top_k(logits, NUCLEUS_CANDIDATES, sorted=True)[0]
                - log_total
            )
            # The nucleus lies among the candidates where they hold `top_p`.
            cutoff = ops.cond(
                ops.all(ops.sum(candidates, axis=-1) >= top_p),
                lambda: _nucleus_cutoff(candidates, top_p),
                full_sort,
            )
    # (A relative 1e-6 of slack: a compiler may round exp differently in
    # two places.)
    keep = probs >= cutoff * (1.0 - 1e-6)
    return ops.where(keep, logits, core.NEG_INF)


def _draw(logits: Tensor, uniform: Tensor):
    """One token per row by inverse-CDF sampling of `softmax(logits)`.

    `uniform` float `(num_rows,)` in `[0, 1)`. The first token whose
    cumulative probability reaches `uniform * total` and whose probability
    is not zero, so a token filtered out is never drawn.
    """
    probs = ops.softmax(logits, axis=-1)
    cdf = ops.cumsum(probs, axis=-1)
    target = ops.expand_dims(uniform, 1) * cdf[:, -1:]
    ok = ops.logical_and(cdf >= target, probs > 0.0)
    first = ops.cast(ops.argmax(ops.cast(ok, "int32"), axis=-1), "int32")
    fallback = ops.cast(ops.argmax(probs, axis=-1), "int32")
    return ops.where(ops.any(ok, axis=-1), first, fallback)


def _check_sampling(
    temperature: float, top_k: Optional[int], top_p: Optional[float]
):
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, numbers.Real)
        or temperature < 0
    ):
        raise ValueError(
            "`temperature` must be a non-negative float. "
            f"Received: temperature={temperature!r}"
        )
    top_k = check_positive_int("top_k", top_k, allow_none=True)
    if top_p is not None and (
        isinstance(top_p, bool)
        or not isinstance(top_p, numbers.Real)
        or not 0 < top_p <= 1
    ):
        raise ValueError(
            "`top_p` must be a float in (0, 1] or None. "
            f"Received: top_p={top_p!r}"
        )
    return float(temperature), top_k, top_p


def sample_decode(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    max_length: IntOrTensor,
    temperature: float = 1.0,
    top_k: Optional[int] = None,
    top_p: Optional[float] = None,
    seed: Optional[Union[int, keras.random.SeedGenerator]] = None,
    pad_token: Optional[IntOrTensor] = None,
    from_logits: bool = False,
    prefix: Optional[Tensor] = None,
    prefix_lengths: Optional[Tensor] = None,
) -> dict:
    """Sampling decoding: at every step, draws the next token.

    `y_t ~ softmax(filter(log p(. | y_<t, x) / temperature))`, where the
    filter keeps the `top_k` most probable tokens and then the nucleus of
    probability `top_p` (Holtzman et al., 2019). For back-translation and
    diverse outputs. The loop is a `keras.ops.while_loop`, as for
    `greedy_decode`.

    The random numbers (one per sentence and step) are drawn once, before
    the loop, with `keras.random.uniform(seed=seed)`: the same int `seed`
    gives the same output; a `keras.random.SeedGenerator` gives a new draw
    at every call (also in a SavedModel, where it is a variable of the
    exported module).

    Reference:
        - [Holtzman et al., 2019](https://arxiv.org/abs/1904.09751)
          (nucleus sampling)

    Args:
        step_fn: As for `greedy_decode`.
        start_tokens: As for `greedy_decode`.
        initial_state: As for `greedy_decode`.
        end_token: As for `greedy_decode`.
        max_length: As for `greedy_decode`.
        pad_token: As for `greedy_decode`.
        from_logits: As for `greedy_decode`.
        prefix: As for `greedy_decode`.
        prefix_lengths: As for `greedy_decode`.
        temperature: Non-negative float. `0` is greedy decoding. Defaults
            to `1.0`.
        top_k: Optional positive int. Defaults to `None`.
        top_p: Optional float in `(0, 1]`. Defaults to `None`.
        seed: Optional int or `keras.random.SeedGenerator`. Defaults to
            `None` (Keras' global generator). On JAX under `jit`, pass an
            int.

    Returns:
        A dict as `greedy_decode`'s: `scores` and `log_probs` are the sum of
        the model's (untempered) log-probabilities of the drawn tokens.

    Raises:
        ValueError: on a negative `temperature`, a non-positive `top_k`, a
            `top_p` outside `(0, 1]`, and as `greedy_decode`.
    """
    temperature, top_k, top_p = _check_sampling(temperature, top_k, top_p)
    step, start, end_token, pad_token, prefix = args.check_common(
        step_fn, start_tokens, initial_state, end_token, pad_token,
        from_logits, prefix, prefix_lengths,
    )
    greedy = temperature == 0.0
    if greedy:
        choose = greedy_choose(pad_token)
    else:
        bound, _ = args.length_limits(max_length)
        width = max(bound, 1) if isinstance(bound, int) else (
            ops.maximum(bound, 1)
        )
        uniform = keras.random.uniform(
            (ops.shape(start)[0], width), seed=seed, dtype="float32"
        )

        def choose(
            t: Tensor,
            log_probs: Tensor,
            attention: Optional[Tensor],
            finished: Tensor,
            lengths: Tensor,
            at_limit: Tensor,
            ex: dict,
        ):
            logits = filter_logits(log_probs, temperature, top_k, top_p)
            tokens = _draw(logits, ops.take(uniform, t, axis=1))
            chosen = ops.take_along_axis(
                log_probs, ops.expand_dims(tokens, 1), axis=1
            )[:, 0]
            return tokens, None, {"log_probs": ex["log_probs"] + chosen}

    out = core.run_loop(
        step, start, initial_state, choose, row_extras,
        end_token, pad_token, max_length, prefix=prefix,
        pad_finished=not greedy,
    )
    return row_result(out)
