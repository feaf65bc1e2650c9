"""Ensembles: one step function from several, by averaging probabilities."""

from typing import Sequence

from keras import ops

from keras_attention.checks import check_bool
from keras_attention.checks import shape_str
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor


def ensemble_step(
    step_fns: Sequence[StepFn], from_logits: bool = False
) -> StepFn:
    """A step function that averages the next-token distributions of models.

    `log p(v) = log(mean_m p_m(v))`, computed as
    `logsumexp_m(log p_m(v)) - log M`. The state of the ensemble is the
    tuple of the members' states (`ensemble_state`), each as its member
    expects it, so every member keeps its own nested structure and beam
    search re-gathers them all. The attention is the mean of the members'
    (when all return one, of one shape), else `None`.

    Args:
        step_fns: Sequence of at least one step function
            `(tokens, state) -> (log_probs, new_state, attention)` over the
            same vocabulary.
        from_logits: If `True`, the members return logits (each is
            normalised with `log_softmax` before averaging). Defaults to
            `False`.

    Returns:
        A step function `(tokens, states) -> (log_probs, new_states,
        attention)` that returns log-probabilities.

    Raises:
        ValueError: on an empty `step_fns` (or one function where a
            sequence is expected), and, when called, on an ensemble state
            that is not one state per member or members whose
            log-probabilities differ in shape (another vocabulary size).

    Example:

    ```python
    step = ensemble_step([model_a.step, model_b.step])
    state = ensemble_state(model_a.initial_state(x), model_b.initial_state(x))
    out = beam_search_decode(step, START, state, END, 50)
    ```
    """
    from_logits = check_bool("from_logits", from_logits)
    if callable(step_fns) or isinstance(step_fns, (str, bytes)):
        raise ValueError(
            "`step_fns` must be a sequence of step functions. Received: "
            f"step_fns={step_fns!r:.80}"
        )
    step_fns = tuple(step_fns)
    if not step_fns or not all(callable(f) for f in step_fns):
        raise ValueError(
            "`step_fns` must be a non-empty sequence of step functions. "
            f"Received: step_fns={step_fns!r}"
        )

    def step(tokens: Tensor, states: Sequence[NestedTensor]):
        if not isinstance(states, (tuple, list)) or len(states) != len(
            step_fns
        ):
            raise ValueError(
                f"The ensemble state must be a tuple of {len(step_fns)} "
                f"states, one per step function. Received: {states!r:.200}"
            )
        outputs = [f(tokens, s) for f, s in zip(step_fns, states)]
        _check_members(outputs)
        log_probs = ops.stack(
            [ops.cast(out[0], "float32") for out in outputs], axis=0
        )
        if from_logits:
            log_probs = ops.log_softmax(log_probs, axis=-1)
        mean = ops.logsumexp(log_probs, axis=0) - ops.log(
            float(len(step_fns))
        )
        attentions = [out[2] for out in outputs]
        attention = None
        if all(a is not None for a in attentions) and (
            len({tuple(a.shape) for a in attentions}) == 1
        ):
            attention = ops.mean(
                ops.stack([ops.cast(a, "float32") for a in attentions]), 0
            )
        return mean, tuple(out[1] for out in outputs), attention

    return step


def _check_members(outputs: list) -> None:
    """The members' log-probabilities must have one shape: the same rows
    and the same vocabulary."""
    for i, out in enumerate(outputs):
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise ValueError(
                f"Every step function must return (log_probs, new_state, "
                f"attention). Received from step_fns[{i}]: {out!r:.120}"
            )
    shapes = [tuple(out[0].shape) for out in outputs]
    for i, shape in enumerate(shapes):
        if len(shape) != 2 or any(
            a is not None and b is not None and a != b
            for a, b in zip(shape, shapes[0])
        ):
            received = ", ".join(
                f"step_fns[{j}] -> log_probs.shape={shape_str(s)}"
                for j, s in enumerate(shapes)
            )
            raise ValueError(
                "The members of an ensemble must share one vocabulary and "
                "return log_probs of one shape (num_rows, vocab_size). "
                f"Received: {received}"
            )


def ensemble_state(*states) -> tuple:
    """The initial state of an `ensemble_step`: the members' states."""
    return tuple(states)
