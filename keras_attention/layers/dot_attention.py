"""Luong "dot" attention."""

from typing import Optional

import keras

from keras_attention.checks import shape_str
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.ops.scores import dot_score
from keras_attention.ops.scores import sqrt_dim_scale
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


@keras.saving.register_keras_serializable(package="keras_attention")
class DotAttention(BaseAttention):
    """Dot-product attention layer, Luong's "dot" score.

    For each query `q` (a decoder state) and source positions `i` with keys
    `k_i` and values `h_i` (encoder states):

        e_i = s * q . k_i
        alpha = softmax(e)
        context = sum_i alpha_i h_i

    where `s` is `1`, a learned scalar (`use_scale=True`, TFA's "scaled"
    Luong attention), `1 / sqrt(Dk)` (`scale_by_dim=True`) or both.

    Reference:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025)

    Args:
        use_scale: If `True`, learns a scalar multiplied into the scores,
            initialised to `1.0`. Defaults to `False`.
        scale_by_dim: If `True`, divides the scores by `sqrt(Dk)`.
            Defaults to `False`.
        dropout: Float between 0 and 1. Fraction of the attention weights to
            drop during training. Defaults to `0.0`.
        seed: Python integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: `(batch_size, Tq, Dq)` or `(batch_size, Dq)`.
        value: `(batch_size, S, Dv)`.
        key: Optional `(batch_size, S, Dk)`, defaults to `value`.
            `Dq` must equal `Dk`.
        query_mask: Optional boolean `(batch_size, Tq)`; filled in from the
            Keras mask of `query`.
        value_mask: Optional boolean `(batch_size, S)`; filled in from the
            Keras mask of `value`.
        training: Python boolean, whether dropout is applied.
        use_causal_mask: Python boolean, masks source positions `j > i`.

    Returns:
        `(context, weights)` of shapes `(batch_size, Tq, Dv)` and
        `(batch_size, Tq, S)` (or `(batch_size, Dv)`, `(batch_size, S)`).

    Raises:
        ValueError: if `Dq != Dk`, on wrong ranks, batch sizes, mask shapes
            or a non-floating input.

    Example:

    ```python
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(1000, 64, mask_zero=True)(src)
    enc, h, c = keras.layers.LSTM(128, return_sequences=True,
                                  return_state=True)(x)
    y = keras.layers.Embedding(1000, 64, mask_zero=True)(tgt)
    dec = keras.layers.LSTM(128, return_sequences=True)(y,
                                                        initial_state=[h, c])
    context, weights = keras_attention.DotAttention()(dec, enc)
    ```
    """

    def __init__(
        self, use_scale: bool = False, scale_by_dim: bool = False, **kwargs
    ):
        super().__init__(**kwargs)
        self.use_scale = use_scale
        self.scale_by_dim = scale_by_dim

    def query_size_from_key_size(self, key_size: int) -> Optional[int]:
        """The dot score needs queries of the key size."""
        return key_size

    def _check_feature_sizes(
        self, query_shape: Shape, value_shape: Shape, key_shape: Shape
    ):
        if query_shape[-1] != key_shape[-1]:
            raise ValueError(
                f"{self.__class__.__name__}: the dot score needs the same "
                "feature size for `query` and `key` (use "
                "MultiplicativeAttention or AdditiveAttention otherwise). "
                f"Received: query.shape={shape_str(query_shape)}, "
                f"key.shape={shape_str(key_shape)}"
            )

    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        _, _, key_shape = self._validate_shapes(
            query_shape, value_shape, key_shape
        )
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight(
                name="scale", shape=(), initializer="ones", dtype=self.dtype
            )
        self._dim_scale = (
            sqrt_dim_scale(key_shape[-1]) if self.scale_by_dim else None
        )

    def score(self, query: Tensor, projected_key: Tensor) -> Tensor:
        scale = self._dim_scale
        if self.scale is not None:
            learned = keras.ops.cast(self.scale, query.dtype)
            scale = learned if scale is None else learned * scale
        return dot_score(query, projected_key, scale)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {"use_scale": self.use_scale, "scale_by_dim": self.scale_by_dim}
        )
        return config
