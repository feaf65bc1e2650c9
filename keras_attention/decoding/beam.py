"""Beam search with GNMT length and coverage penalties; n-best lists."""

import numbers
from typing import Optional
from typing import Sequence

from keras import ops

from keras_attention.checks import check_bool
from keras_attention.checks import check_choice
from keras_attention.checks import check_float
from keras_attention.checks import check_positive_int
from keras_attention.decoding import args
from keras_attention.decoding import core
from keras_attention.decoding import penalties
from keras_attention.decoding import selection
from keras_attention.decoding.state import gather
from keras_attention.decoding.state import take_rows
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor

CONVENTIONS = ("default", "tfa")


def _beam_choose(
    k: IntOrTensor,
    alpha: float,
    beta: float,
    convention: str,
    end_token: IntOrTensor,
):
    """`(prepare, choose)` of beam search (`core.run_loop`): `choose`
    keeps the `k` best extensions per sentence; `prepare` makes, once
    before the loop, the tensors that do not change from step to step."""
    const = {}

    def prepare(num_rows: IntOrTensor, vocab_size: IntOrTensor) -> None:
        vocab = ops.arange(vocab_size, dtype="int32")
        const["is_end"] = ops.expand_dims(ops.equal(vocab, end_token), 0)
        # Each sentence's first row, and its first entry in the flattened
        # `(num_rows * vocab_size,)` scores.
        first_rows = ops.arange(0, num_rows, k, dtype="int32")
        const["first_row"] = ops.expand_dims(first_rows, 1)
        const["first_entry"] = ops.expand_dims(first_rows * vocab_size, 1)
        const["row_width"] = k * vocab_size

    def choose(
        t: Tensor,
        log_probs: Tensor,
        attention: Optional[Tensor],
        finished: Tensor,
        lengths: Tensor,
        at_limit: Tensor,
        ex: dict,
    ):
        vocab_size = ops.shape(log_probs)[1]
        is_end = const["is_end"]
        live = ops.expand_dims(ops.logical_not(finished), 1)
        total = ops.expand_dims(ex["cum"], 1) + log_probs  # (rows, vocab)
        cand_lengths = ops.expand_dims(lengths, 1)
        if convention == "tfa":
            # TFA does not count the end token when it is produced (but
            # does on the later steps of the finished hypothesis).
            cand_lengths = cand_lengths - ops.cast(
                ops.logical_and(live, is_end), "int32"
            )
        scores = total / penalties.length_penalty(cand_lengths, alpha)
        extras = {}
        if beta:
            coverage = ex["coverage"] + core.zero_rows(attention, finished)
            if convention == "tfa":
                # TFA adds the penalty to finished hypotheses only.
                complete = ops.logical_not(live)
            else:
                complete = ops.logical_or(
                    ops.logical_or(ops.logical_not(live), is_end),
                    ops.expand_dims(at_limit, 1),
                )
            penalty = penalties.coverage_penalty(coverage, beta)
            scores = scores + ops.where(
                complete, ops.expand_dims(penalty, 1), 0.0
            )
        best_scores, best = selection.top_k(
            ops.reshape(scores, (-1, const["row_width"])), k
        )  # (batch_size, k)
        rows = ops.reshape(best // vocab_size + const["first_row"], (-1,))
        # The cumulative log-prob of each kept extension, by its index in
        # the flattened `total`.
        extras["cum"] = gather(
            ops.reshape(total, (-1,)),
            ops.reshape(best + const["first_entry"], (-1,)),
        )
        extras["scores"] = ops.reshape(best_scores, (-1,))
        if beta:
            extras["coverage"] = take_rows(coverage, rows)
        return ops.reshape(best % vocab_size, (-1,)), rows, extras

    return prepare, choose


def _beam_extras(k: IntOrTensor, beta: float):
    def init(num_rows: IntOrTensor, attention: Optional[Tensor]):
        # Only beam 0 of each sentence is alive at first, so the first
        # top-k does not pick the same token from copies.
        first_beam = ops.equal(ops.arange(num_rows, dtype="int32") % k, 0)
        extras = {
            "cum": ops.where(first_beam, 0.0, core.NEG_INF),
            "scores": ops.zeros((num_rows,), dtype="float32"),
        }
        if beta:
            if attention is None:
                raise ValueError(
                    "A `coverage_penalty` needs the attention: `step_fn` "
                    "must return attention weights, not None. Received: "
                    f"coverage_penalty={beta}, attention=None"
                )
            extras["coverage"] = ops.zeros_like(attention)
        return extras

    return init


def beam_search_all(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    max_length: IntOrTensor,
    beam_width: IntOrTensor = 4,
    length_penalty: float = 0.6,
    coverage_penalty: float = 0.0,
    convention: str = "default",
    pad_token: Optional[IntOrTensor] = None,
    from_logits: bool = False,
    prefix: Optional[Tensor] = None,
    prefix_lengths: Optional[Tensor] = None,
    static_max_length: Optional[int] = None,
    forbidden_tokens: Sequence[int] = (),
) -> dict:
    """Beam search; every beam, `(batch_size, beam_width, ...)`, best first.

    The arguments are those of `beam_search_decode`. Returns a dict with
    `tokens` `(batch_size, beam_width, L)`, `lengths`, `scores`,
    `log_probs` `(batch_size, beam_width)` and `attention`
    `(batch_size, beam_width, L, S)` (or `None`).
    """
    k = args.check_beam_width(beam_width)
    alpha = check_float("length_penalty", length_penalty, low=0.0)
    beta = check_float("coverage_penalty", coverage_penalty, low=0.0)
    check_choice("convention", convention, CONVENTIONS)
    forbidden = core.check_forbidden_tokens(forbidden_tokens)
    step, start, end_token, pad_token, prefix = args.check_common(
        step_fn, start_tokens, initial_state, end_token, pad_token,
        from_logits, prefix, prefix_lengths,
    )
    prepare, choose = _beam_choose(k, alpha, beta, convention, end_token)
    out = core.run_loop(
        step, start, initial_state, choose, _beam_extras(k, beta),
        end_token, pad_token, max_length, copies=k, prefix=prefix,
        static_max_length=static_max_length, forbidden_tokens=forbidden,
        prepare=prepare,
    )
    batch_size = ops.shape(start)[0]

    def per_beam(x: Optional[Tensor]):
        if x is None:
            return None
        return ops.reshape(x, (batch_size, k) + tuple(ops.shape(x)[1:]))

    # The last top-k sorted each sentence's beams by their final score.
    return {
        "tokens": per_beam(out["tokens"]),
        "lengths": per_beam(out["lengths"]),
        "scores": per_beam(out["extras"]["scores"]),
        "log_probs": per_beam(out["extras"]["cum"]),
        "attention": per_beam(out["attention"]),
    }


def beam_search_decode(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    max_length: IntOrTensor,
    beam_width: IntOrTensor = 4,
    length_penalty: float = 0.6,
    pad_token: Optional[IntOrTensor] = None,
    from_logits: bool = False,
    return_all_beams: bool = False,
    coverage_penalty: float = 0.0,
    convention: str = "default",
    prefix: Optional[Tensor] = None,
    prefix_lengths: Optional[Tensor] = None,
    static_max_length: Optional[int] = None,
    forbidden_tokens: Sequence[int] = (),
) -> dict:
    """Beam search with GNMT length normalisation, inside the graph.

    Keeps the `beam_width` best partial hypotheses of every sentence. At each
    step every hypothesis is extended by every token, and the `beam_width`
    best extensions by

        score(Y) = log P(Y | X) / lp(Y) + cp(Y),
        lp(Y) = ((5 + |Y|) / 6) ** alpha,
        cp(Y) = beta * sum_i log(min(sum_t alpha_t,i, 1))

    survive (`|Y|` counts the end token; `cp` is added to complete
    hypotheses only: those that end now or earlier, or reach their length
    limit, the final ranking of GNMT). A hypothesis that produced the end
    token is finished: it only extends with `pad_token` at zero cost, so it
    keeps its score and competes with the live ones. The search stops when
    all hypotheses are finished or at the length limit; the best one by
    `score` is returned.

    The state is tiled by the decoder itself (see `tile_state`) and
    re-gathered with the beams' back-pointers at every step (see
    `gather_state`), so the step function sees an ordinary batch of
    `batch_size * beam_width` rows and the attention of each hypothesis
    follows it. Sentences of the batch never influence one another.

    Reference:
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144) (GNMT)

    Args:
        step_fn: Callable `(tokens, state) -> (log_probs, new_state,
            attention)`, see `keras_attention.decoding`. It is called with
            `batch_size * beam_width` rows (the first call, before the beams
            differ, with `batch_size` rows).
        start_tokens: int `(batch_size,)` tensor, or a scalar token id.
        initial_state: Nested structure of tensors, each of shape
            `(batch_size, ...)`, not tiled.
        end_token: Integer token id (or scalar tensor) that ends a sentence.
        max_length: Non-negative Python integer, scalar integer tensor, or
            int `(batch_size,)` tensor of per-sentence limits (e.g.
            `2 * source_lengths + 10`); `0` gives an empty hypothesis. On
            JAX under `jit` pass a Python integer or a
            `static_max_length`.
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
        coverage_penalty: Non-negative float, GNMT's `beta`; needs a step
            function that returns attention (their sum over the steps
            travels in the beam state). `0` disables it. Defaults to `0.0`.
        convention: `"default"` or `"tfa"`. `"tfa"` scores as TensorFlow
            Addons' `BeamSearchDecoder`: the end token does not count in
            `|Y|` on the step that produces it (it does on the later steps),
            and `cp` is added only to hypotheses finished on an earlier
            step. Defaults to `"default"`.
        prefix: Optional int `(batch_size, P)` tensor: every hypothesis of
            sentence `b` starts with `prefix[b, :prefix_lengths[b]]`.
            Defaults to `None`.
        prefix_lengths: Optional int `(batch_size,)`, each prefix's length.
            Defaults to `P` for every sentence.
        static_max_length: Optional Python int, the static width `L` of
            the outputs, for per-sentence limits under XLA, as for
            `greedy_decode`. Defaults to `None`.
        forbidden_tokens: As for `greedy_decode`. Below the hypotheses
            of finished and empty beams too: a search with fewer live
            hypotheses than beams never fills them with these tokens.
            Defaults to `()`.

    Returns:
        A dict with `tokens` `(batch_size, L)`, `lengths`, `scores` (the
        penalised score), `log_probs` and `attention` `(batch_size, L, S)`
        of the best hypothesis, see `keras_attention.decoding`.

    Raises:
        ValueError: on a non-positive `beam_width`, a negative `max_length`,
            a negative or non-finite `length_penalty` or
            `coverage_penalty`, an unknown `convention`,
            a coverage penalty without attention, a state tensor without the
            batch dimension, or step outputs of the wrong shape.

    Example:

    ```python
    out = keras_attention.decoding.beam_search_decode(
        step_fn, start_tokens=ops.full((batch,), START, "int32"),
        initial_state=state, end_token=END,
        max_length=2 * source_lengths + 10, beam_width=5)
    out["tokens"], out["scores"], out["attention"]
    ```
    """
    beams = beam_search_all(
        step_fn, start_tokens, initial_state, end_token, max_length,
        beam_width=beam_width, length_penalty=length_penalty,
        coverage_penalty=coverage_penalty, convention=convention,
        pad_token=pad_token, from_logits=from_logits, prefix=prefix,
        prefix_lengths=prefix_lengths, static_max_length=static_max_length,
        forbidden_tokens=forbidden_tokens,
    )
    return_all_beams = check_bool("return_all_beams", return_all_beams)
    result = {
        key: None if value is None else value[:, 0]
        for key, value in beams.items()
    }
    if return_all_beams:
        result.update({f"beam_{key}": value for key, value in beams.items()})
    return result


def beam_search_nbest(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    max_length: IntOrTensor,
    n_best: int,
    beam_width: Optional[IntOrTensor] = None,
    **options,
) -> dict:
    """The `n_best` best hypotheses of every sentence, by beam search.

    Runs `beam_search_decode` with `beam_width` beams and keeps the
    `n_best` best finished hypotheses of each sentence, best first:
    `nbest[:, 0]` is `beam_search_decode`'s result.

    Args:
        step_fn, start_tokens, initial_state, end_token, max_length: As for
            `beam_search_decode`.
        n_best: Positive Python int, at most `beam_width`; or, where
            `beam_width` is `None`, a scalar int tensor on TensorFlow (one
            exported signature for every `k`).
        beam_width: Positive Python int at least `n_best`. Defaults to
            `n_best`.
        **options: The other arguments of `beam_search_decode`
            (`length_penalty`, `coverage_penalty`, `convention`,
            `pad_token`, `from_logits`, `prefix`, `prefix_lengths`,
            `static_max_length`, `forbidden_tokens`).

    Returns:
        A dict with `tokens` int32 `(batch_size, n_best, L)`, `lengths`,
        `scores`, `log_probs` `(batch_size, n_best)` and `attention`
        `(batch_size, n_best, L, S)` (or `None`).

    Raises:
        ValueError: on an `n_best` that is not a positive integer or is
            larger than `beam_width`, and as `beam_search_decode`.
    """
    if "return_all_beams" in options:
        raise ValueError(
            "`beam_search_nbest` returns the beams itself. Received: "
            f"return_all_beams={options['return_all_beams']!r}"
        )
    if beam_width is None:
        if isinstance(n_best, (numbers.Number, bool)):
            n_best = check_positive_int("n_best", n_best)
        beam_width = n_best
    elif isinstance(n_best, numbers.Integral) and isinstance(
        beam_width, numbers.Integral
    ):
        n_best = args.check_beam_width(n_best)
        if n_best > beam_width:
            raise ValueError(
                "`n_best` must be at most `beam_width`. Received: "
                f"n_best={n_best}, beam_width={beam_width}"
            )
    else:
        raise ValueError(
            "With a `beam_width`, `n_best` and `beam_width` must be Python "
            f"integers. Received: n_best={n_best!r}, "
            f"beam_width={beam_width!r}"
        )
    beams = beam_search_all(
        step_fn, start_tokens, initial_state, end_token, max_length,
        beam_width=beam_width, **options,
    )
    if not isinstance(beam_width, int) or beam_width == n_best:
        return beams  # every beam (a tensor `n_best` is the beam width)
    return {
        key: None if value is None else value[:, :n_best]
        for key, value in beams.items()
    }
