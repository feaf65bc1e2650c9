"""Monotonic attention (Raffel et al., 2017), Bahdanau and Luong energies."""

import math
import numbers
from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.checks import check_positive_int
from keras_attention.checks import shape_str
from keras_attention.layers.additive_attention import AdditiveScore
from keras_attention.layers.stateful_attention import StatefulAttention
from keras_attention.ops.monotonic import check_mode
from keras_attention.ops.monotonic import monotonic_attention
from keras_attention.typing import Initializer
from keras_attention.typing import NestedTensor
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


@keras.saving.register_keras_serializable(package="keras_attention")
class MonotonicAttention(StatefulAttention):
    """Base class of the monotonic attentions: everything but the energy.

    At each decoder step, with `e_i` the energy of source position `i` (given
    by the subclass) and `r` a learned scalar bias:

        p_i = sigmoid(e_i + r + noise)        (the "choosing" probability)
        alpha = monotonic_attention(p, alpha_prev, mode)
        context = sum_i alpha_i h_i

    `alpha` is not a softmax: it is the expected alignment of a process that
    scans the memory left to right from the previous step's position and
    stops at each position with probability `p_i`; its rows sum to at most
    1. The noise, Gaussian with standard deviation `sigmoid_noise`, is
    added in training only (it pushes the energies apart, so that `p` gets
    close to 0 or 1 and hard monotonic decoding works at test time). In
    `"hard"` mode, `p_i = 1 if e_i + r > 0 else 0`. Masked source positions
    get `p_i = 0`, hence exactly zero weight.

    The layer is stateful (`stateful` is `True`): it runs one decoder step
    at a time, in `AttentionWrapper` / `AttentionRNN` or through `attend`,
    and carries the alignment state `alpha_prev`, a `(batch_size, S)` tensor
    in float32 (float64 under a float64 policy).

    The initial state is one-hot on the first kept source position
    (position 0 unless the memory is left-padded; all zeros for a row with
    no kept position). Whatever the state holds at masked positions (even
    NaN or inf) is replaced by zeros before a step uses it. A zero-length
    memory (`S == 0`) gives `(batch_size, 0)` weights and state and a zero
    context, in every mode.

    Reference:
        - [Raffel et al., 2017](https://arxiv.org/abs/1704.00784)

    Args:
        units: Positive integer, size of the projections of the energy.
        sigmoid_noise: Non-negative float, standard deviation of the noise
            added to the energies in training. Defaults to `0.0`.
        sigmoid_noise_seed: Python integer, seed of that noise. Defaults to
            `None`.
        score_bias_init: Float, initial value of the scalar bias `r`; a
            negative value is advised for long memories. Defaults to `0.0`.
        mode: `"parallel"`, `"recursive"` or `"hard"`, how the alignment is
            computed (see `keras_attention.ops.monotonic_attention`).
            Defaults to `"parallel"`.
        kernel_initializer: Initializer of the kernels. Defaults to
            `"glorot_uniform"`.
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
        training: Python boolean, whether noise and dropout are applied.
        alignment_state: The previous step's alignment `(batch_size, S)`.
            Defaults to `initial_alignment_state(value_mask)`.

    Returns:
        `(context, weights, next_alignment_state)` of shapes
        `(batch_size, Dv)`, `(batch_size, S)` and `(batch_size, S)`.

    Raises:
        ValueError: on a non-positive `units`, a negative `sigmoid_noise`,
            an unknown `mode`, a rank-3 query or an ill-shaped
            `alignment_state`.
    """

    def __init__(
        self,
        units: int,
        sigmoid_noise: float = 0.0,
        sigmoid_noise_seed: int | None = None,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        kernel_initializer: Initializer = "glorot_uniform",
        dropout: float = 0.0,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.units = check_positive_int("units", units)
        if (
            isinstance(sigmoid_noise, bool)
            or not isinstance(sigmoid_noise, numbers.Real)
            or not sigmoid_noise >= 0
        ):
            raise ValueError(
                "`sigmoid_noise` must be a non-negative float. "
                f"Received: sigmoid_noise={sigmoid_noise!r}"
            )
        if isinstance(score_bias_init, bool) or not isinstance(
            score_bias_init, numbers.Real
        ) or not math.isfinite(score_bias_init):
            raise ValueError(
                "`score_bias_init` must be a finite float. "
                f"Received: score_bias_init={score_bias_init!r}"
            )
        self.sigmoid_noise = float(sigmoid_noise)
        self.sigmoid_noise_seed = sigmoid_noise_seed
        self.score_bias_init = float(score_bias_init)
        self.mode = check_mode(mode)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        if self.sigmoid_noise > 0:
            self.noise_seed_generator = keras.random.SeedGenerator(
                seed=sigmoid_noise_seed
            )

    # ------------------------------------------------------------------
    # To be implemented by the energies.
    def energy(self, query: Tensor, projected_key: Tensor) -> Tensor:
        """Energies `(batch_size, S)` of one step's `(batch_size, Dq)` query."""
        raise NotImplementedError

    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        self._validate_shapes(query_shape, value_shape, key_shape)
        self.score_bias = self.add_weight(
            name="score_bias",
            shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
            dtype=self.dtype,
        )

    def project_key(self, key: Tensor) -> Tensor:
        """`k W1` (Bahdanau) or `k W` (Luong), once per memory."""
        return ops.matmul(key, ops.cast(self.key_kernel, key.dtype))

    # ------------------------------------------------------------------
    def alignment_state_spec(
        self, batch_size: Optional[int], source_length: Optional[int]
    ) -> NestedTensor:
        """A `(batch_size, S)` tensor in `state_dtype`."""
        return keras.KerasTensor(
            (batch_size, source_length), dtype=self.state_dtype
        )

    def initial_alignment_state(self, memory_mask: Tensor) -> NestedTensor:
        """One-hot on the first kept source position, `(batch_size, S)`.

        Position 0 for an unpadded or right-padded memory (as TFA); all
        zeros for a row with no kept position.
        """
        memory_mask = ops.cast(memory_mask, "bool")
        positions = ops.cumsum(ops.cast(memory_mask, "int32"), 1)
        first = ops.logical_and(ops.equal(positions, 1), memory_mask)
        return ops.cast(first, self.state_dtype)

    def stateful_alignment(
        self,
        query: Tensor,
        projected_key: Tensor,
        value_mask: Optional[Tensor],
        alignment_state: NestedTensor,
        training: Optional[bool] = None,
    ) -> Tuple[Tensor, NestedTensor]:
        """The monotonic alignment of one step and the next state (itself).

        Args:
            query: `(batch_size, Dq)` in the score dtype.
            projected_key: `(batch_size, S, units)`, from `project_key`.
            value_mask: Boolean `(batch_size, S)` or `None`.
            alignment_state: The previous alignment `(batch_size, S)`.
            training: Whether the sigmoid noise is added.

        Returns:
            `(weights, weights)`, `(batch_size, S)` in `state_dtype`.
        """
        dtype = self.state_dtype
        energy = ops.cast(self.energy(query, projected_key), dtype)
        energy = energy + ops.cast(self.score_bias, dtype)
        if training and self.sigmoid_noise > 0:
            energy = energy + self.sigmoid_noise * keras.random.normal(
                ops.shape(energy), dtype=dtype, seed=self.noise_seed_generator
            )
        if self.mode == "hard":
            p_choose = ops.cast(energy > 0, dtype)
        else:
            p_choose = ops.sigmoid(energy)
        if value_mask is not None:
            p_choose = ops.where(value_mask, p_choose, 0.0)
        weights = monotonic_attention(p_choose, alignment_state, self.mode)
        return weights, weights

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "sigmoid_noise": self.sigmoid_noise,
                "sigmoid_noise_seed": self.sigmoid_noise_seed,
                "score_bias_init": self.score_bias_init,
                "mode": self.mode,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauMonotonicAttention(AdditiveScore, MonotonicAttention):
    """Monotonic attention with the Bahdanau (additive) energy.

    The energy of source position `i` for the query `q` is

        e_i = v^T tanh(W1 k_i + W2 q)                     (normalize=False)
        e_i = (g v / ||v||)^T tanh(W1 k_i + W2 q + b)      (normalize=True)

    with `W1` `(Dk, units)`, `W2` `(Dq, units)`, `v` `(units,)` and, when
    `normalize`, a scalar `g` (initially `sqrt(1 / units)`) and `b`
    `(units,)` (initially zeros), exactly as TFA 0.23's
    `BahdanauMonotonicAttention` (its `memory_layer`, `query_layer`,
    `attention_v`, `attention_g`, `attention_b`, `attention_score_bias` are
    `key_kernel`, `query_kernel`, `score_kernel`, `score_gain`, `bias`,
    `score_bias` here). See `MonotonicAttention` for the rest.

    Reference:
        - [Raffel et al., 2017](https://arxiv.org/abs/1704.00784)
        - [Bahdanau et al., 2014](https://arxiv.org/abs/1409.0473)

    Args:
        units: Positive integer, size of the hidden layer of the energy.
        normalize: If `True`, weight-normalizes `v` and adds `b`. Defaults
            to `False`.
        **kwargs: The arguments of `MonotonicAttention` (`sigmoid_noise`,
            `sigmoid_noise_seed`, `score_bias_init`, `mode`,
            `kernel_initializer`, `dropout`, `seed`) and of the base layer.

    Example:

    ```python
    encoder = keras.layers.LSTM(32, return_sequences=True)(source)
    attention = BahdanauMonotonicAttention(16, score_bias_init=-1.0)
    decoder = AttentionRNN(keras.layers.LSTMCell(32), attention)
    ```
    """

    def __init__(self, units: int, normalize: bool = False, **kwargs):
        super().__init__(units, **kwargs)
        self.normalize = bool(normalize)

    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        super().build(query_shape, value_shape, key_shape)
        query_shape, _, key_shape = self._validate_shapes(
            query_shape, value_shape, key_shape
        )
        self.build_additive_kernels(query_shape[-1], key_shape[-1])
        self.score_gain = None
        self.bias = None
        if self.normalize:
            self.build_score_gain()
            self.build_additive_bias()

    def energy(self, query: Tensor, projected_key: Tensor) -> Tensor:
        return self.additive_energy(query, projected_key)

    def get_config(self) -> dict:
        config = super().get_config()
        config["normalize"] = self.normalize
        return config


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongMonotonicAttention(MonotonicAttention):
    """Monotonic attention with the Luong (multiplicative) energy.

    The energy of source position `i` for the query `q` (of size `units`) is

        e_i = q . (W k_i)              (scale=False)
        e_i = g q . (W k_i)            (scale=True)

    with `W` `(Dk, units)` and a learned scalar `g` (initially 1), exactly as
    TFA 0.23's `LuongMonotonicAttention` (its `memory_layer`, `attention_g`
    and `attention_score_bias` are `key_kernel`, `score_gain` and
    `score_bias` here). The query's last dimension must equal `units`. See
    `MonotonicAttention` for the rest.

    Reference:
        - [Raffel et al., 2017](https://arxiv.org/abs/1704.00784)
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025)

    Args:
        units: Positive integer, size of the projected keys, which must be
            the size of the query.
        scale: If `True`, multiplies the energy by a learned scalar.
            Defaults to `False`.
        **kwargs: The arguments of `MonotonicAttention` and of the base
            layer.

    Example:

    ```python
    encoder = keras.layers.LSTM(32, return_sequences=True)(source)
    attention = LuongMonotonicAttention(32, scale=True)
    decoder = AttentionRNN(keras.layers.LSTMCell(32), attention)
    ```
    """

    def __init__(self, units: int, scale: bool = False, **kwargs):
        super().__init__(units, **kwargs)
        self.scale = bool(scale)

    def query_size_from_key_size(self, key_size: int) -> Optional[int]:
        """The Luong energy needs queries of size `units`."""
        return self.units

    def _check_feature_sizes(
        self, query_shape: Shape, value_shape: Shape, key_shape: Shape
    ):
        if query_shape[-1] != self.units:
            raise ValueError(
                f"{self.__class__.__name__}: the last dimension of `query` "
                f"must equal `units` ({self.units}). Received: "
                f"query.shape={shape_str(query_shape)}"
            )

    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        super().build(query_shape, value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        self.key_kernel = self.add_weight(
            name="key_kernel",
            shape=(int(key_shape[-1]), self.units),
            initializer=self.kernel_initializer,
            dtype=self.dtype,
        )
        self.score_gain = None
        if self.scale:
            self.score_gain = self.add_weight(
                name="score_gain", shape=(), initializer="ones",
                dtype=self.dtype,
            )

    def energy(self, query: Tensor, projected_key: Tensor) -> Tensor:
        energy = ops.squeeze(
            ops.matmul(projected_key, ops.expand_dims(query, -1)), -1
        )
        if self.scale:
            energy = ops.cast(self.score_gain, energy.dtype) * energy
        return energy

    def get_config(self) -> dict:
        config = super().get_config()
        config["scale"] = self.scale
        return config
