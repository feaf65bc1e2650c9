"""Loss and metric of the NMT example: both ignore the padding targets;
`sparse_cross_entropy`, the token cross-entropy they train with.

Registered under package `keras_attention` (`keras_attention>MaskedLoss`),
so that the compiled training model saves to `.keras` and loads back with
`safe_mode=True` without `custom_objects`. Files saved before, under the
first names (`nmt>MaskedLoss`, ...), still load: those names are aliases
in `keras.saving.get_custom_objects()`.
"""

from typing import Any
from typing import Callable
from typing import Optional
from typing import Tuple

from keras_attention.typing import Tensor

import keras
from keras import ops


# Label probabilities down to which `sparse_cross_entropy` takes the
# logarithm of the softmax: normal float32 numbers, far from the subnormal
# ones (below 1.2e-38), whose logarithm loses precision.
TINY_PROBABILITY = 1e-30


def sparse_cross_entropy(labels: Tensor, logits: Tensor) -> Tensor:
    """The cross-entropy of float `logits` `(..., V)` against the integer
    `labels` `(...)`: `logsumexp(logits) - logits[label]`, `(...)`, as
    `keras.losses.sparse_categorical_crossentropy(labels, logits,
    from_logits=True)` gives it (the same values to rounding), with the
    gradient written by hand: `softmax(logits) - onehot(labels)` times
    the incoming gradient.

    The loss comes from the softmax: `-log(softmax(logits)[label])`, one
    pass over the vocabulary that the backward pass reuses, exact to
    float32 rounding while that probability is a normal float (above
    `TINY_PROBABILITY`; a loss below 69). Where one of the batch's is
    smaller, the whole batch takes the log-sum-exp instead:
    `softmax(x)_i = exp(x_i - logsumexp(x))` for every `i`, so
    `logsumexp(x) = max(x) - log(max(softmax(x)))`, where the largest
    probability is at least `1 / V` (no underflow): two more passes, only
    then. On TensorFlow's CPU this runs about 2x faster than the fused
    `SparseSoftmaxCrossEntropyWithLogits` op, whose reductions took a
    tenth of the NMT example's training step at a 5,000-word vocabulary
    (oneDNN's softmax does the work here); PyTorch gains too. On JAX the
    plain formula (Keras' loss) is used: XLA fuses it into the step, where
    the stored softmax made the training step of `benchmarks.peers`' models
    7-9 % slower.
    """
    if keras.backend.backend() == "jax":
        return keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True
        )
    labels = ops.cast(labels, "int32")

    @ops.custom_gradient
    def cross_entropy(logits: Tensor) -> Tuple[Tensor, Callable]:
        probs = ops.softmax(logits, axis=-1)
        # A negative label would count from the end of the row there: it is
        # sent past the end instead, where TensorFlow raises (an
        # InvalidArgumentError naming the index and the range, as the fused
        # op does for any label outside [0, V)).
        size = ops.shape(logits)[-1]
        index = ops.expand_dims(ops.where(labels < 0, size, labels), -1)
        picked = ops.squeeze(ops.take_along_axis(probs, index, axis=-1), -1)

        def from_log_sum_exp() -> Tensor:
            log_sum_exp = ops.max(logits, axis=-1) - ops.log(
                ops.max(probs, axis=-1)
            )
            label_logit = ops.take_along_axis(logits, index, axis=-1)
            return log_sum_exp - ops.squeeze(label_logit, -1)

        loss = ops.cond(
            ops.all(picked > TINY_PROBABILITY),
            lambda: -ops.log(picked),
            from_log_sum_exp,
        )

        def grad(*args: Tensor, upstream: Optional[Tensor] = None) -> Tensor:
            if upstream is None:
                (upstream,) = args
            onehot = ops.one_hot(labels, size, dtype=probs.dtype)
            return (probs - onehot) * ops.expand_dims(upstream, -1)

        return loss, grad

    return cross_entropy(logits)


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedLoss(keras.losses.Loss):
    """Token cross-entropy averaged over the non-padding targets.

    `loss = sum_t m_t CE_t / sum_t m_t` with `m_t = [y_t != 0]`, the
    cross-entropy of logits against one-hot labels smoothed by
    `label_smoothing` (`(1 - e) onehot + e / V`).

    `y_true` is either the target ids `(batch, T)` or target distributions
    `(batch, T, V)` (`keras_attention.training.distillation`: the reference
    token mixed with teachers' probabilities), whose rows of zeros are the
    padding (`m_t = [sum_v y_tv > 0]`); the smoothing mixes the same
    uniform distribution into them.
    """

    def __init__(
        self,
        label_smoothing: float = 0.0,
        name: str = "masked_loss",
        **kwargs: Any,
    ):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, y_true: Tensor, y_pred: Tensor) -> Any:
        logits = ops.cast(y_pred, "float32")
        if len(y_true.shape) == 3:
            return self._soft_call(ops.cast(y_true, "float32"), logits)
        y_true = ops.cast(y_true, "int32")
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        if self.label_smoothing:
            labels = ops.one_hot(y_true, ops.shape(logits)[-1])
            per_token = keras.losses.categorical_crossentropy(
                labels,
                logits,
                from_logits=True,
                label_smoothing=self.label_smoothing,
            )
        else:
            per_token = sparse_cross_entropy(y_true, logits)
        return _token_mean(per_token, mask)

    def _soft_call(self, distributions: Tensor, logits: Tensor) -> Tensor:
        total = ops.sum(distributions, axis=-1)
        mask = ops.cast(ops.greater(total, 0.0), "float32")
        if self.label_smoothing:
            size = ops.cast(ops.shape(logits)[-1], "float32")
            distributions = (
                (1.0 - self.label_smoothing) * distributions
                + self.label_smoothing * total[..., None] / size
            )
        # Padded rows are zeros: whatever their logits hold, they add 0.
        log_probs = ops.log_softmax(logits, axis=-1)
        per_token = -ops.sum(
            ops.where(distributions > 0.0, distributions * log_probs, 0.0),
            axis=-1,
        )
        return _token_mean(per_token, mask)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing})
        return config


def _token_mean(per_token: Tensor, mask: Tensor) -> Tensor:
    token_mean = ops.sum(per_token * mask) / ops.maximum(ops.sum(mask), 1.0)
    # One value per example, so that the Keras reduction (a mean over the
    # batch) returns the token mean unchanged.
    return ops.ones_like(per_token[:, 0]) * token_mean


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedMean(keras.losses.Loss):
    """A per-token loss the model computes itself (`y_pred`, `(batch, T)`:
    the lexical alignment head's negative log-likelihood), averaged over
    the non-padding targets of `y_true` (the target ids)."""

    def __init__(self, name: str = "masked_mean", **kwargs: Any):
        super().__init__(name=name, **kwargs)

    def call(self, y_true: Tensor, y_pred: Tensor) -> Any:
        mask = ops.cast(ops.not_equal(ops.cast(y_true, "int32"), 0), "float32")
        return _token_mean(ops.cast(y_pred, "float32"), mask)


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedAccuracy(keras.metrics.Metric):
    """Share of non-padding target tokens predicted exactly (argmax).

    With target distributions `(batch, T, V)` (`MaskedLoss`), the target
    token is each row's most probable one (the reference token while the
    teachers' weight is under a half), rows of zeros the padding."""

    def __init__(self, name: str = "masked_accuracy", **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable(
            shape=(), initializer="zeros", name="correct"
        )
        self.count = self.add_variable(
            shape=(), initializer="zeros", name="count"
        )

    def update_state(
        self, y_true: Tensor, y_pred: Tensor, sample_weight: Any = None
    ) -> None:
        if len(y_true.shape) == 3:
            mask = ops.greater(ops.sum(ops.cast(y_true, "float32"), -1), 0.0)
            y_true = ops.cast(ops.argmax(y_true, axis=-1), "int32")
        else:
            y_true = ops.cast(y_true, "int32")
            mask = ops.not_equal(y_true, 0)
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        hits = ops.logical_and(mask, ops.equal(predicted, y_true))
        self.correct.assign_add(ops.sum(ops.cast(hits, "float32")))
        self.count.assign_add(ops.sum(ops.cast(mask, "float32")))

    def result(self) -> Tensor:
        return self.correct / ops.maximum(self.count, 1.0)

    def reset_state(self) -> None:
        self.correct.assign(0.0)
        self.count.assign(0.0)


# The names the first `.keras` files carry (package "nmt"), as aliases.
for _cls in (MaskedLoss, MaskedMean, MaskedAccuracy):
    keras.saving.get_custom_objects()[f"nmt>{_cls.__name__}"] = _cls
del _cls
