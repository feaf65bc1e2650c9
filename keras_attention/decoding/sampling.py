"""Sampling decoding: temperature, top-k and top-p (nucleus) sampling."""

import numbers
from typing import Optional
from typing import Sequence
from typing import Union

import keras
from keras import ops

from keras_attention.checks import ArgumentTypeError
from keras_attention.checks import check_float
from keras_attention.checks import check_int
from keras_attention.checks import check_scalar_tensor
from keras_attention.checks import is_tensor
from keras_attention.checks import shape_str
from keras_attention.checks import to_tensor
from keras_attention.decoding import args
from keras_attention.decoding import core
from keras_attention.decoding.greedy import greedy_choose
from keras_attention.decoding.greedy import row_extras
from keras_attention.decoding.greedy import row_result
from keras_attention.decoding.state import gather
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor


FloatOrTensor = Union[float, Tensor]
"""A Python float, or a scalar float tensor (a setting given in the graph,
such as an input of an exported signature)."""

# Top-p alone first looks for the nucleus among this many most probable
# tokens, and sorts the whole vocabulary only where it is not there.
NUCLEUS_CANDIDATES = 64
# The largest float32: `+inf` logits are clipped to it.
_FLOAT32_MAX = 3.4028234663852886e38


def _nucleus_cutoff(descending: Tensor, top_p: FloatOrTensor):
    """The smallest probability of the nucleus, from sorted probabilities
    (a prefix of them that holds the nucleus is enough). The first token
    always belongs to the nucleus."""
    before = ops.cumsum(descending, axis=-1) - descending
    cutoff = ops.min(
        ops.where(before < top_p, descending, 2.0), axis=-1, keepdims=True,
        initial=2.0,
    )
    return ops.minimum(cutoff, descending[..., :1])


def check_sampling(
    temperature: FloatOrTensor,
    top_k: Optional[IntOrTensor],
    top_p: Optional[FloatOrTensor],
) -> tuple:
    """The sampling settings, checked: Python values eagerly (a finite
    `temperature >= 0`, a positive `top_k`, a `top_p` in `(0, 1]`), tensors
    for a scalar shape and a numeric dtype (their values are clamped, see
    `filter_logits`). Returns them as floats, ints or float32/int32
    tensors."""
    if is_tensor(temperature):
        temperature = check_scalar_tensor("temperature", temperature, "float")
    else:
        temperature = check_float("temperature", temperature, low=0.0)
    if is_tensor(top_k):
        top_k = check_scalar_tensor("top_k", top_k, "int")
    else:
        top_k = check_int("top_k", top_k, low=1, allow_none=True)
    if is_tensor(top_p):
        top_p = check_scalar_tensor("top_p", top_p, "float")
    else:
        top_p = check_float(
            "top_p", top_p, low=0.0, high=1.0, low_open=True, allow_none=True
        )
    return temperature, top_k, top_p


def filter_logits(
    logits: Tensor,
    temperature: FloatOrTensor = 1.0,
    top_k: Optional[IntOrTensor] = None,
    top_p: Optional[FloatOrTensor] = None,
) -> Tensor:
    """The logits sampling draws from: tempered, then top-k, then top-p.

    Each row is shifted by its maximum (the largest logit becomes `0`, so
    that no temperature overflows) and divided by `temperature`; tokens
    outside the `top_k` largest logits, or outside the nucleus (the fewest
    most probable tokens whose probability sums to at least `top_p`; the
    most probable token always belongs to it), get a logit of `-1e9`
    (`NEG_INF`). The softmax of the result is the sampling distribution.

    Logits that are NaN, `-inf` or at most `NEG_INF` are tokens already
    excluded (a decoder's constraints): they stay at `NEG_INF` whatever the
    temperature. `+inf` logits count as the largest float32. A row with no
    other token is all `NEG_INF`.

    The settings are Python (or numpy) numbers, checked at once, or scalar
    tensors (e.g. inputs of an exported signature), whose values are
    clamped inside the graph:

    - `temperature`: `0` (or a tensor `<= 0`, or NaN) keeps only the largest
      logits: greedy decoding. A tensor `+inf` gives the uniform
      distribution over the tokens not excluded.
    - `top_k`: larger than the vocabulary is no limit; a tensor `<= 0` is
      no limit.
    - `top_p`: `1` (or a tensor `>= 1`) is no limit; a tensor `<= 0` (or
      NaN) keeps only the most probable token.

    Args:
        logits: float `(..., vocab_size)`, log-probabilities or logits.
        temperature: Non-negative finite float, or a scalar float tensor.
            Defaults to `1.0`.
        top_k: Optional positive int, or a scalar int tensor. Defaults to
            `None` (no limit).
        top_p: Optional float in `(0, 1]`, or a scalar float tensor.
            Defaults to `None` (no limit).

    Returns:
        float32 `(..., vocab_size)`, at least `NEG_INF` everywhere.

    Raises:
        ValueError: for non-floating `logits`, `logits` of rank 0 or of
            an empty vocabulary, a
            negative or non-finite `temperature`, a `top_k` below 1, a
            `top_p` outside `(0, 1]` (Python values), or a tensor setting
            that is not a scalar of a numeric dtype.

    Example:

    ```python
    >>> import numpy as np
    >>> logits = np.log(np.array([[0.5, 0.3, 0.2]], "float32"))
    >>> kept = filter_logits(logits, top_p=0.7)
    >>> [bool(x) for x in np.asarray(kept)[0] > -1e8]
    [True, True, False]
    ```
    """
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p)
    logits = to_tensor("logits", logits)
    dtype = keras.backend.standardize_dtype(logits.dtype)
    if "float" not in dtype or len(logits.shape) == 0 or (
        logits.shape[-1] == 0
    ):
        raise ValueError(
            "`logits` must be floating logits of shape (..., vocab_size), "
            "vocab_size >= 1. "
            f"Received: logits.shape={shape_str(logits.shape)}, "
            f"logits.dtype={dtype}"
        )
    logits = ops.minimum(ops.cast(logits, "float32"), _FLOAT32_MAX)
    allowed = logits > core.NEG_INF  # False for NaN
    # The row maximum first: `(x - max) / T` never overflows upwards, and
    # the excluded tokens never enter the arithmetic.
    safe = ops.where(allowed, logits, core.NEG_INF)
    # (`initial`: no error on zero rows.)
    shifted = safe - ops.max(safe, axis=-1, keepdims=True,
                             initial=core.NEG_INF)
    if is_tensor(temperature):
        greedy = ops.logical_not(temperature > 0.0)  # also NaN
        scaled = _divide(shifted, ops.where(greedy, 1.0, temperature))
        keep = ops.logical_and(
            allowed, ops.logical_or(ops.logical_not(greedy), shifted >= 0.0)
        )
    elif temperature == 0.0:
        scaled = shifted
        keep = ops.logical_and(allowed, shifted >= 0.0)
    else:
        scaled = _divide(shifted, temperature)
        keep = allowed
    vocab_size = logits.shape[-1]
    if is_tensor(top_k):
        # A dynamic k: the k-th largest from the sorted row.
        size = ops.shape(logits)[-1]
        k = ops.where(top_k <= 0, size, ops.minimum(top_k, size))
        descending = ops.flip(ops.sort(shifted, axis=-1), axis=-1)
        kth = ops.take(descending, ops.maximum(k - 1, 0), axis=-1)
        keep = ops.logical_and(keep, shifted >= ops.expand_dims(kth, -1))
    elif top_k is not None and (vocab_size is None or top_k < vocab_size):
        kth = ops.top_k(shifted, top_k, sorted=True)[0][..., -1:]
        keep = ops.logical_and(keep, shifted >= kth)
    if top_p is not None and not (
        isinstance(top_p, float) and top_p >= 1.0
    ):
        keep = ops.logical_and(
            keep, _nucleus(scaled, keep, top_k, top_p, vocab_size)
        )
    clipped = ops.maximum(scaled, core.NEG_INF)
    return ops.where(keep, clipped, core.NEG_INF)


def _divide(shifted: Tensor, temperature: FloatOrTensor) -> Tensor:
    """`shifted / temperature` where `shifted < 0`, `0` at the maximum:
    a temperature that a CPU flushes to zero (a float32 subnormal) gives
    `-inf` there, not NaN."""
    return ops.where(shifted < 0.0, shifted / temperature, 0.0)


def _nucleus(
    scaled: Tensor,
    keep: Tensor,
    top_k: Optional[IntOrTensor],
    top_p: FloatOrTensor,
    vocab_size: Optional[int],
) -> Tensor:
    """Whether each token belongs to the nucleus of the tokens `keep`
    leaves (bool of the shape of `scaled`)."""
    masked = ops.where(keep, scaled, -float("inf"))
    # Every row keeps its largest logit (0), unless it keeps nothing.
    any_kept = ops.any(keep, axis=-1, keepdims=True)
    masked = ops.where(any_kept, masked, 0.0)
    probs = ops.exp(masked - ops.logsumexp(masked, axis=-1, keepdims=True))

    def full_sort():
        descending = ops.flip(ops.sort(probs, axis=-1), axis=-1)
        return _nucleus_cutoff(descending, top_p)

    if isinstance(top_k, int):
        # The top-k hold all the probability: only they are sorted.
        k = top_k if vocab_size is None else min(top_k, vocab_size)
        cutoff = _nucleus_cutoff(ops.top_k(probs, k, sorted=True)[0], top_p)
    elif (
        is_tensor(top_k) or vocab_size is None
        or vocab_size <= NUCLEUS_CANDIDATES
    ):
        cutoff = full_sort()
    else:
        candidates = ops.top_k(probs, NUCLEUS_CANDIDATES, sorted=True)[0]
        # The nucleus lies among the candidates where they hold `top_p`.
        cutoff = ops.cond(
            ops.all(ops.sum(candidates, axis=-1) >= top_p),
            lambda: _nucleus_cutoff(candidates, top_p),
            full_sort,
        )
    # The cutoff is one of `probs` itself, so it compares equal to itself;
    # (a relative 1e-6 of slack: a compiler may fuse differently).
    inside = probs >= cutoff * (1.0 - 1e-6)
    if is_tensor(top_p):
        inside = ops.logical_or(inside, top_p >= 1.0)
    return inside


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


def sample_decode(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    max_length: IntOrTensor,
    temperature: FloatOrTensor = 1.0,
    top_k: Optional[IntOrTensor] = None,
    top_p: Optional[FloatOrTensor] = None,
    seed: Optional[Union[int, keras.random.SeedGenerator]] = None,
    pad_token: Optional[IntOrTensor] = None,
    from_logits: bool = False,
    prefix: Optional[Tensor] = None,
    prefix_lengths: Optional[Tensor] = None,
    static_max_length: Optional[int] = None,
    forbidden_tokens: Sequence[int] = (),
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
        static_max_length: As for `greedy_decode`. The draws are made
            for that many steps: the same int `seed` gives other draws
            with it than without.
        forbidden_tokens: As for `greedy_decode`: the forbidden tokens
            are never drawn.
        temperature: Non-negative finite float. `0` is greedy decoding.
            Or a scalar float tensor (`<= 0`: greedy), see
            `filter_logits`. Defaults to `1.0`.
        top_k: Optional positive int, or a scalar int tensor (`<= 0`: no
            limit). Defaults to `None`.
        top_p: Optional float in `(0, 1]`, or a scalar float tensor
            (`>= 1`: no limit). Defaults to `None`.
        seed: Optional int or `keras.random.SeedGenerator`. Defaults to
            `None` (Keras' global generator). On JAX under `jit`, pass an
            int.

    Returns:
        A dict as `greedy_decode`'s: `scores` and `log_probs` are the sum of
        the model's (untempered) log-probabilities of the drawn tokens.

    The end token, the prefix and the `pad_token` of finished sentences
    are applied after the temperature and the filters, to the drawn
    tokens: no setting can undo them.

    Raises:
        ValueError: on a negative or non-finite `temperature`, a
            non-positive `top_k`, a `top_p` outside `(0, 1]`, and as
            `greedy_decode`.
    """
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p)
    if not (
        seed is None
        or isinstance(seed, keras.random.SeedGenerator)
        or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool))
    ):
        raise ArgumentTypeError(
            "`seed` must be None, an int or a keras.random.SeedGenerator. "
            f"Received: seed={seed!r} of type {type(seed).__name__}"
        )
    forbidden = core.check_forbidden_tokens(forbidden_tokens)
    step, start, end_token, pad_token, prefix = args.check_common(
        step_fn, start_tokens, initial_state, end_token, pad_token,
        from_logits, prefix, prefix_lengths,
    )
    prepare = None
    if isinstance(temperature, float) and temperature == 0.0:
        choose = greedy_choose(pad_token)
    else:
        bound, limits = args.length_limits(max_length)
        if static_max_length is not None:
            bound, _ = core.static_limits(static_max_length, bound, limits)
        width = core.buffer_width(bound, static_max_length)
        # The draws of every step, made up front like the output buffers.
        args.check_buffer_size(ops.shape(start)[0], width, ())
        uniform = keras.random.uniform(
            (ops.shape(start)[0], width), seed=seed, dtype="float32"
        )

        row_start = []

        def prepare(num_rows: IntOrTensor, vocab_size: IntOrTensor) -> None:
            # Each row's first entry in the flattened log-probs.
            row_start.append(
                ops.arange(num_rows, dtype="int32") * vocab_size
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
            tokens = _draw(logits, gather(uniform, t, axis=1))
            # The constraints come after the filters, as tokens: no
            # temperature or filter can undo them.
            if prefix is not None:
                forced, inside = core.prefix_tokens(t, prefix)
                tokens = ops.where(inside, forced, tokens)
            tokens = ops.where(finished, ops.cast(pad_token, "int32"), tokens)
            chosen = gather(
                ops.reshape(log_probs, (-1,)), row_start[0] + tokens
            )
            chosen = ops.where(finished, 0.0, chosen)
            return tokens, None, {"log_probs": ex["log_probs"] + chosen}

    out = core.run_loop(
        step, start, initial_state, choose, row_extras,
        end_token, pad_token, max_length, prefix=prefix, pad_finished=False,
        static_max_length=static_max_length, forbidden_tokens=forbidden,
        prepare=prepare,
    )
    return row_result(out)
