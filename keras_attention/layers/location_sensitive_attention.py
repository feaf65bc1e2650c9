"""Location-sensitive attention (Chorowski et al., 2015; Tacotron 2)."""

from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.checks import check_positive_int
from keras_attention.layers.additive_attention import AdditiveScore
from keras_attention.layers.stateful_attention import StatefulAttention
from keras_attention.ops.masking import masked_softmax
from keras_attention.typing import Constraint
from keras_attention.typing import Initializer
from keras_attention.typing import NestedTensor
from keras_attention.typing import Regularizer
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


def location_conv(inputs: Tensor, kernel: Tensor) -> Tensor:
    """The location convolution: `(N, S, C)` by `(k, C, F)`, "same" padding.

    Zeros beyond both ends of the `S` positions, an odd `k`. One more zero
    position is appended and its output cut off after: what "same" padding
    adds there anyway, and a zero-length memory then gives `(N, 0, F)` on
    every backend (PyTorch's convolution rejects an empty input).
    """
    inputs = ops.pad(inputs, [[0, 0], [0, 1], [0, 0]])
    return ops.conv(inputs, kernel, padding="same")[:, :-1]


@keras.saving.register_keras_serializable(package="keras_attention")
class LocationSensitiveAttention(AdditiveScore, StatefulAttention):
    """Additive attention with location features of the previous alignment.

    At each decoder step, for the query `q` and source position `i`:

        f = conv1d([alpha_prev, alpha_cum])      ("same" padding, no bias)
        e_i = v^T tanh(W1 k_i + W2 q + U f_i + b)
        alpha = softmax(e)
        context = sum_i alpha_i h_i

    `alpha_prev` is the previous step's alignment and `alpha_cum` the sum of
    all the previous alignments (Tacotron 2 stacks both as two input
    channels; with `cumulative=False` the convolution sees `alpha_prev`
    only, as Chorowski et al.). The convolution has `filters` filters of
    width `kernel_size`; `U` `(filters, units)` projects its features. The
    previous weights are zeroed at masked source positions before the
    convolution, and the convolution pads with zeros beyond the source end,
    so masked positions never reach a kept position; masked positions get
    exactly zero weight.

    The layer is stateful (`stateful` is `True`): it runs one decoder step
    at a time, in `AttentionWrapper` / `AttentionRNN` or through `attend`.
    Its alignment state is a dict `{"weights": (batch_size, S),
    "cumulative": (batch_size, S)}` (`{"weights": ...}` only when
    `cumulative=False`) in float32 (float64 under a float64 policy), all
    zeros before the first step, as in Tacotron 2. Whatever the state holds
    at masked source positions (even NaN or inf) is replaced by zeros before
    the step uses it. A zero-length memory (`S == 0`) gives `(batch_size,
    0)` weights and state and a zero context, for every kernel size.

    Reference:
        - [Chorowski et al., 2015](https://arxiv.org/abs/1506.07503)
        - [Shen et al., 2018](https://arxiv.org/abs/1712.05884) (Tacotron 2)

    Args:
        units: Positive integer, size of the hidden layer of the score.
        filters: Positive integer, number of location filters. Defaults to
            `32`.
        kernel_size: Odd positive integer, width of the location filters
            (odd, so that "same" padding is symmetric). Defaults to `31`.
        cumulative: If `True`, the convolution also sees the cumulative
            weights. Defaults to `True`.
        use_bias: If `True`, adds `b` inside the `tanh`. Defaults to `True`.
        kernel_initializer: Initializer of `W1`, `W2`, `v`, `U` and the
            filters. Defaults to `"glorot_uniform"`.
        bias_initializer: Initializer of `b`. Defaults to `"zeros"`.
        kernel_regularizer: Optional regularizer of the kernels.
        kernel_constraint: Optional constraint of the kernels.
        dropout: Float between 0 and 1, fraction of the weights dropped
            (in the context only, not in the alignment state) in training.
            Defaults to `0.0`.
        seed: Python integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: `(batch_size, Dq)`, one decoder step. A `(batch_size, Tq, Dq)`
            sequence raises a `ValueError`: the layer is stateful.
        value: `(batch_size, S, Dv)`.
        key: Optional `(batch_size, S, Dk)`, defaults to `value`.
        query_mask: Optional boolean `(batch_size,)`: `False` rows get zero
            weights and context and keep their alignment state.
        value_mask: Optional boolean `(batch_size, S)`; filled in from the
            Keras mask of `value`.
        training: Python boolean, whether dropout is applied.
        alignment_state: The previous step's state (see above). Defaults to
            `initial_alignment_state(value_mask)`.

    Returns:
        `(context, weights, next_alignment_state)`: `(batch_size, Dv)`,
        `(batch_size, S)` and the state of the same structure as
        `alignment_state`.

    Raises:
        ValueError: on a non-positive `units` or `filters`, an even or
            non-positive `kernel_size`, a rank-3 query or an ill-shaped
            `alignment_state`.

    Example:

    ```python
    encoder = keras.layers.LSTM(32, return_sequences=True)(source)
    attention = LocationSensitiveAttention(16, filters=8, kernel_size=7)
    decoder = AttentionRNN(keras.layers.LSTMCell(32), attention)
    ```
    """

    def __init__(
        self,
        units: int,
        filters: int = 32,
        kernel_size: int = 31,
        cumulative: bool = True,
        use_bias: bool = True,
        kernel_initializer: Initializer = "glorot_uniform",
        bias_initializer: Initializer = "zeros",
        kernel_regularizer: Regularizer = None,
        kernel_constraint: Constraint = None,
        dropout: float = 0.0,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.units = check_positive_int("units", units)
        self.filters = check_positive_int("filters", filters)
        self.kernel_size = check_positive_int("kernel_size", kernel_size)
        if self.kernel_size % 2 == 0:
            raise ValueError(
                "`kernel_size` must be odd, so that the location filters are "
                f"centred. Received: kernel_size={kernel_size!r}"
            )
        self.cumulative = bool(cumulative)
        self.use_bias = bool(use_bias)
        self.set_additive_options(
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            kernel_constraint,
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

        regularizer, constraint = (
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        self.build_additive_kernels(
            query_shape[-1], key_shape[-1], regularizer, constraint
        )
        channels = 2 if self.cumulative else 1
        self.location_kernel = self.additive_kernel(
            "location_kernel",
            (self.kernel_size, channels, self.filters),
            regularizer,
            constraint,
        )
        self.location_projection = self.additive_kernel(
            "location_projection",
            (self.filters, self.units),
            regularizer,
            constraint,
        )
        self.bias = None
        if self.use_bias:
            self.build_additive_bias(self.bias_initializer)
        self.score_gain = None

    # ------------------------------------------------------------------
    def alignment_state_spec(
        self, batch_size: Optional[int], source_length: Optional[int]
    ) -> NestedTensor:
        """`{"weights", "cumulative"}` (or `{"weights"}`), `(batch, S)`."""
        spec = keras.KerasTensor(
            (batch_size, source_length), dtype=self.state_dtype
        )
        if self.cumulative:
            return {"weights": spec, "cumulative": spec}
        return {"weights": spec}

    def initial_alignment_state(self, memory_mask: Tensor) -> NestedTensor:
        """Zeros for the previous (and cumulative) weights, `(batch, S)`."""
        zeros = ops.zeros(ops.shape(memory_mask), self.state_dtype)
        if self.cumulative:
            return {"weights": zeros, "cumulative": zeros}
        return {"weights": zeros}

    def location_features(
        self, alignment_state: NestedTensor, value_mask: Optional[Tensor] = None
    ) -> Tensor:
        """`U conv1d(...)` of the state: `(batch_size, S, units)`.

        Computed in float32 (float64 under a float64 policy), the state's
        dtype, and returned in the score dtype.
        """
        dtype = self.state_dtype
        channels = [alignment_state["weights"]]
        if self.cumulative:
            channels.append(alignment_state["cumulative"])
        inputs = ops.stack([ops.cast(c, dtype) for c in channels], axis=-1)
        if value_mask is not None:
            inputs = ops.where(ops.expand_dims(value_mask, -1), inputs, 0.0)
        features = location_conv(
            inputs, ops.cast(self.location_kernel, dtype)
        )
        features = ops.matmul(
            features, ops.cast(self.location_projection, dtype)
        )
        return ops.cast(features, self.score_dtype)

    def stateful_alignment(
        self,
        query: Tensor,
        projected_key: Tensor,
        value_mask: Optional[Tensor],
        alignment_state: NestedTensor,
        training: Optional[bool] = None,
    ) -> Tuple[Tensor, NestedTensor]:
        """The softmax weights of one step and the next state.

        Args:
            query: `(batch_size, Dq)` in the score dtype.
            projected_key: `(batch_size, S, units)`, from `project_key`.
            value_mask: Boolean `(batch_size, S)` or `None`.
            alignment_state: The previous step's state (see the class).
            training: Unused (no training-only behaviour).

        Returns:
            `(weights, next_state)`: weights `(batch_size, S)` in
            `state_dtype` and `{"weights": weights, "cumulative":
            cumulative + weights}` (or `{"weights": weights}`).
        """
        scores = self.additive_energy(
            query,
            projected_key,
            extra=self.location_features(alignment_state, value_mask),
        )
        weights = ops.cast(masked_softmax(scores, value_mask), self.state_dtype)
        next_state = {"weights": weights}
        if self.cumulative:
            next_state["cumulative"] = alignment_state["cumulative"] + weights
        return weights, next_state

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "cumulative": self.cumulative,
                "use_bias": self.use_bias,
                **self.additive_options_config(),
            }
        )
        return config
