"""Shared base of the stateful attention layers (monotonic, location).

A stateful layer's weights at a decoder step depend on the previous step's
alignment, which it carries as its *alignment state*: a tensor or a dict of
tensors of shape `(batch_size, S)`. Such a layer runs one step at a time
(in `AttentionWrapper` / `AttentionRNN`, or through `attend`), never over a
whole query sequence.
"""

import keras
from keras import ops
from keras import tree

from keras_attention.alignment_state import check_alignment_state
from keras_attention.alignment_state import state_dtype
from keras_attention.base_attention import BaseAttention
from keras_attention.checks import check_mask
from keras_attention.checks import shape_str


class StatefulAttention(BaseAttention):
    """Base class of the attention layers that carry an alignment state.

    A subclass implements `build`, `project_key`, `alignment_state_spec`,
    `initial_alignment_state` and `attend`, which starts with
    `check_step(...)` and ends with `finish_step(...)`.

    Call convention (one decoder step):

        context, weights, next_state = layer(
            query, value, key=None, query_mask=None, value_mask=None,
            training=None, alignment_state=None)

    A missing `alignment_state` is `initial_alignment_state(value_mask)`.
    """

    @property
    def stateful(self) -> bool:
        """`True`: the weights depend on the previous step's alignment."""
        return True

    @property
    def state_dtype(self) -> str:
        """float32 (float64 under a float64 policy): see `state_dtype`."""
        return state_dtype(self.compute_dtype)

    def alignment_state_spec(self, batch_size, source_length):
        """The state's structure as `keras.KerasTensor`s."""
        raise NotImplementedError

    def initial_alignment_state(self, memory_mask):
        """The state before the first step, for a `(batch, S)` mask."""
        raise NotImplementedError

    def prepare_memory(self, value, key=None, value_mask=None):
        memory = super().prepare_memory(value, key=key, value_mask=value_mask)
        if "alignment_state" not in memory:
            memory["alignment_state"] = self.initial_alignment_state(
                memory["memory_mask"]
            )
        return memory

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        training=None,
        alignment_state=None,
    ):
        self._check_step_query(query)
        self._validate_tensors(query, value, key)
        if key is None:
            key = value
        if alignment_state is None:
            mask = value_mask
            if mask is None:
                mask = ops.ones(ops.shape(value)[:2], dtype="bool")
            alignment_state = self.initial_alignment_state(mask)
        return self.attend(
            query,
            value,
            self.project_key(ops.cast(key, self.score_dtype)),
            query_mask=query_mask,
            value_mask=value_mask,
            training=training,
            alignment_state=alignment_state,
        )

    def _check_step_query(self, query):
        if len(query.shape) != 2:
            raise ValueError(
                f"{self.__class__.__name__} is stateful and runs one decoder "
                "step at a time (in AttentionWrapper or AttentionRNN, or "
                "through `attend`): `query` must have rank 2 "
                "(batch_size, Dq). Received: "
                f"query.shape={shape_str(query.shape)}"
            )

    def check_step(
        self, query, value, query_mask, value_mask, use_causal_mask,
        alignment_state,
    ):
        """Validates one step's arguments.

        Returns:
            `(query_mask, value_mask, previous_state)`: the boolean masks
            (or `None`) and the state cast to `state_dtype`.
        """
        name = self.__class__.__name__
        self._check_step_query(query)
        if use_causal_mask:
            raise ValueError(
                f"{name} runs one decoder step at a time and has no causal "
                "mask. Received: use_causal_mask=True"
            )
        batch, source = value.shape[0], value.shape[1]
        query_mask = check_mask(name, "query_mask", query_mask, (batch,))
        value_mask = check_mask(name, "value_mask", value_mask, (batch, source))
        check_alignment_state(
            name, alignment_state, self.alignment_state_spec(batch, source)
        )
        previous = tree.map_structure(
            lambda t: ops.cast(t, self.state_dtype), alignment_state
        )
        return query_mask, value_mask, previous

    def finish_step(self, weights, next_state, previous, query_mask, value,
                    training):
        """The context; masked query rows: zero weights, previous state.

        Args:
            weights: `(batch_size, S)` weights of the step.
            next_state: The state after the step.
            previous: The state before the step.
            query_mask: Boolean `(batch_size,)` or `None`.
            value: `(batch_size, S, Dv)`.
            training: Whether dropout is applied.

        Returns:
            `(context, weights, next_state)`, context and weights in the
            compute dtype.
        """
        if query_mask is not None:
            row = ops.expand_dims(query_mask, -1)
            weights = ops.where(row, weights, 0.0)
            next_state = tree.map_structure(
                lambda new, old: ops.where(row, new, old), next_state, previous
            )
        weights = ops.cast(weights, self.compute_dtype)
        attended = weights
        if training and self.dropout > 0:
            attended = keras.random.dropout(
                weights, self.dropout, seed=self.seed_generator
            )
        context = ops.squeeze(
            ops.matmul(
                ops.expand_dims(attended, 1),
                ops.cast(value, self.compute_dtype),
            ),
            1,
        )
        return context, weights, next_state

    def compute_mask(self, query, previous_mask=None):
        if previous_mask is None:
            return None
        return [previous_mask, None, None]

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        training=None,
        alignment_state=None,
    ):
        self._check_step_query(query)
        self._validate_tensors(query, value, key)
        context_shape, weights_shape = self.compute_output_shape(
            query.shape, value.shape, None if key is None else key.shape
        )
        return (
            keras.KerasTensor(context_shape, dtype=self.compute_dtype),
            keras.KerasTensor(weights_shape, dtype=self.compute_dtype),
            self.alignment_state_spec(*weights_shape),
        )
