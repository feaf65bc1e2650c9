"""Ensembles: one step function from several, by averaging probabilities."""

from typing import Sequence

from keras import ops

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
        ValueError: on an empty `step_fns`.

    Example:

    ```python
    step = ensemble_step([model_a.step, model_b.step])
    state = ensemble_state(model_a.initial_state(x), model_b.initial_state(x))
    out = beam_search_decode(step, START, state, END, 50)
    ```
    """
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


def ensemble_state(*states) -> tuple:
    """The initial state of an `ensemble_step`: the members' states."""
    return tuple(states)
