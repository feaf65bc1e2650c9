"""Luong "general" (multiplicative) attention."""

from typing import Any
from typing import Optional

import keras

from keras_attention.layers.base_attention import BaseAttention
from keras_attention.ops.scores import dot_score
from keras_attention.ops.scores import multiplicative_key_projection
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


@keras.saving.register_keras_serializable(package="keras_attention")
class MultiplicativeAttention(BaseAttention):
    """Multiplicative attention layer, Luong's "general" score.

    For each query `q` and source position `i`:

        e_i = s * q^T W k_i
        alpha = softmax(e)
        context = sum_i alpha_i h_i

    with a learned `W` of shape `(Dq, Dk)`, so the query and key sizes may
    differ, and `s` an optional learned scalar (`use_scale=True`). The keys
    are projected once per memory (`W k_i`, see `project_key`), which makes
    step-wise decoding a dot score per step.

    Reference:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025)

    Args:
        use_scale: If `True`, learns a scalar multiplied into the scores,
            initialised to `1.0`. Defaults to `False`.
        kernel_initializer: Initializer of `W`. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Optional regularizer of `W`.
        kernel_constraint: Optional constraint of `W`.
        dropout: Float between 0 and 1. Fraction of the attention weights to
            drop during training. Defaults to `0.0`.
        seed: Python integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: `(batch_size, Tq, Dq)` or `(batch_size, Dq)`.
        value: `(batch_size, S, Dv)`.
        key: Optional `(batch_size, S, Dk)`, defaults to `value`.
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
        ValueError: on wrong ranks, batch sizes, mask shapes or a
            non-floating input.

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
    context, weights = keras_attention.MultiplicativeAttention()(dec, enc)
    ```
    """

    def __init__(
        self,
        use_scale: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.use_scale = use_scale
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)

    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        query_shape, _, key_shape = self._validate_shapes(
            query_shape, value_shape, key_shape
        )
        self.kernel = self.add_weight(
            name="kernel",
            shape=(query_shape[-1], key_shape[-1]),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            dtype=self.dtype,
        )
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight(
                name="scale", shape=(), initializer="ones", dtype=self.dtype
            )

    def project_key(self, key: Tensor) -> Tensor:
        kernel = keras.ops.cast(self.kernel, key.dtype)
        return multiplicative_key_projection(key, kernel)

    def score(self, query: Tensor, projected_key: Tensor) -> Tensor:
        scale = None
        if self.scale is not None:
            scale = keras.ops.cast(self.scale, query.dtype)
        return dot_score(query, projected_key, scale)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "use_scale": self.use_scale,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "kernel_constraint": keras.constraints.serialize(
                    self.kernel_constraint
                ),
            }
        )
        return config
