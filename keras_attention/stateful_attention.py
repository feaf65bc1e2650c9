"""Shared base of the stateful attention layers (monotonic, location).

A stateful layer's weights at a decoder step depend on the previous step's
alignment, which it carries as its *alignment state*: a tensor or a dict of
tensors of shape `(batch_size, S)`. Such a layer runs one step at a time
(in `AttentionWrapper` / `AttentionRNN`, or through `attend`), never over a
whole query sequence.

A layer implements `initial_alignment_state(memory_mask)`,
`alignment_state_spec(batch_size, source_length)` and
`stateful_alignment(query, projected_key, value_mask, alignment_state,
training=None)`, the weights and next state of one step; `BaseAttention`
does the rest (masked query rows, dropout, the context, `prepare_memory`,
`call`, the output specs).
"""

from typing import Any
from typing import Optional
from typing import Tuple

import keras
from keras import ops
from keras import tree

from keras_attention.base_attention import BaseAttention
from keras_attention.checks import is_floating
from keras_attention.checks import shape_str
from keras_attention.checks import shapes_compatible
from keras_attention.typing import NestedTensor
from keras_attention.typing import Tensor


def state_dtype(compute_dtype: str) -> str:
    """The dtype of an alignment state: float32, or float64 for float64.

    Cumulative sums and products of alignments lose too much precision in
    float16 and bfloat16, so mixed precision policies keep the state in
    float32.
    """
    if keras.backend.standardize_dtype(compute_dtype) == "float64":
        return "float64"
    return "float32"


def check_state_structure(
    owner: str, state: NestedTensor, expected: NestedTensor
) -> NestedTensor:
    """`state` if it has the structure and shapes of `expected`.

    Args:
        owner: The class name that prefixes the message.
        state: The alignment state received, or `None`.
        expected: The expected structure of `keras.KerasTensor`s (`None`
            for sizes that are not known).

    Raises:
        ValueError: if `state` is `None`, has another structure, a tensor of
            another shape (where both are known) or a non-floating tensor.
    """
    if state is None:
        raise ValueError(
            f"{owner} is stateful: `attend` needs the previous step's "
            "`alignment_state` (start from `initial_alignment_state(mask)` "
            "or `prepare_memory(...)['alignment_state']`). Received: "
            "alignment_state=None"
        )
    try:
        tree.assert_same_structure(state, expected)
    except (TypeError, ValueError):
        raise ValueError(
            f"{owner}: `alignment_state` must have the structure of "
            f"{_describe(expected)}. Received: alignment_state="
            f"{_describe(state)}"
        ) from None
    for got, want in zip(tree.flatten(state), tree.flatten(expected)):
        if not shapes_compatible(got.shape, want.shape):
            raise ValueError(
                f"{owner}: every tensor of `alignment_state` must have shape "
                f"{shape_str(want.shape)}. Received: alignment_state="
                f"{_describe(state)}"
            )
        if not is_floating(got.dtype):
            raise ValueError(
                f"{owner}: `alignment_state` must hold floating point "
                f"tensors. Received: alignment_state={_describe(state)}"
            )
    return state


def _describe(structure: NestedTensor):
    def one(x: Any):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            dtype = keras.backend.standardize_dtype(x.dtype)
            return f"<tensor shape={shape_str(x.shape)} dtype={dtype}>"
        return repr(x)

    if isinstance(structure, dict):
        items = ", ".join(f"{k!r}: {one(v)}" for k, v in structure.items())
        return "{" + items + "}"
    if isinstance(structure, (list, tuple)):
        return "(" + ", ".join(one(x) for x in structure) + ")"
    return one(structure)


class StatefulAttention(BaseAttention):
    """Base class of the attention layers that carry an alignment state.

    Call convention (one decoder step):

        context, weights, next_state = layer(
            query, value, key=None, query_mask=None, value_mask=None,
            training=None, alignment_state=None)

    A missing `alignment_state` is `initial_alignment_state(value_mask)`.
    Masked query rows get zero weights and context and keep their state.
    """

    @property
    def stateful(self) -> bool:
        """`True`: the weights depend on the previous step's alignment."""
        return True

    @property
    def state_dtype(self) -> str:
        """float32 (float64 under a float64 policy): see `state_dtype`."""
        return state_dtype(self.compute_dtype)

    def alignment_state_spec(
        self, batch_size: Optional[int], source_length: Optional[int]
    ) -> NestedTensor:
        """The state's structure as `keras.KerasTensor`s."""
        raise NotImplementedError

    def initial_alignment_state(self, memory_mask: Tensor) -> NestedTensor:
        """The state before the first step, for a `(batch, S)` mask."""
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
            alignment_state: The previous step's state.
            training: Whether training-only noise is applied.

        Returns:
            Weights `(batch_size, S)` in `state_dtype`, exactly zero at
            masked positions, and the next state, of the structure, shapes
            and dtypes of `alignment_state_spec`.
        """
        raise NotImplementedError

    def checked_state(
        self,
        alignment_state: NestedTensor,
        batch_size: Optional[int],
        source_length: Optional[int],
    ) -> NestedTensor:
        """The state cast to `state_dtype`, after `check_state_structure`."""
        check_state_structure(
            self.__class__.__name__,
            alignment_state,
            self.alignment_state_spec(batch_size, source_length),
        )
        return tree.map_structure(
            lambda t: ops.cast(t, self.state_dtype), alignment_state
        )
