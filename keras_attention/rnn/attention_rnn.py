"""Runs an `AttentionWrapper` over a whole target sequence."""

import copy
from typing import Optional

import keras
from keras import ops
from keras import tree

from keras_attention.checks import check_feature_shape
from keras_attention.checks import check_mask
from keras_attention.checks import check_same_batch
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from keras_attention.rnn.fused_decoder import fused_decode
from keras_attention.rnn.fused_decoder import fuses
from keras_attention.rnn.loops import scan_steps
from keras_attention.rnn.rnn_cells import can_project_inputs
from keras_attention.rnn.rnn_cells import dropout_cells
from keras_attention.rnn.rnn_cells import prepare_dropout_masks
from keras_attention.rnn.rnn_cells import project_inputs
from keras_attention.rnn.rnn_cells import reset_dropout_masks
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

    Fused loop: for a plain `keras.layers.LSTMCell`, a `DotAttention` or
    `MultiplicativeAttention`, the Luong wiring with input feeding and no
    dropout in the call, the loop runs fused, with a hand-written backward
    pass whose weight gradients are one matmul for all steps (the same
    results; `fuses(training)` says whether a call runs it). Any other
    configuration runs the generic loop.

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
        carried = ["cell_state", "attention"]
        if wrapper.attention.stateful:
            carried.append("alignment_state")
        inputs_mask = check_mask(
            self.__class__.__name__,
            "inputs_mask",
            inputs_mask,
            tuple(inputs.shape[:2]),
        )
        if self.fused is True and not self.fuses(training):
            raise ValueError(
                "AttentionRNN: `fused=True` needs a plain LSTMCell, a "
                "DotAttention or MultiplicativeAttention, the Luong wiring "
                "with input feeding and no dropout in the call. Received: "
                f"cell={wrapper.cell!r}, attention={wrapper.attention!r}, "
                f"wiring={wrapper.wiring!r}, training={training!r}"
            )
        if self.fuses(training):
            outputs, alignments, final_state = fused_decode(
                wrapper, inputs, state, inputs_mask
            )
            dtype = self.compute_dtype
            outputs = ops.cast(outputs, dtype)
            alignments = ops.cast(alignments, dtype)
            if not self.return_state:
                return outputs, alignments
            return outputs, alignments, final_state
        constants = {k: v for k, v in state.items() if k not in carried}
        dims = ops.shape(memory)
        batch_size, source_len = dims[0], dims[1]
        output_size = wrapper.output_size(memory.shape[-1])

        cell_dropout = training and dropout_cells(wrapper.cell)
        if cell_dropout:
            cell_input_size = wrapper.cell_input_size(
                inputs.shape[-1], memory.shape[-1]
            )
            prepare_dropout_masks(
                wrapper.cell,
                ops.zeros(
                    (batch_size, cell_input_size),
                    dtype=wrapper.cell.compute_dtype,
                ),
                state["cell_state"],
            )

        # `keras.ops.scan` gets a single scanned tensor: on TensorFlow it
        # fails on several scanned tensors whose length is unknown when
        # traced (a `tf.function` with a `None` time dimension, as in
        # `model.export` or `fit` retracing on new lengths). The target mask
        # and the attention dropout masks travel as 0/1 features appended to
        # the inputs.
        # The input projection of a plain LSTM cell (`x_t @ W_x + b` of its
        # gates) does not depend on the loop: one matmul for all steps.
        hoisted = can_project_inputs(wrapper.cell, bool(training))
        step_inputs = inputs
        if hoisted:
            step_inputs = project_inputs(wrapper.cell, inputs)
        run_step = wrapper.projected_step if hoisted else wrapper.step
        size = step_inputs.shape[-1]
        parts = [step_inputs]
        masked = inputs_mask is not None
        if masked:
            parts.append(ops.expand_dims(inputs_mask, -1))
        attention = wrapper.attention
        dropout = bool(training) and attention.dropout > 0
        if dropout:
            # The attention dropout masks of all steps, drawn before the
            # loop: no random state is updated inside it (JAX's `lax.scan`
            # cannot leak it out).
            parts.append(
                attention.draw_dropout_mask(
                    (batch_size, ops.shape(inputs)[1], source_len)
                )
            )
        packed = ops.concatenate(
            [ops.cast(p, step_inputs.dtype) for p in parts], axis=-1
        )
        time_major = ops.transpose(packed, (1, 0, 2))

        def step(carry: dict, x_t: Tensor):
            loop_state = dict(constants)
            for k in carried:
                loop_state[k] = carry[k]
            dropout_mask = None
            if dropout:
                dropout_mask = x_t[:, size + int(masked) :] > 0.5
            # The reshape restores the static feature size, which slicing
            # a tensor of unknown width loses.
            output, new_state, weights = run_step(
                ops.reshape(x_t[:, :size], (-1, size)),
                loop_state,
                training=training,
                dropout_mask=dropout_mask,
            )
            new_carry = {k: new_state[k] for k in carried}
            new_carry["output"] = ops.cast(output, self.compute_dtype)
            new_carry["weights"] = ops.cast(weights, self.compute_dtype)
            if masked:
                keep = x_t[:, size : size + 1] > 0.5
                # A padded step keeps the state (cell, attentional vector,
                # alignment) and outputs zeros.
                old = {k: carry[k] for k in carried}
                old["output"] = ops.zeros_like(new_carry["output"])
                old["weights"] = ops.zeros_like(new_carry["weights"])
                new_carry = tree.map_structure(
                    lambda n, o: ops.where(keep, n, o), new_carry, old
                )
            return new_carry

        init = {k: state[k] for k in carried}
        dtype = self.compute_dtype
        init["output"] = ops.zeros((batch_size, output_size), dtype)
        init["weights"] = ops.zeros((batch_size, source_len), dtype)
        final, history = scan_steps(
            step, init, time_major, collect=("output", "weights")
        )

        if cell_dropout:
            reset_dropout_masks(wrapper.cell)

        outputs = ops.cast(
            ops.transpose(history["output"], (1, 0, 2)), self.compute_dtype
        )
        alignments = ops.cast(
            ops.transpose(history["weights"], (1, 0, 2)), self.compute_dtype
        )
        if not self.return_state:
            return outputs, alignments
        final_state = {k: final[k] for k in carried}
        return outputs, alignments, final_state

    def compute_mask(
        self, inputs: Tensor, previous_mask: Optional[Tensor] = None
    ) -> Optional[list]:
        if previous_mask is None:
            return None
        # The outputs carry the mask of the inputs; alignments and states
        # carry none.
        return [previous_mask, None]

    def _final_state_spec(self, batch_size: Optional[int], memory_shape: Shape):
        template = self.wrapper.initial_cell_state(1)
        cell_state = tree.map_structure(
            lambda t: keras.KerasTensor(
                (batch_size,) + tuple(t.shape[1:]),
                dtype=self.wrapper.cell.compute_dtype,
            ),
            template,
        )
        attention = keras.KerasTensor(
            (batch_size, self.wrapper.attention_size(memory_shape[-1])),
            dtype=self.wrapper.compute_dtype,
        )
        spec = {"cell_state": cell_state, "attention": attention}
        if self.wrapper.attention.stateful:
            spec["alignment_state"] = (
                self.wrapper.attention.alignment_state_spec(
                    batch_size, memory_shape[1]
                )
            )
        return spec

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
            self._final_state_spec(batch_size, memory_shape),
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
