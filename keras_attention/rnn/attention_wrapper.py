"""Step-wise attention around a Keras RNN cell (Luong and Bahdanau wirings)."""

import copy
from typing import Any
from typing import Optional

import keras

from keras_attention.checks import check_feature_shape
from keras_attention.checks import check_positive_int
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.rnn.attentional_output import AttentionalOutput
from keras_attention.rnn.rnn_cells import cell_output_size
from keras_attention.rnn.rnn_cells import initial_cell_state
from keras_attention.rnn.wiring import WIRINGS
from keras_attention.rnn.wiring import wiring_step
from keras_attention.rnn.wrapper_state import initial_state
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionWrapper(keras.layers.Layer):
    """Runs a Keras RNN cell with attention over a memory, one step at a time.

    The wrapper combines any Keras RNN cell (`LSTMCell`, `GRUCell`,
    `SimpleRNNCell`, `StackedRNNCells`, ...) with one of the attention
    layers of this package. At step `t`, with decoder input `x_t`, cell
    state `s`, memory `h_1..h_S` (encoder states) and, optionally, an
    attentional layer `a = act(W_c [c; y])` (`attention_layer_size`), the
    two wirings are:

    Luong (`wiring="luong"`, the default; TFA's `AttentionWrapper`):

        y_t, s_t = cell([x_t; a_{t-1}], s_{t-1})   # input feeding
        c_t, alpha_t = attention(query=y_t, memory)
        a_t = act(W_c [c_t; y_t])                  # or c_t without layer

    Bahdanau (`wiring="bahdanau"`):

        c_t, alpha_t = attention(query=y_{t-1}, memory)  # previous state
        y_t, s_t = cell([x_t; c_t], s_{t-1})
        a_t = act(W_c [c_t; y_t])                  # or c_t without layer

    where `y_{t-1}` is the previous cell output, read from the state (the
    first state tensor of a Keras cell, `h` of `[h, c]`; the top cell's for
    `StackedRNNCells`), so an encoder's final state makes the first query.
    The step output is `a_t` (`output_attention=True`) or `y_t`. With
    `input_feeding=False` the Luong cell sees `x_t` only: the decoder then
    equals a plain `keras.layers.RNN` followed by the attention layer over
    the whole sequence (the sequence mode, which is faster).

    The memory's keys are processed once per memory
    (`attention.project_key`, e.g. `W1 h_i` for `AdditiveAttention`) by
    `get_initial_state`, which keeps the memory, its projected keys and its
    mask in the state, and every `step` reuses them. To run the wrapper over
    a whole target sequence, use `keras_attention.AttentionRNN`.

    Reference:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025)
          (input feeding, attentional hidden state).
        - [Bahdanau et al., 2014](https://arxiv.org/abs/1409.0473).

    Args:
        cell: A Keras RNN cell: a layer with `state_size`, optionally
            `output_size`, `get_initial_state(batch_size)` and
            `call(inputs, states, training=None) -> (output, new_states)`.
        attention: A `keras_attention` attention layer (`DotAttention`,
            `MultiplicativeAttention`, `AdditiveAttention`), used with the
            cell output as query and the memory as keys and values.
        attention_layer_size: Positive integer or `None`. If set, the
            attentional vector is `a_t = act(W_c [c_t; y_t])` of that size
            (an `AttentionalOutput` layer); if `None`, `a_t = c_t`.
            Defaults to `None`.
        attention_activation: Activation of the attentional layer.
            Defaults to `"tanh"`.
        attention_use_bias: Whether the attentional layer has a bias.
            Defaults to `False`.
        output_attention: If `True`, each step outputs `a_t`; if `False`,
            the cell output `y_t`. Defaults to `True`.
        input_feeding: Luong wiring only: whether `a_{t-1}` is concatenated
            to the cell input. Defaults to `True` for `"luong"`; must be
            `None` or `False` for `"bahdanau"`.
        wiring: `"luong"` or `"bahdanau"`. Defaults to `"luong"`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Raises:
        ValueError: if `cell` is not an RNN cell, `attention` not an
            attention layer of this package, `wiring` unknown,
            `attention_layer_size` not a positive integer, or
            `input_feeding=True` with the Bahdanau wiring; on wrong shapes
            in `build`, `get_initial_state` and `step`.

    Example:

    ```python
    wrapper = keras_attention.AttentionWrapper(
        keras.layers.LSTMCell(128),
        keras_attention.MultiplicativeAttention(),
        attention_layer_size=128,
    )
    wrapper.build(inputs_shape=(None, 64), memory_shape=(None, None, 256))
    # memory: (batch_size, S, 256) encoder states; h, c: encoder state.
    state = wrapper.get_initial_state(memory, memory_mask,
                                      cell_state=[h, c])
    for x in embedded_target_steps:  # (batch_size, 64) each
        output, state, weights = wrapper.step(x, state)
    ```
    """

    def __init__(
        self,
        cell: keras.layers.Layer,
        attention: BaseAttention,
        attention_layer_size: int | None = None,
        attention_activation: Any = "tanh",
        attention_use_bias: bool = False,
        output_attention: bool = True,
        input_feeding: bool | None = None,
        wiring: str = "luong",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not callable(getattr(cell, "call", None)) or not hasattr(
            cell, "state_size"
        ):
            raise ValueError(
                "`cell` must be a Keras RNN cell, with a `call` method and a "
                f"`state_size` attribute. Received: cell={cell!r}"
            )
        if not isinstance(attention, BaseAttention):
            raise ValueError(
                "`attention` must be an attention layer of keras_attention "
                "(DotAttention, MultiplicativeAttention, AdditiveAttention). "
                f"Received: attention={attention!r}"
            )
        if wiring not in WIRINGS:
            raise ValueError(
                f"`wiring` must be one of {WIRINGS}. "
                f"Received: wiring={wiring!r}"
            )
        check_positive_int(
            "attention_layer_size", attention_layer_size, allow_none=True
        )
        if wiring == "bahdanau" and input_feeding:
            raise ValueError(
                "`input_feeding` is part of the Luong wiring; the Bahdanau "
                "wiring feeds the current context to the cell. Received: "
                f"input_feeding={input_feeding!r} with wiring='bahdanau'"
            )
        self.cell = cell
        self.attention = attention
        self.attention_layer_size = attention_layer_size
        self.attention_activation = keras.activations.get(
            attention_activation
        )
        self.attention_use_bias = attention_use_bias
        self.output_attention = output_attention
        self.input_feeding = input_feeding
        self.wiring = wiring
        self.attention_layer = None
        if attention_layer_size is not None:
            self.attention_layer = AttentionalOutput(
                attention_layer_size,
                activation=attention_activation,
                use_bias=attention_use_bias,
                dtype=self.dtype_policy,
                name="attention_layer",
            )

    # ------------------------------------------------------------------
    # Sizes.
    @property
    def feeds_attention(self) -> bool:
        """Whether the cell input includes the previous attentional vector."""
        return self.wiring == "luong" and self.input_feeding is not False

    @property
    def cell_output_size(self) -> int:
        """Size of the cell output `y_t`, which is the attention query."""
        return cell_output_size(self.cell)

    def attention_size(self, memory_dim: int) -> int:
        """Size of the attentional vector `a_t` for a memory of `memory_dim`."""
        if self.attention_layer_size is not None:
            return self.attention_layer_size
        return memory_dim

    def output_size(self, memory_dim: int) -> int:
        """Size of a step output for a memory of feature size `memory_dim`."""
        if self.output_attention:
            return self.attention_size(memory_dim)
        return self.cell_output_size

    def cell_input_size(self, inputs_dim: int, memory_dim: int) -> int:
        """Size of the cell input for inputs and memory of these sizes."""
        if self.wiring == "bahdanau":
            return inputs_dim + memory_dim
        if self.feeds_attention:
            return inputs_dim + self.attention_size(memory_dim)
        return inputs_dim

    # ------------------------------------------------------------------
    def _validate_memory_shape(self, memory_shape: Shape):
        return check_feature_shape(
            self.__class__.__name__, "memory", memory_shape,
            "(batch_size, S, D)",
        )

    def _validate_inputs_shape(self, inputs_shape: Shape, rank: int = 2):
        layout = "(batch_size, E)" if rank == 2 else "(batch_size, T, E)"
        return check_feature_shape(
            self.__class__.__name__, "inputs", inputs_shape, layout
        )

    def _build_attention(self, memory_shape: Shape):
        if not self.attention.built:
            self.attention.build(
                (memory_shape[0], self.cell_output_size), memory_shape
            )

    def build(self, inputs_shape: tuple, memory_shape: tuple) -> None:
        """Builds the cell, the attention and the attentional layer.

        Args:
            inputs_shape: Shape of one step of inputs, `(batch_size, E)`
                (a `(batch_size, T, E)` shape is accepted too).
            memory_shape: Shape of the memory, `(batch_size, S, D)`.
        """
        inputs_shape = tuple(inputs_shape)
        if len(inputs_shape) == 3:
            inputs_shape = (inputs_shape[0], inputs_shape[2])
        inputs_shape = self._validate_inputs_shape(inputs_shape)
        memory_shape = self._validate_memory_shape(memory_shape)
        batch = inputs_shape[0]
        self._build_attention(memory_shape)
        if isinstance(self.cell, keras.layers.Layer) and not self.cell.built:
            cell_input_size = self.cell_input_size(
                inputs_shape[-1], memory_shape[-1]
            )
            self.cell.build((batch, cell_input_size))
        if self.attention_layer is not None and not self.attention_layer.built:
            self.attention_layer.build(
                (batch, memory_shape[-1]), (batch, self.cell_output_size)
            )

    # ------------------------------------------------------------------
    def initial_cell_state(self, batch_size: IntOrTensor) -> list:
        """The cell's zero state for `batch_size`, always nested.

        A one-tensor state comes as a list of one tensor; this is the
        structure `get_initial_state` checks `cell_state` against and
        keeps in `"cell_state"`.
        """
        return initial_cell_state(self.cell, batch_size)

    def get_initial_state(
        self,
        memory: Tensor,
        memory_mask: Optional[Tensor] = None,
        cell_state: NestedTensor = None,
        attention: Optional[Tensor] = None,
    ) -> dict[str, Any]:
        """The state before the first step, for a memory.

        Prepares the memory once (`attention.prepare_memory`: the keys are
        projected, masked positions zeroed); the steps reuse it.

        Args:
            memory: `(batch_size, S, D)` memory, e.g. encoder states.
            memory_mask: Optional boolean (or integer 0/1)
                `(batch_size, S)`, `True` for the source positions to attend
                to. Defaults to all `True`.
            cell_state: Optional initial cell state, e.g. an encoder's final
                state `[h, c]`, in the structure of the cell's state (a
                tensor is accepted for a single-state cell). Defaults to the
                cell's initial state (zeros).
            attention: Optional initial attentional vector `a_0`,
                `(batch_size, attention_size)`. Defaults to zeros.

        Returns:
            A dict with `"cell_state"` (nested list of tensors),
            `"attention"` (`a_{t-1}`, `(batch_size, attention_size)`),
            `"memory"`, `"keys"` (the projected keys), `"memory_mask"`
            (boolean `(batch_size, S)`) and, for a stateful attention
            layer, `"alignment_state"`. Every tensor has the batch size as
            leading dimension, so decoders can tile or gather the state.

        Raises:
            ValueError: on a memory, mask, cell state or attention vector
                of the wrong shape, or a floating mask.
        """
        memory_shape = self._validate_memory_shape(memory.shape)
        self._build_attention(memory_shape)
        return initial_state(
            self, memory, memory_shape, memory_mask, cell_state, attention
        )

    def step(
        self,
        inputs: Tensor,
        state: dict,
        training: bool = False,
        dropout_mask: Optional[Tensor] = None,
    ) -> tuple:
        """One decoder step.

        Args:
            inputs: `(batch_size, E)`, e.g. the embedding of the previous
                target token.
            state: The state from `get_initial_state` or the previous step.
            training: Python boolean, whether dropout is applied.
            dropout_mask: Optional boolean `(batch_size, S)` keep mask of
                the attention dropout (`attention.draw_dropout_mask`), for
                loops that draw all steps' masks before they start
                (`AttentionRNN`). Defaults to a mask drawn in the step, in
                training.

        Returns:
            A tuple `(output, new_state, weights)`: the step output
            `(batch_size, output_size)`, the new state (same structure as
            `state`; memory, keys, mask and any extra entries are passed
            through, the alignment state of a stateful attention layer is
            updated) and the attention weights `(batch_size, S)`.
        """
        self._validate_inputs_shape(inputs.shape)
        if not self.built:
            self.build(inputs.shape, state["memory"].shape)
        return wiring_step(self, inputs, state, training, dropout_mask)

    def projected_step(
        self,
        projected_inputs: Tensor,
        state: dict,
        training: bool = False,
        dropout_mask: Optional[Tensor] = None,
    ) -> tuple:
        """`step` from the cell's input projection of the step inputs.

        For loops that hoist the projection out of the loop (`AttentionRNN`
        does): `projected_inputs` is `rnn_cells.project_inputs(self.cell,
        inputs)`, which exists where `rnn_cells.can_project_inputs(self.cell,
        training)`. The wrapper must be built. Same returns as `step`.
        """
        return wiring_step(
            self, projected_inputs, state, training, dropout_mask,
            projected=True,
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "attention": keras.saving.serialize_keras_object(
                    self.attention
                ),
                "attention_layer_size": self.attention_layer_size,
                "attention_activation": keras.activations.serialize(
                    self.attention_activation
                ),
                "attention_use_bias": self.attention_use_bias,
                "output_attention": self.output_attention,
                "input_feeding": self.input_feeding,
                "wiring": self.wiring,
            }
        )
        return config

    @classmethod
    def from_config(
        cls, config: dict, custom_objects: Optional[dict] = None
    ) -> "AttentionWrapper":
        # Deep copy: Keras' own `from_config`s (StackedRNNCells) pop keys
        # from the nested configs they are given.
        config = copy.deepcopy(config)
        cell = keras.saving.deserialize_keras_object(
            config.pop("cell"), custom_objects=custom_objects
        )
        attention = keras.saving.deserialize_keras_object(
            config.pop("attention"), custom_objects=custom_objects
        )
        return cls(cell, attention, **config)
