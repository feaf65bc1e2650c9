"""The GNMT length and coverage penalties of beam search.

Reference:
    - [Wu et al., 2016](https://arxiv.org/abs/1609.08144), eq. 14
"""

from typing import Union

from keras import ops

from keras_attention.checks import check_float
from keras_attention.checks import check_scalar_tensor
from keras_attention.checks import is_tensor
from keras_attention.typing import Tensor


def check_weight(
    name: str, value: Union[float, Tensor]
) -> Union[float, Tensor]:
    """A penalty weight: a non-negative finite Python float, or a scalar
    float tensor (used as it is)."""
    if is_tensor(value):
        return check_scalar_tensor(name, value, "float")
    return check_float(name, value, low=0.0)


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty `lp(Y) = ((5 + |Y|) / 6) ** alpha`.

    Beam search ranks hypotheses by `log P(Y) / lp(Y)`; `alpha = 0` ranks by
    the plain log-probability, larger `alpha` favours longer hypotheses.

    Reference:
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144), eq. 14

    Args:
        lengths: Integer tensor, hypothesis lengths.
        alpha: Non-negative finite float (or a scalar float tensor).

    Raises:
        ValueError: for a negative, NaN or infinite `alpha`.

    Returns:
        float32 tensor of the shape of `lengths`.
    """
    alpha = check_weight("alpha", alpha)
    lengths = ops.cast(lengths, "float32")
    return ops.power((5.0 + lengths) / 6.0, alpha)


def coverage_penalty(coverage: Tensor, beta: float) -> Tensor:
    """GNMT coverage penalty `cp = beta * sum_i log(min(c_i, 1))`.

    `c_i = sum_t alpha_t,i` is the attention source position `i` received
    over the hypothesis. The penalty is `0` for a hypothesis that gave every
    source position a total weight of at least 1, and negative otherwise.
    Positions whose coverage is exactly `0` (padding, whose weights are
    exactly zero) count as covered, as in TensorFlow Addons; so do
    negative and NaN entries, which no attention gives.

    Reference:
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144), eq. 14

    Args:
        coverage: float `(num_rows, S)` (or `(num_rows, ...)`: every axis
            after the first is summed over), the summed attention.
        beta: Non-negative finite float (or a scalar float tensor), GNMT's
            `beta`.

    Returns:
        float32 `(num_rows,)`.

    Raises:
        ValueError: for a negative, NaN or infinite `beta`.
    """
    beta = check_weight("beta", beta)
    coverage = ops.cast(coverage, "float32")
    # Replaced before the log: no NaN from a zero, negative or NaN entry.
    coverage = ops.where(coverage > 0.0, coverage, 1.0)
    logs = ops.log(ops.minimum(coverage, 1.0))
    axes = tuple(range(1, len(logs.shape)))
    return beta * ops.sum(logs, axis=axes)
