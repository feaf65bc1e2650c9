"""The base of the attention layers that carry an alignment state."""

from typing import Any
from typing import Optional
from typing import Tuple

import keras
from keras import ops
from keras import tree

from keras_attention.layers._alignment_state import check_state_structure
from keras_attention.layers._alignment_state import check_stateful_step
from keras_attention.layers._alignment_state import keep_positions
from keras_attention.layers._alignment_state import keep_rows
from keras_attention.layers._alignment_state import state_dtype
from keras_attention.layers.base_attention import BaseAttention
from keras_attention.typing import NestedTensor
from keras_attention.typing import Tensor


class StatefulAttention(BaseAttention):
    """Base class of the attention layers that carry an alignment state.

    A stateful layer's weights at a decoder step depend on the previous
    step's alignment (monotonic attention, location-sensitive attention),
    which it carries as its *alignment state*: a tensor or a dict of
    tensors of shape `(batch_size, S, ...)`. It runs one decoder step at a
    time (in `AttentionWrapper` / `AttentionRNN`, or through `attend`),
    never over a whole query sequence. Call convention:

        context, weights, next_state = layer(
            query, value, key=None, query_mask=None, value_mask=None,
            training=None, alignment_state=None)

    A missing `alignment_state` is `initial_alignment_state(value_mask)`.
    Masked query rows get zero weights and context and keep their state.
    The state at masked source positions is replaced by zeros before a
    step uses it, so whatever it holds there (even NaN or inf) never
    reaches the weights, the context or the next state.

    A subclass implements `build`, `project_key`,
    `initial_alignment_state(memory_mask)`, `stateful_alignment(query,
    projected_key, value_mask, alignment_state, training=None)` (the weights
    and the next state of one step, in place of `score` and the softmax)
    and, when the state is not the structure of `initial_alignment_state`
    of a one-position memory, `alignment_state_spec`. The rest (masks,
    dropout, the context, `prepare_memory`, `call`, output specs, the
    checks of the state) is done here.

    Args:
        dropout: Float between 0 and 1, fraction of the weights dropped (in
            the context only, not in the alignment state) in training.
            Defaults to `0.0`.
        seed: Python integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: `(batch_size, Dq)`, one decoder step. A rank-3 query raises
            a `ValueError`.
        value: `(batch_size, S, Dv)`.
        key: Optional `(batch_size, S, Dk)`, defaults to `value`.
        query_mask: Optional boolean `(batch_size,)`.
        value_mask: Optional boolean `(batch_size, S)`; filled in from the
            Keras mask of `value`.
        training: Python boolean, whether dropout (and training-only noise)
            is applied.
        alignment_state: The previous step's state. Defaults to
            `initial_alignment_state(value_mask)`.

    Returns:
        `(context, weights, next_alignment_state)`: `(batch_size, Dv)`,
        `(batch_size, S)` and a state of the structure of
        `alignment_state`.

    Raises:
        ValueError: on a rank-3 query, a causal mask, or an
            `alignment_state` of the wrong structure, shape or dtype.
    """

    @property
    def stateful(self) -> bool:
        """`True`: the weights depend on the previous step's alignment."""
        return True

    @property
    def state_dtype(self) -> str:
        """float32 (float64 under a float64 policy): the state's dtype.

        Cumulative sums and products of alignments lose too much precision
        in float16 and bfloat16.
        """
        return state_dtype(self.compute_dtype)

    # ------------------------------------------------------------------
    # To be implemented by the layers.
    def initial_alignment_state(self, memory_mask: Tensor) -> NestedTensor:
        """The state before the first step.

        Args:
            memory_mask: Boolean `(batch_size, S)`, `True` = attend.

        Returns:
            A tensor, or a dict of tensors, each `(batch_size, S, ...)`.
        """
        raise NotImplementedError

    def stateful_alignment(
        self,
        query: Tensor,
        projected_key: Tensor,
        value_mask: Optional[Tensor],
        alignment_state: NestedTensor,
        training: Optional[bool] = None,
    ) -> Tuple[Tensor, NestedTensor]:
        """`(weights, next_alignment_state)` of one step.

        Args:
            query: `(batch_size, Dq)` in the score dtype.
            projected_key: `(batch_size, S, ...)` from `project_key`, in the
                score dtype.
            value_mask: Boolean `(batch_size, S)` or `None`.
            alignment_state: The previous step's state, checked and cast to
                `state_dtype` (`checked_state`).
            training: Whether training-only noise is applied.

        Returns:
            Weights `(batch_size, S)` in `state_dtype`, exactly zero at
            masked positions, and the next state, of the structure, shapes
            and dtypes of `alignment_state_spec`.
        """
        raise NotImplementedError

    def alignment_state_spec(
        self, batch_size: Optional[int], source_length: Optional[int]
    ) -> NestedTensor:
        """The state's structure as `keras.KerasTensor`s.

        By default the structure, dtypes and trailing sizes of the
        `initial_alignment_state` of a one-example memory, with the leading
        `(batch_size, S)` dimensions given here.

        Args:
            batch_size: The batch size, or `None`.
            source_length: The number of source positions `S`, or `None`.
        """
        probe = self.initial_alignment_state(
            ops.ones((1, source_length or 1), dtype="bool")
        )
        return tree.map_structure(
            lambda t: keras.KerasTensor(
                (batch_size, source_length) + tuple(t.shape[2:]),
                dtype=keras.backend.standardize_dtype(t.dtype),
            ),
            probe,
        )

    # ------------------------------------------------------------------
    def checked_state(
        self,
        alignment_state: NestedTensor,
        batch_size: Optional[int],
        source_length: Optional[int],
    ) -> NestedTensor:
        """The state cast to `state_dtype`, after checking its structure.

        Raises:
            ValueError: if the state is `None`, or its structure, shapes or
                dtypes are not those of `alignment_state_spec`.
        """
        check_state_structure(
            self.__class__.__name__,
            alignment_state,
            self.alignment_state_spec(batch_size, source_length),
        )
        return tree.map_structure(
            lambda t: ops.cast(t, self.state_dtype), alignment_state
        )

    def prepare_memory(
        self,
        value: Tensor,
        key: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
    ) -> dict[str, Any]:
        """`BaseAttention.prepare_memory` plus `"alignment_state"`.

        The dict also holds the state before the first step,
        `initial_alignment_state(memory_mask)`; step-wise decoders pass it
        to `attend(..., alignment_state=...)` and carry the state `attend`
        returns to the next step.
        """
        prepared = super().prepare_memory(value, key, value_mask)
        prepared["alignment_state"] = self.initial_alignment_state(
            prepared["memory_mask"]
        )
        return prepared

    def call(
        self,
        query: Tensor,
        value: Tensor,
        key: Optional[Tensor] = None,
        query_mask: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
        training: bool | None = None,
        use_causal_mask: bool = False,
        alignment_state: NestedTensor = None,
    ) -> Tuple[Tensor, Tensor, NestedTensor]:
        self._validate_tensors(query, value, key)
        check_stateful_step(self.__class__.__name__, query, use_causal_mask)
        value, keys, value_mask = self._memory(value, key, value_mask)
        if alignment_state is None:
            mask = value_mask
            if mask is None:
                dims = ops.shape(value)
                mask = ops.ones((dims[0], dims[1]), dtype="bool")
            alignment_state = self.initial_alignment_state(mask)
        return self.attend(
            query,
            value,
            keys,
            query_mask=query_mask,
            value_mask=value_mask,
            training=training,
            alignment_state=alignment_state,
        )

    def attend(
        self,
        query: Tensor,
        value: Tensor,
        projected_key: Tensor,
        query_mask: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
        training: bool | None = None,
        use_causal_mask: bool = False,
        dropout_mask: Optional[Tensor] = None,
        alignment_state: NestedTensor = None,
    ) -> Tuple[Tensor, Tensor, NestedTensor]:
        """One step with keys already processed by `project_key`.

        As `BaseAttention.attend`, for a `(batch_size, Dq)` query and the
        previous step's `alignment_state` (required: start from
        `prepare_memory(...)["alignment_state"]`); returns `(context,
        weights, next_alignment_state)`.
        """
        check_stateful_step(self.__class__.__name__, query, use_causal_mask)
        query_mask, value_mask = self._check_step_masks(
            query, value, query_mask, value_mask
        )
        previous = self.checked_state(
            alignment_state, projected_key.shape[0], projected_key.shape[1]
        )
        if value_mask is not None:
            # Whatever the state holds at masked positions (NaN, inf) never
            # reaches the arithmetic of the step.
            previous = keep_positions(value_mask, previous)
        weights, next_state = self.stateful_alignment(
            ops.cast(query, self.score_dtype),
            ops.cast(projected_key, self.score_dtype),
            value_mask,
            previous,
            training=training,
        )
        if query_mask is not None:
            next_state = keep_rows(query_mask, next_state, previous)
        context, weights = self._context(
            weights, value, query_mask, training, dropout_mask
        )
        return context, weights, next_state

    # ------------------------------------------------------------------
    def compute_mask(
        self, query: Tensor, previous_mask: Optional[Tensor] = None
    ) -> Optional[list]:
        if previous_mask is None:
            return None
        return [previous_mask, None, None]

    def compute_output_spec(
        self,
        query: Tensor,
        value: Tensor,
        key: Optional[Tensor] = None,
        query_mask: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
        training: Optional[bool] = None,
        use_causal_mask: bool = False,
        alignment_state: NestedTensor = None,
    ) -> tuple:
        check_stateful_step(self.__class__.__name__, query, use_causal_mask)
        context, weights = super().compute_output_spec(query, value, key)
        return (
            context,
            weights,
            self.alignment_state_spec(weights.shape[0], weights.shape[-1]),
        )
