"""Bahdanau (additive) attention, with its projections."""

import math
from typing import Any
from typing import Optional

import keras
from keras import ops

from keras_attention.base_attention import BaseAttention
from keras_attention.checks import check_positive_int
from keras_attention.scores import additive_score
from keras_attention.typing import Shape
from keras_attention.typing import Tensor

DEFAULT_MAX_BLOCK_ELEMENTS = 1 << 19


@keras.saving.register_keras_serializable(package="keras_attention")
class AdditiveAttention(BaseAttention):
    """Additive attention layer, Bahdanau's score with its projections.

    For each query `q` and source position `i`:

        e_i = v^T tanh(W1 k_i + W2 q + b)
        alpha = softmax(e)
        context = sum_i alpha_i h_i

    with learned `W1` `(Dk, units)`, `W2` `(Dq, units)`, `v` `(units,)` and an
    optional bias `b` `(units,)`. With `normalize=True`, `v` is replaced by
    `g * v / ||v||` with a learned scalar `g` (weight normalization, TFA's
    "normed" Bahdanau attention). Unlike `keras.layers.AdditiveAttention`,
    which has no projections, this is the full score of the paper.

    The keys are projected once per memory (`W1 k_i`, see `project_key`).
    The `tanh` term has `batch_size * Tq * S * units` elements. It is
    computed in blocks of at most `max_block_elements` elements (groups of
    examples times blocks of query rows; at least one query row of one
    example, `S * units` elements) with a hand-written gradient that
    recomputes each block in the backward pass, so the score needs memory
    for a few blocks, not for the whole term, for static and dynamic shapes
    alike. The blocks are small enough to stay in the CPU caches, which also
    makes the layer faster than the naive formulation. When the whole term
    fits in one block, or for one decoder step (`Tq == 1`), it is computed in
    one piece and kept for the backward pass.

    Reference:
        - [Bahdanau et al., 2014](https://arxiv.org/abs/1409.0473)
        - [Salimans & Kingma, 2016](https://arxiv.org/abs/1602.07868)
          (weight normalization)

    Args:
        units: Positive integer, size of the hidden layer of the score.
        use_bias: If `True`, adds `b` inside the `tanh`. Defaults to `True`.
        normalize: If `True`, weight-normalizes `v`. Defaults to `False`.
        kernel_initializer: Initializer of `W1`, `W2` and `v`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: Initializer of `b`. Defaults to `"zeros"`.
        kernel_regularizer: Optional regularizer of `W1`, `W2` and `v`.
        kernel_constraint: Optional constraint of `W1`, `W2` and `v`.
        max_block_elements: Positive integer or `None`. Bound on the
            elements of one block of the `tanh` term (see above); `None`
            computes the term in one piece. Defaults to `524288` (2 MiB of
            float32).
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
        ValueError: if `units` is not a positive integer, on wrong ranks,
            batch sizes, mask shapes or a non-floating input.

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
    context, weights = keras_attention.AdditiveAttention(64)(dec, enc)
    ```
    """

    def __init__(
        self,
        units: int,
        use_bias: bool = True,
        normalize: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        max_block_elements: int | None = DEFAULT_MAX_BLOCK_ELEMENTS,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.use_bias = use_bias
        self.normalize = normalize
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.max_block_elements = check_positive_int(
            "max_block_elements", max_block_elements, allow_none=True
        )

    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        query_shape, _, key_shape = self._validate_shapes(
            query_shape, value_shape, key_shape
        )

        def kernel(name: str, shape: Shape):
            return self.add_weight(
                name=name,
                shape=shape,
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
                constraint=self.kernel_constraint,
                dtype=self.dtype,
            )

        self.key_kernel = kernel("key_kernel", (key_shape[-1], self.units))
        self.query_kernel = kernel(
            "query_kernel", (query_shape[-1], self.units)
        )
        self.score_kernel = kernel("score_kernel", (self.units,))
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(self.units,),
                initializer=self.bias_initializer,
                dtype=self.dtype,
            )
        self.score_gain = None
        if self.normalize:
            self.score_gain = self.add_weight(
                name="score_gain",
                shape=(),
                initializer=keras.initializers.Constant(
                    math.sqrt(1.0 / self.units)
                ),
                dtype=self.dtype,
            )

    def score_vector(self, dtype: Optional[str] = None) -> Tensor:
        """The vector `v` of the score (weight-normalized if `normalize`)."""
        v = self.score_kernel
        if dtype is not None:
            v = ops.cast(v, dtype)
        if self.normalize:
            gain = self.score_gain if dtype is None else ops.cast(
                self.score_gain, dtype
            )
            v = gain * v / ops.sqrt(ops.sum(ops.square(v)))
        return v

    def project_key(self, key: Tensor) -> Tensor:
        return ops.matmul(key, ops.cast(self.key_kernel, key.dtype))

    def score(self, query: Tensor, projected_key: Tensor) -> Tensor:
        query_proj = ops.matmul(query, ops.cast(self.query_kernel, query.dtype))
        if self.bias is not None:
            query_proj = query_proj + ops.cast(self.bias, query.dtype)
        return additive_score(
            query_proj,
            projected_key,
            self.score_vector(query.dtype),
            max_block_elements=self.max_block_elements,
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "use_bias": self.use_bias,
                "normalize": self.normalize,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "kernel_constraint": keras.constraints.serialize(
                    self.kernel_constraint
                ),
                "max_block_elements": self.max_block_elements,
            }
        )
        return config
