"""Guided alignment: supervise attention weights with reference links.

`GuidedAlignmentLoss` is a `keras.losses.Loss` for `model.fit` that pulls
the attention weights `(batch_size, T, S)` of a model towards a reference
alignment matrix of the same shape, built from Pharaoh links with
`links_to_matrix` (OpenNMT-tf's `guided_alignment_cost`, Marian's
`--guided-alignment`).

Reference:
- [Chen et al., 2016](https://arxiv.org/abs/1607.01628), "Guided
  alignment training for topic-aware neural machine translation".
- OpenNMT-tf `opennmt/utils/losses.py: guided_alignment_cost`; Marian
  `src/data/alignment.cpp: WordAlignment::normalize`.
"""

from typing import Iterable, Optional, Tuple

import keras
import numpy as np
from keras import ops

from keras_attention.alignment.links import normalize_rows
from keras_attention.checks import check_bool
from keras_attention.checks import check_choice
from keras_attention.checks import check_float
from keras_attention.checks import check_int
from keras_attention.checks import check_links
from keras_attention.checks import shape_str
from keras_attention.checks import to_tensor
from keras_attention.typing import ArrayLike, Tensor

COST_TYPES = ("ce", "mse")


def links_to_matrix(
    links: Iterable,
    target_length: int,
    source_length: int,
    normalize: bool = False,
    padded_shape: Optional[Tuple[int, int]] = None,
    padding_value: float = -1.0,
    dtype: str = "float32",
) -> np.ndarray:
    """The dense reference alignment `(T, S)` of one sentence pair.

    `matrix[t, s] = 1` for every link `(s, t)`; with `normalize=True` each
    row is divided by its number of links (Marian: a target word's mass is
    shared among its source words), so a row sums to one or is all zero.

    Args:
        links: `(source, target)` pairs of token indices (as many rows as
            the model has attention rows: row `t` is the attention used to
            predict target token `t`).
        target_length: `T`, the number of attention rows of the pair.
        source_length: `S`, the number of source tokens of the pair.
        normalize: Whether to divide each row by its number of links.
            Defaults to `False` (OpenNMT-tf: every link weighs 1).
        padded_shape: Optional `(T_max, S_max)` to pad to, with
            `padding_value` outside the pair's `(T, S)` block (the
            padding `GuidedAlignmentLoss` recognises). Defaults to no
            padding.
        padding_value: The value of padded entries. Must be negative.
            Defaults to `-1.0`.
        dtype: The numpy dtype. Defaults to `"float32"`.

    Returns:
        A numpy array `(T, S)`, or `padded_shape`.

    Raises:
        ValueError: for a link out of range or not a pair of non-negative
            integers (`(1.7, 0)`), lengths that are not non-negative
            integers, a `padded_shape` smaller than `(T, S)`, a
            non-negative or non-finite `padding_value`, or a dtype that is
            not floating.

    Example:

    >>> links_to_matrix({(0, 0), (1, 0), (2, 1)}, 2, 3, normalize=True)
    array([[0.5, 0.5, 0. ],
           [0. , 0. , 1. ]], dtype=float32)
    """
    target_length = check_int("target_length", target_length, low=0)
    source_length = check_int("source_length", source_length, low=0)
    normalize = check_bool("normalize", normalize)
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise ValueError(
            f"`dtype` must be a floating dtype. Received: dtype={dtype!r}"
        )
    links = check_links("links", links)
    if padded_shape is not None:
        padding_value = check_float(
            "padding_value", padding_value, high=0.0, high_open=True
        )
        if (
            not isinstance(padded_shape, (tuple, list))
            or len(padded_shape) != 2
        ):
            raise ValueError(
                "`padded_shape` must be a (T_max, S_max) pair of integers. "
                f"Received: padded_shape={padded_shape!r}"
            )
        padded_shape = (
            check_int("padded_shape[0]", padded_shape[0], low=0),
            check_int("padded_shape[1]", padded_shape[1], low=0),
        )
    matrix = np.zeros((target_length, source_length), dtype=dtype)
    for s, t in links:
        if not (0 <= s < source_length and 0 <= t < target_length):
            raise ValueError(
                f"Link {s}-{t} is out of range for target_length="
                f"{target_length} and source_length={source_length}"
            )
        matrix[t, s] = 1.0
    if normalize:
        matrix = normalize_rows(matrix)
    if padded_shape is None:
        return matrix
    rows, cols = padded_shape
    if rows < target_length or cols < source_length:
        raise ValueError(
            "`padded_shape` must be at least (target_length, "
            f"source_length). Received: padded_shape={padded_shape} for "
            f"({target_length}, {source_length})"
        )
    out = np.full((rows, cols), padding_value, dtype=dtype)
    out[:target_length, :source_length] = matrix
    return out


@keras.saving.register_keras_serializable(package="keras_attention")
class GuidedAlignmentLoss(keras.losses.Loss):
    """Guided alignment loss on attention weights.

    With `A` the reference alignment `(batch_size, T, S)` (`y_true`) and
    `p` the attention weights (`y_pred`, same shape), the cost of target
    position `(b, t)` is

    - `"ce"`: `-sum_s A[b, t, s] * log(clip(p[b, t, s], eps, 1 - eps))`
    - `"mse"`: `mean_s (A[b, t, s] - p[b, t, s]) ** 2` over the pair's
      source positions,

    and the loss is `weight * sum_{b, t} cost(b, t) * m(b, t) /
    sum_{b, t} m(b, t)`: masked by the target length and normalised by the
    number of target tokens, `m` being 1 for a real target position and 0
    for padding (times any `sample_weight`).

    This is OpenNMT-tf's `guided_alignment_cost`: its Keras
    `CategoricalCrossentropy` / `MeanSquaredError` over the source axis,
    masked with `sequence_mask(target_length)`. Two differences, both
    no-ops on unpadded batches of normalised attention: OpenNMT-tf's Keras 2
    reduction divides by all `B * T` positions, padding included (here: by
    the real target tokens), and the CE re-normalises `p` over the whole
    padded source axis (here: `p` is used as it is; attention rows already
    sum to one).

    Padding. An entry of `y_true` below 0 is padding: a row whose entries
    are all negative is a padded target position (no cost, not counted);
    negative entries of a real row are padded source positions (excluded
    from the MSE mean). `links_to_matrix(..., padded_shape=...)` and
    `tf.data.Dataset.padded_batch(..., padding_values=-1.0)` pad this way.
    A real row with no links (all zeros) costs 0 with `"ce"` and pulls
    the weights towards 0 with `"mse"`; it is counted in both. Masks can
    also come from `sample_weight` `(batch_size, T)` or a Keras mask on
    `y_pred`.

    Args:
        cost_type: `"ce"` (cross-entropy) or `"mse"` (mean squared error).
            Defaults to `"ce"`.
        weight: Factor of the loss (`guided_alignment_weight`). Defaults to
            `1.0`.
        normalize: Whether to divide each reference row by its sum, so a
            target token aligned to `k` source tokens expects `1 / k` on
            each (Marian's normalisation). Defaults to `False`.
        epsilon: The clipping constant of `"ce"`. Defaults to `1e-7`
            (Keras' `epsilon()`).
        reduction: Keras reduction of the per-position costs. Defaults to
            `"mean_with_sample_weight"`, the normalisation above; `None`
            returns the `(batch_size, T)` costs.
        name: Name of the loss. Defaults to `"guided_alignment"`.
        dtype: The dtype of the computation. Defaults to `"float32"`, also
            under mixed precision (attention weights are cast).

    Call arguments:
        y_true: Reference alignment `(batch_size, T, S)`, padded with
            negative values.
        y_pred: Attention weights `(batch_size, T, S)`.
        sample_weight: Optional `(batch_size, T)` or `(batch_size,)`
            weights (0 = ignore).

    Returns:
        A scalar loss (or the `(batch_size, T)` costs with
        `reduction=None`).

    Raises:
        ValueError: for an unknown `cost_type`, a negative or non-finite
            `weight`, an `epsilon` outside `(0, 0.5)`, a `normalize` that
            is not a bool (wrong types raise an error that is both a
            `TypeError` and a `ValueError`), and, when called, a `y_pred`
            of another shape than `y_true` or a `sample_weight` that is
            neither `(batch_size, T)` nor `(batch_size,)`.

    Example:

    ```python
    model = keras.Model(
        inputs, {"logits": logits, "attention": weights}
    )
    model.compile(
        optimizer="adam",
        loss={
            "logits": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True),
            "attention": keras_attention.GuidedAlignmentLoss(
                "ce", weight=1.0),
        },
    )
    model.fit(dataset)  # y = {"logits": ids, "attention": alignments}
    ```
    """

    def __init__(
        self,
        cost_type: str = "ce",
        weight: float = 1.0,
        normalize: bool = False,
        epsilon: float = 1e-7,
        reduction: Optional[str] = "mean_with_sample_weight",
        name: str = "guided_alignment",
        dtype: Optional[str] = "float32",
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        owner = type(self).__name__
        self.cost_type = check_choice(
            "cost_type", cost_type, COST_TYPES, owner=owner
        )
        self.weight = check_float("weight", weight, low=0.0, owner=owner)
        # `clip(p, eps, 1 - eps)` needs `eps < 1 - eps`.
        self.epsilon = check_float(
            "epsilon", epsilon, low=0.0, high=0.5, low_open=True,
            high_open=True, owner=owner,
        )
        self.normalize = check_bool("normalize", normalize, owner=owner)

    def __call__(
        self,
        y_true: ArrayLike,
        y_pred: ArrayLike,
        sample_weight: Optional[ArrayLike] = None,
    ) -> Tensor:
        # The target mask comes from the padding of `y_true`; it joins the
        # sample weights, so "mean_with_sample_weight" divides by the
        # number of real target positions.
        owner = type(self).__name__
        y_true = ops.cast(to_tensor("y_true", y_true, owner), self.dtype)
        y_pred = to_tensor("y_pred", y_pred, owner)
        self._check_shapes(y_true, y_pred, sample_weight)
        mask = ops.cast(
            ops.any(ops.greater_equal(y_true, 0.0), axis=-1), self.dtype
        )
        if sample_weight is not None:
            sample_weight = ops.cast(
                to_tensor("sample_weight", sample_weight, owner), self.dtype
            )
            if len(sample_weight.shape) == 1:
                sample_weight = ops.expand_dims(sample_weight, -1)
            mask = mask * sample_weight
        return super().__call__(y_true, y_pred, sample_weight=mask)

    def _check_shapes(
        self, y_true: Tensor, y_pred: Tensor, sample_weight: Optional[Tensor]
    ) -> None:
        owner = type(self).__name__
        true_shape, pred_shape = tuple(y_true.shape), tuple(y_pred.shape)
        if len(true_shape) != 3 or len(pred_shape) != 3 or any(
            a is not None and b is not None and a != b
            for a, b in zip(true_shape, pred_shape)
        ):
            raise ValueError(
                f"{owner}: `y_true` and `y_pred` must both have shape "
                "(batch_size, T, S). Received: y_true.shape="
                f"{shape_str(true_shape)}, y_pred.shape="
                f"{shape_str(pred_shape)}"
            )
        if sample_weight is None:
            return
        weight_shape = tuple(
            to_tensor("sample_weight", sample_weight, owner).shape
        )
        if len(weight_shape) not in (1, 2) or any(
            a is not None and b is not None and a != b
            for a, b in zip(weight_shape, true_shape[:2])
        ):
            raise ValueError(
                f"{owner}: `sample_weight` must have shape (batch_size, T) "
                "or (batch_size,). Received: sample_weight.shape="
                f"{shape_str(weight_shape)}, y_true.shape="
                f"{shape_str(true_shape)}"
            )

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        """Per-position costs `(batch_size, T)`, 0 on padded rows."""
        y_true = ops.cast(y_true, self.dtype)
        y_pred = ops.cast(y_pred, self.dtype)
        valid = ops.greater_equal(y_true, 0.0)
        reference = ops.where(valid, y_true, 0.0)
        if self.normalize:
            total = ops.sum(reference, axis=-1, keepdims=True)
            reference = ops.where(
                total > 0, reference / ops.maximum(total, 1e-30), 0.0
            )
        row_valid = ops.any(valid, axis=-1)
        if self.cost_type == "ce":
            # Padded positions are replaced before the log: whatever they
            # hold (NaN, inf), they reach neither the cost nor a gradient.
            probs = ops.where(valid, y_pred, 1.0)
            probs = ops.clip(probs, self.epsilon, 1.0 - self.epsilon)
            logs = ops.where(valid, ops.log(probs), 0.0)
            cost = -ops.sum(reference * logs, axis=-1)
        else:
            pred = ops.where(valid, y_pred, 0.0)
            squared = ops.square(reference - pred)
            count = ops.sum(ops.cast(valid, self.dtype), axis=-1)
            cost = ops.sum(squared, axis=-1) / ops.maximum(count, 1.0)
        return self.weight * ops.where(row_valid, cost, 0.0)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "cost_type": self.cost_type,
                "weight": self.weight,
                "normalize": self.normalize,
                "epsilon": self.epsilon,
                "dtype": self.dtype,
            }
        )
        return config
