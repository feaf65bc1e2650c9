"""`OutputTargets`: training targets for the outputs that train only.

A mixin of the models whose call returns a dict of outputs (`Seq2Seq`
and `Translator`): a target tensor alone is the `"logits"` target, and an
output without a target (no loss: the attention, an untrained head) gets
its own prediction, so that Keras' compiled loss and metrics take the dict
as it is. Every backend.
"""

from typing import Any
from typing import Optional
from keras_attention.typing import Tensor


def complete_targets(y: Any, y_pred: Any) -> Any:
    """`y` as a dict over every output of `y_pred`: a tensor is the
    `"logits"` target; outputs without a target get their prediction."""
    if y is None or not isinstance(y_pred, dict):
        return y
    y = dict(y) if isinstance(y, dict) else {"logits": y}
    for name, value in y_pred.items():
        y.setdefault(name, value)
    return y


class OutputTargets:
    """`compute_loss` and `compute_metrics` over `complete_targets`
    (mixin of a `keras.Model`)."""

    def compute_loss(
        self,
        x: Tensor = None,
        y: Tensor = None,
        y_pred: Tensor = None,
        sample_weight: Any = None,
        training: Optional[bool] = True,
    ) -> Tensor:
        return super().compute_loss(
            x, complete_targets(y, y_pred), y_pred, sample_weight, training
        )

    def compute_metrics(
        self, x: Tensor, y: Tensor, y_pred: Tensor, sample_weight: Any = None
    ) -> dict:
        return super().compute_metrics(
            x, complete_targets(y, y_pred), y_pred, sample_weight
        )
