"""Bahdanau (additive) attention: its score, weights and layer."""

import math
from typing import Any
from typing import Optional

import keras
from keras import ops

from keras_attention.checks import check_positive_int
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.ops.scores import additive_score
from keras_attention.typing import Constraint
from keras_attention.typing import Initializer
from keras_attention.typing import Regularizer
from keras_attention.typing import Shape
from keras_attention.typing import Tensor

DEFAULT_MAX_BLOCK_ELEMENTS = 1 << 19


class AdditiveScore:
    """Bahdanau's additive score and its weights, for the attention layers.

    `AdditiveAttention`, `LocationSensitiveAttention` and
    `BahdanauMonotonicAttention` share it: the weights `W1` (`key_kernel`,
    `(Dk, units)`), `W2` (`query_kernel`, `(Dq, units)`), `v`
    (`score_kernel`, `(units,)`), the optional bias `b` (`bias`) and gain
    `g` (`score_gain`, weight normalization), and the score
    `e_i = v^T tanh(W1 k_i + W2 q + b [+ extra_i])` of
    `keras_attention.ops.additive_score`. The layer provides `units` and
    `kernel_initializer` (`set_additive_options` keeps it with the bias
    initializer, regularizer and constraint of `AdditiveAttention` and
    `LocationSensitiveAttention`); the `build_*` methods are called in the
    order that gives each layer its weight order.
    """

    def set_additive_options(
        self,
        kernel_initializer: Initializer,
        bias_initializer: Initializer,
        kernel_regularizer: Regularizer,
        kernel_constraint: Constraint,
    ) -> None:
        """Keeps the options of the additive weights as Keras objects.

        The kernel initializer, regularizer and constraint are those of
        `W1`, `W2`, `v` (and the layer's other kernels), the bias
        initializer that of `b`. `additive_options_config` gives them back
        for `get_config`.
        """
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)

    def additive_options_config(self) -> dict:
        """The options of `set_additive_options`, serialized."""
        return {
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
        }

    def build_additive_kernels(
        self,
        query_size: int,
        key_size: int,
        regularizer: Any = None,
        constraint: Any = None,
    ) -> None:
        """Creates `key_kernel`, `query_kernel` and `score_kernel`."""
        self.key_kernel = self.additive_kernel(
            "key_kernel", (key_size, self.units), regularizer, constraint
        )
        self.query_kernel = self.additive_kernel(
            "query_kernel", (query_size, self.units), regularizer, constraint
        )
        self.score_kernel = self.additive_kernel(
            "score_kernel", (self.units,), regularizer, constraint
        )

    def additive_kernel(
        self,
        name: str,
        shape: Shape,
        regularizer: Any = None,
        constraint: Any = None,
    ) -> keras.Variable:
        """A kernel with the layer's `kernel_initializer`."""
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=self.kernel_initializer,
            regularizer=regularizer,
            constraint=constraint,
            dtype=self.dtype,
        )

    def build_additive_bias(self, initializer: Any = "zeros") -> None:
        """Creates the bias `b` `(units,)` of the `tanh`."""
        self.bias = self.add_weight(
            name="bias",
            shape=(self.units,),
            initializer=initializer,
            dtype=self.dtype,
        )

    def build_score_gain(self) -> None:
        """Creates the gain `g` of weight normalization, `sqrt(1 / units)`."""
        self.score_gain = self.add_weight(
            name="score_gain",
            shape=(),
            initializer=keras.initializers.Constant(
                math.sqrt(1.0 / self.units)
            ),
            dtype=self.dtype,
        )

    def score_vector(self, dtype: Optional[str] = None) -> Tensor:
        """The vector `v` of the score, `g v / ||v||` with a gain."""
        v = self.score_kernel
        if dtype is not None:
            v = ops.cast(v, dtype)
        if self.score_gain is not None:
            gain = self.score_gain if dtype is None else ops.cast(
                self.score_gain, dtype
            )
            v = gain * v / ops.sqrt(ops.sum(ops.square(v)))
        return v

    def project_key(self, key: Tensor) -> Tensor:
        """`W1 k_i`, computed once per memory."""
        return ops.matmul(key, ops.cast(self.key_kernel, key.dtype))

    def additive_energy(
        self,
        query: Tensor,
        projected_key: Tensor,
        extra: Optional[Tensor] = None,
        max_block_elements: Optional[int] = None,
    ) -> Tensor:
        """`v^T tanh(W1 k_i + W2 q + b [+ extra_i])` for each position.

        Args:
            query: `(batch_size, Tq, Dq)`, or `(batch_size, Dq)` for one
                step.
            projected_key: `(batch_size, S, units)` from `project_key`.
            extra: Optional `(batch_size, S, units)` term added to the keys
                (the location features of location-sensitive attention).
            max_block_elements: Bound on the elements of one block of the
                `tanh` term (`keras_attention.ops.additive_score`).

        Returns:
            Scores `(batch_size, Tq, S)`, or `(batch_size, S)` for one step,
            in the dtype of `query`.
        """
        dtype = query.dtype
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        query_proj = ops.matmul(query, ops.cast(self.query_kernel, dtype))
        if self.bias is not None:
            query_proj = query_proj + ops.cast(self.bias, dtype)
        keys = projected_key if extra is None else projected_key + extra
        scores = additive_score(
            query_proj,
            ops.cast(keys, dtype),
            self.score_vector(dtype),
            max_block_elements=max_block_elements,
        )
        return ops.squeeze(scores, 1) if single_step else scores


@keras.saving.register_keras_serializable(package="keras_attention")
class AdditiveAttention(AdditiveScore, BaseAttention):
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
        kernel_initializer: Initializer = "glorot_uniform",
        bias_initializer: Initializer = "zeros",
        kernel_regularizer: Regularizer = None,
        kernel_constraint: Constraint = None,
        max_block_elements: int | None = DEFAULT_MAX_BLOCK_ELEMENTS,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.use_bias = use_bias
        self.normalize = normalize
        self.set_additive_options(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            kernel_constraint,
        )
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
        self.build_additive_kernels(
            query_shape[-1],
            key_shape[-1],
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.build_additive_bias(self.bias_initializer)
        self.score_gain = None
        if self.normalize:
            self.build_score_gain()

    def score(self, query: Tensor, projected_key: Tensor) -> Tensor:
        return self.additive_energy(
            query, projected_key, max_block_elements=self.max_block_elements
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "use_bias": self.use_bias,
                "normalize": self.normalize,
                **self.additive_options_config(),
                "max_block_elements": self.max_block_elements,
            }
        )
        return config
