"""Runs an `AttentionWrapper` over a whole target sequence."""

import copy
from typing import Optional

import keras
from keras import ops

from keras_attention.checks import check_feature_shape
from keras_attention.checks import check_mask
from keras_attention.checks import check_same_batch
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from keras_attention.rnn.fused_decoder import REQUIREMENTS as FUSED_NEEDS
from keras_attention.rnn.fused_decoder import fused_decode
from keras_attention.rnn.fused_decoder import fuses
from keras_attention.rnn.loops import generic_decode
from keras_attention.rnn.wrapper_state import carried_state_spec
from keras_attention.typing import NestedTensor
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNN(keras.layers.Layer):
    """Runs an `AttentionWrapper` over a target sequence, like `RNN`.

    For target inputs `x_1..x_T` (e.g. embeddings of the previous target
    tokens under teacher forcing) and a memory `h_1..h_S`, it computes, for
    `t = 1..T`,

        output_t, state_t, alpha_t = wrapper.step(x_t, state_{t-1})

    starting from `wrapper.get_initial_state(memory, memory_mask,
    initial_state)` (the memory's keys are projected once per call), and
    returns the outputs, the alignment history `alpha` and, on request, the
    final state. See `AttentionWrapper` for the Luong (input feeding) and
    Bahdanau wirings.

    Masks: at a target step whose `inputs_mask` is `False` (a padded step)
    the state is carried over unchanged and the output and the weights are
    zeros; the output sequence carries the Keras mask of `inputs`, so Keras
    losses ignore those steps. Source positions whose `memory_mask` is
    `False` get zero weight. Both masks are filled in from Keras masks
    (`Embedding(mask_zero=True)`, and RNN encoders propagate it). A
    zero-length memory (`S == 0`) gives `(batch_size, T, 0)` alignments and
    a zero context at every step, with any attention layer, on every
    backend.

    Dropout: the dropout masks of the cell (drawn once per call, as
    `keras.layers.RNN` does) and of the attention weights (one per step)
    are drawn before the loop. The alignments are the weights before
    dropout.

    The loop runs on the TensorFlow, JAX and PyTorch backends and trains
    with `model.fit`, with or without XLA: on TensorFlow it is a
    `while_loop` bounded by the number of target steps (the gradient of an
    unbounded `tf.while_loop`, which `keras.ops.scan` is there, does not
    compile with XLA), elsewhere `keras.ops.scan`. What does not depend on
    the step is computed once per call, before the loop: the key projection
    of the memory and, for a plain `keras.layers.LSTMCell` without dropout
    in the call, the input projection of its gates (`x_t @ W_x + b` for
    all `t` in one matmul; the attention part of the cell input stays in
    the loop). The sequence
    mode (a `keras.layers.LSTM` then an attention layer over all steps) is
    faster when no input feeding is needed: it keeps the RNN a single
    fused (cuDNN) layer and batches all attention products.

    Fused loop: for a plain `keras.layers.LSTMCell` or `GRUCell`, a
    `DotAttention`, `MultiplicativeAttention`, `AdditiveAttention`,
    `LocationSensitiveAttention` or a monotonic attention in "parallel"
    mode, the Luong wiring with input feeding and no dropout (or sigmoid
    noise) in the call, the loop
    runs fused, with a hand-written backward pass whose weight gradients
    are one matmul for all steps (the same results; `fuses(training)` says
    whether a call runs it). Any other configuration runs the generic loop.

    Reference:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025)
        - [Bahdanau et al., 2014](https://arxiv.org/abs/1409.0473)

    Args:
        wrapper: An `AttentionWrapper`.
        return_state: If `True`, also returns the final state. Defaults to
            `False`.
        fused: `"auto"` (the default) runs the fused loop where it applies,
            `False` always the generic loop, `True` the fused loop or a
            `ValueError` where it does not apply.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: `(batch_size, T, E)` target inputs.
        memory: `(batch_size, S, D)` memory (encoder outputs).
        initial_state: Optional initial cell state, e.g. the encoder's final
            state `[h, c]`, in the structure of the cell state. Defaults to
            the cell's zero state.
        inputs_mask: Optional boolean `(batch_size, T)`; filled in from the
            Keras mask of `inputs`.
        memory_mask: Optional boolean `(batch_size, S)`; filled in from the
            Keras mask of `memory`.
        training: Python boolean, whether dropout is applied.

    Returns:
        A tuple `(outputs, alignments)`, or `(outputs, alignments,
        final_state)` with `return_state=True`: `outputs` of shape
        `(batch_size, T, output_size)`, `alignments` `(batch_size, T, S)` and
        `final_state` a dict with `"cell_state"` (the cell state after the
        last kept step, e.g. `[h, c]`) and `"attention"` (the last
        attentional vector, `(batch_size, attention_size)`). The final state
        and the memory give the wrapper's state for further steps:
        `wrapper.get_initial_state(memory, memory_mask,
        cell_state=final_state["cell_state"],
        attention=final_state["attention"])`.

    Raises:
        ValueError: if `wrapper` is not an `AttentionWrapper`; if `inputs`
            or `memory` are not rank 3, or have different batch sizes.

    Example:

    ```python
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target_in")
    x = keras.layers.Embedding(1000, 64, mask_zero=True)(src)
    enc, h, c = keras.layers.LSTM(128, return_sequences=True,
                                  return_state=True)(x)
    y = keras.layers.Embedding(1000, 64, mask_zero=True)(tgt)
    decoder = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(128),
            keras_attention.MultiplicativeAttention(),
            attention_layer_size=128,
        )
    )
    outputs, alignments = decoder(y, enc, initial_state=[h, c])
    logits = keras.layers.Dense(1000)(outputs)
    model = keras.Model([src, tgt], logits)
    ```
    """

    def __init__(
        self,
        wrapper: AttentionWrapper,
        return_state: bool = False,
        fused: bool | str = "auto",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(wrapper, AttentionWrapper):
            raise ValueError(
                "`wrapper` must be a keras_attention.AttentionWrapper. "
                f"Received: wrapper={wrapper!r}"
            )
        if fused not in ("auto", True, False):
            raise ValueError(
                "`fused` must be 'auto', True or False. "
                f"Received: fused={fused!r}"
            )
        self.wrapper = wrapper
        self.return_state = return_state
        self.fused = fused
        self.supports_masking = True

    def _validate_shapes(self, inputs_shape: Shape, memory_shape: Shape):
        owner = self.__class__.__name__
        inputs_shape = check_feature_shape(
            owner, "inputs", inputs_shape, "(batch_size, T, E)"
        )
        memory_shape = check_feature_shape(
            owner, "memory", memory_shape, "(batch_size, S, D)"
        )
        check_same_batch(owner, inputs=inputs_shape, memory=memory_shape)
        return inputs_shape, memory_shape

    def build(
        self,
        inputs_shape: Shape,
        memory_shape: Shape,
        initial_state_shape: Optional[Shape] = None,
    ) -> None:
        inputs_shape, memory_shape = self._validate_shapes(
            inputs_shape, memory_shape
        )
        if not self.wrapper.built:
            self.wrapper.build((inputs_shape[0], inputs_shape[2]), memory_shape)

    def fuses(self, training: Optional[bool] = False) -> bool:
        """Whether a call (with `training`) runs the fused loop."""
        return self.fused is not False and fuses(self.wrapper, training)

    def get_initial_state(
        self,
        memory: Tensor,
        memory_mask: Optional[Tensor] = None,
        cell_state: NestedTensor = None,
    ) -> dict:
        """The wrapper's state for `memory`; see `AttentionWrapper`."""
        return self.wrapper.get_initial_state(
            memory, memory_mask=memory_mask, cell_state=cell_state
        )

    def call(
        self,
        inputs: Tensor,
        memory: Tensor,
        initial_state: NestedTensor = None,
        inputs_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        training: bool | None = None,
    ) -> tuple:
        self._validate_shapes(inputs.shape, memory.shape)
        wrapper = self.wrapper
        state = wrapper.get_initial_state(
            memory, memory_mask=memory_mask, cell_state=initial_state
        )
        inputs_mask = check_mask(
            self.__class__.__name__,
            "inputs_mask",
            inputs_mask,
            tuple(inputs.shape[:2]),
        )
        if self.fused is True and not self.fuses(training):
            raise ValueError(
                f"AttentionRNN: `fused=True` needs {FUSED_NEEDS}. Received: "
                f"cell={wrapper.cell!r}, attention={wrapper.attention!r}, "
                f"wiring={wrapper.wiring!r}, training={training!r}"
            )
        dtype = self.compute_dtype
        if self.fuses(training):
            outputs, alignments, final_state = fused_decode(
                wrapper, inputs, state, inputs_mask
            )
            outputs = ops.cast(outputs, dtype)
            alignments = ops.cast(alignments, dtype)
        else:
            outputs, alignments, final_state = generic_decode(
                wrapper, inputs, memory, state, inputs_mask, training, dtype
            )
        if not self.return_state:
            return outputs, alignments
        return outputs, alignments, final_state

    def compute_mask(
        self, inputs: Tensor, previous_mask: Optional[Tensor] = None
    ) -> Optional[list]:
        if previous_mask is None:
            return None
        # The outputs carry the mask of the inputs; alignments and states
        # carry none.
        return [previous_mask, None]

    def compute_output_spec(
        self,
        inputs: Tensor,
        memory: Tensor,
        initial_state: NestedTensor = None,
        inputs_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        training: Optional[bool] = None,
    ) -> tuple:
        inputs_shape, memory_shape = self._validate_shapes(
            inputs.shape, memory.shape
        )
        batch_size = inputs_shape[0]
        if batch_size is None:
            batch_size = memory_shape[0]
        outputs = keras.KerasTensor(
            (
                batch_size,
                inputs_shape[1],
                self.wrapper.output_size(memory_shape[-1]),
            ),
            dtype=self.compute_dtype,
        )
        alignments = keras.KerasTensor(
            (batch_size, inputs_shape[1], memory_shape[1]),
            dtype=self.compute_dtype,
        )
        if not self.return_state:
            return outputs, alignments
        return (
            outputs,
            alignments,
            carried_state_spec(self.wrapper, batch_size, memory_shape),
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "wrapper": keras.saving.serialize_keras_object(self.wrapper),
                "return_state": self.return_state,
                "fused": self.fused,
            }
        )
        return config

    @classmethod
    def from_config(
        cls, config: dict, custom_objects: Optional[dict] = None
    ) -> "AttentionRNN":
        # Deep copy: Keras' own `from_config`s (StackedRNNCells) pop keys
        # from the nested configs they are given.
        config = copy.deepcopy(config)
        wrapper = keras.saving.deserialize_keras_object(
            config.pop("wrapper"), custom_objects=custom_objects
        )
        return cls(wrapper, **config)
