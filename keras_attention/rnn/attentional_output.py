"""Luong's attentional hidden state: `tanh(W_c [c_t; h_t])`."""

from typing import Any
from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.checks import check_positive_int
from keras_attention.checks import check_same_batch
from keras_attention.checks import shape_str
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionalOutput(keras.layers.Layer):
    """Luong's attentional hidden state, from a context and a decoder state.

    For each decoder step, with context `c_t` (the output of an attention
    layer) and decoder state `h_t`:

        a_t = activation(W_c [c_t; h_t] + b)

    with a learned `W_c` of shape `(Dc + Dh, units)` and an optional bias
    `b` (Luong et al. use `tanh` and no bias). `a_t` is what Luong's model
    feeds to the softmax layer, and, with input feeding, to the decoder
    input of the next step. The layer works on whole sequences
    `(batch_size, T, D)` (sequence mode) and on single steps
    `(batch_size, D)` (step-wise decoding).

    Reference:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025), eq. (5).

    Args:
        units: Positive integer, the size of `a_t`.
        activation: Activation function. Defaults to `"tanh"`.
        use_bias: If `True`, adds `b`. Defaults to `False`.
        kernel_initializer: Initializer of `W_c`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: Initializer of `b`. Defaults to `"zeros"`.
        kernel_regularizer: Optional regularizer of `W_c`.
        bias_regularizer: Optional regularizer of `b`.
        kernel_constraint: Optional constraint of `W_c`.
        bias_constraint: Optional constraint of `b`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        context: Context vectors, `(batch_size, T, Dc)` or
            `(batch_size, Dc)`.
        decoder_output: Decoder states, `(batch_size, T, Dh)` or
            `(batch_size, Dh)`, the same rank as `context`.

    Returns:
        The attentional states `(batch_size, T, units)` (or
        `(batch_size, units)`). The output carries the Keras mask of
        `context`; the attention layers of this package give the context the
        mask of their query, i.e. the decoder's mask.

    Raises:
        ValueError: if `units` is not a positive integer; if `context` and
            `decoder_output` differ in rank, batch size or number of steps,
            have a rank other than 2 or 3 or an unknown feature size.

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
    attentional = keras_attention.AttentionalOutput(128)(context, dec)
    logits = keras.layers.Dense(1000)(attentional)
    ```
    """

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.supports_masking = True

    def _validate_shapes(
        self, context_shape: Shape, decoder_output_shape: Shape
    ):
        context_shape = tuple(context_shape)
        decoder_output_shape = tuple(decoder_output_shape)
        received = (
            f"Received: context.shape={shape_str(context_shape)}, "
            f"decoder_output.shape={shape_str(decoder_output_shape)}"
        )
        if len(context_shape) not in (2, 3) or len(
            decoder_output_shape
        ) != len(context_shape):
            raise ValueError(
                f"{self.__class__.__name__}: `context` and `decoder_output` "
                "must both have rank 3 (batch_size, T, D) or both rank 2 "
                f"(batch_size, D). {received}"
            )
        check_same_batch(
            self.__class__.__name__,
            context=context_shape,
            decoder_output=decoder_output_shape,
        )
        if len(context_shape) == 3 and None not in (
            context_shape[1],
            decoder_output_shape[1],
        ) and context_shape[1] != decoder_output_shape[1]:
            raise ValueError(
                f"{self.__class__.__name__}: `context` and `decoder_output` "
                f"must have the same number of steps. {received}"
            )
        if context_shape[-1] is None or decoder_output_shape[-1] is None:
            raise ValueError(
                f"{self.__class__.__name__}: the last (feature) dimension of "
                f"`context` and `decoder_output` must be known. {received}"
            )
        return context_shape, decoder_output_shape

    def build(self, context_shape: Shape, decoder_output_shape: Shape) -> None:
        context_shape, decoder_output_shape = self._validate_shapes(
            context_shape, decoder_output_shape
        )
        self.kernel = self.add_weight(
            name="kernel",
            shape=(context_shape[-1] + decoder_output_shape[-1], self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            dtype=self.dtype,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(self.units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                dtype=self.dtype,
            )

    def call(self, context: Tensor, decoder_output: Tensor) -> Tensor:
        self._validate_shapes(context.shape, decoder_output.shape)
        dtype = self.compute_dtype
        concat = ops.concatenate(
            [ops.cast(context, dtype), ops.cast(decoder_output, dtype)],
            axis=-1,
        )
        outputs = ops.matmul(concat, ops.cast(self.kernel, dtype))
        if self.bias is not None:
            outputs = outputs + ops.cast(self.bias, dtype)
        return self.activation(outputs)

    def compute_mask(
        self, context: Tensor, previous_mask: Optional[Tensor] = None
    ) -> Optional[Tensor]:
        return previous_mask

    def compute_output_shape(
        self, context_shape: Shape, decoder_output_shape: Shape
    ) -> Tuple[Shape, Shape]:
        context_shape, _ = self._validate_shapes(
            context_shape, decoder_output_shape
        )
        return context_shape[:-1] + (self.units,)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "bias_regularizer": keras.regularizers.serialize(
                    self.bias_regularizer
                ),
                "kernel_constraint": keras.constraints.serialize(
                    self.kernel_constraint
                ),
                "bias_constraint": keras.constraints.serialize(
                    self.bias_constraint
                ),
            }
        )
        return config
