"""Input checks of the attention layers: ranks, batch sizes, dtypes, masks.

The functions check shapes and tensors; `AttentionInputChecks`, a part of
`BaseAttention`, applies them to a layer's inputs and masks, with the
layer's class name in the messages and its score's own feature size check
(`_check_feature_sizes`).
"""

from typing import Optional
from typing import Tuple

import keras

from keras_attention.checks import check_mask
from keras_attention.checks import check_same_batch
from keras_attention.checks import is_floating
from keras_attention.checks import shape_str
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


def validate_attention_shapes(
    owner: str,
    query_shape: Shape,
    value_shape: Shape,
    key_shape: Optional[Shape] = None,
) -> Tuple[Shape, Shape, Shape]:
    """Ranks, batch sizes, source lengths and known feature sizes.

    Args:
        owner: The class name that prefixes the messages.
        query_shape: `(batch_size, Tq, Dq)` or `(batch_size, Dq)`.
        value_shape: `(batch_size, S, Dv)`.
        key_shape: `(batch_size, S, Dk)`, or `None` for `value_shape`.

    Returns:
        The three shapes as tuples.

    Raises:
        ValueError: naming the argument, the expected and the received
            shape.
    """
    query_shape = tuple(query_shape)
    value_shape = tuple(value_shape)
    key_shape = value_shape if key_shape is None else tuple(key_shape)
    if len(query_shape) not in (2, 3):
        raise ValueError(
            f"{owner}: `query` must have rank 2 "
            "(batch_size, Dq) or rank 3 (batch_size, Tq, Dq). Received: "
            f"query.shape={shape_str(query_shape)}"
        )
    for name, shape in (("value", value_shape), ("key", key_shape)):
        if len(shape) != 3:
            raise ValueError(
                f"{owner}: `{name}` must have rank 3 "
                f"(batch_size, S, D{name[0]}). Received: "
                f"{name}.shape={shape_str(shape)}"
            )
    check_same_batch(owner, query=query_shape, value=value_shape, key=key_shape)
    if (
        value_shape[1] is not None
        and key_shape[1] is not None
        and value_shape[1] != key_shape[1]
    ):
        raise ValueError(
            f"{owner}: `key` and `value` must have the "
            "same number of source positions S. Received: "
            f"key.shape={shape_str(key_shape)}, "
            f"value.shape={shape_str(value_shape)}"
        )
    for name, shape in (
        ("query", query_shape),
        ("value", value_shape),
        ("key", key_shape),
    ):
        if shape[-1] is None:
            raise ValueError(
                f"{owner}: the last (feature) dimension "
                f"of `{name}` must be known. Received: "
                f"{name}.shape={shape_str(shape)}"
            )
    return query_shape, value_shape, key_shape


def check_floating_inputs(owner: str, **tensors) -> None:
    """Raises a `ValueError` for a non-floating tensor (`None`s skipped)."""
    for name, tensor in tensors.items():
        if tensor is None:
            continue
        dtype = keras.backend.standardize_dtype(tensor.dtype)
        if not is_floating(dtype):
            raise ValueError(
                f"{owner}: `{name}` must be a floating "
                f"point tensor. Received: {name}.dtype={dtype} with "
                f"{name}.shape={shape_str(tensor.shape)}"
            )


def attention_output_shapes(
    query_shape: Shape, value_shape: Shape, key_shape: Shape
) -> Tuple[Shape, Shape]:
    """Shapes of the context and the weights for validated input shapes."""
    known = [
        s[0] for s in (query_shape, value_shape, key_shape) if s[0] is not None
    ]
    batch = known[0] if known else None
    source = value_shape[1] if value_shape[1] is not None else key_shape[1]
    if len(query_shape) == 2:
        return ((batch, value_shape[-1]), (batch, source))
    return (
        (batch, query_shape[1], value_shape[-1]),
        (batch, query_shape[1], source),
    )


class AttentionInputChecks:
    """The input checks of an attention layer (a `BaseAttention` part).

    A score whose feature sizes must agree (the dot score: `Dq == Dk`)
    overrides `_check_feature_sizes`.
    """

    def _check_feature_sizes(
        self, query_shape: Shape, value_shape: Shape, key_shape: Shape
    ):
        """Hook for score-specific feature size checks."""

    def _validate_shapes(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ):
        shapes = validate_attention_shapes(
            self.__class__.__name__, query_shape, value_shape, key_shape
        )
        self._check_feature_sizes(*shapes)
        return shapes

    def _validate_tensors(
        self, query: Tensor, value: Tensor, key: Optional[Tensor]
    ):
        check_floating_inputs(
            self.__class__.__name__, query=query, value=value, key=key
        )
        return self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )

    def _check_value_mask(self, value_mask: Optional[Tensor], value: Tensor):
        return check_mask(
            self.__class__.__name__,
            "value_mask",
            value_mask,
            (value.shape[0], value.shape[1]),
        )

    def _check_step_masks(
        self,
        query: Tensor,
        value: Tensor,
        query_mask: Optional[Tensor],
        value_mask: Optional[Tensor],
    ) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        """The checked query mask and value mask of one `attend` call."""
        # (batch_size,) for one step, (batch_size, Tq) for a sequence.
        query_mask = check_mask(
            self.__class__.__name__,
            "query_mask",
            query_mask,
            tuple(query.shape[:-1]),
        )
        return query_mask, self._check_value_mask(value_mask, value)
