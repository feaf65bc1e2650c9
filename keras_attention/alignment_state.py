"""Helpers of the stateful-attention contract of `BaseAttention`.

A stateful attention layer (monotonic, location-sensitive) carries an
alignment state from one decoder step to the next: a tensor, or a dict of
tensors, each of shape `(batch_size, S, ...)`. These functions check the
step-wise call, keep the state of masked rows and describe the state
symbolically.
"""

from typing import Optional
from typing import Tuple

import keras
from keras import ops
from keras import tree

from keras_attention.checks import shape_str
from keras_attention.typing import NestedTensor
from keras_attention.typing import Tensor


def check_stateful_step(
    owner: str, query: Tensor, use_causal_mask: bool = False
) -> None:
    """Raises a `ValueError` unless `query` is one step, `(batch_size, Dq)`.

    Args:
        owner: The class name that prefixes the message.
        query: The query (or its `KerasTensor`).
        use_causal_mask: Must be `False` (one step has no causal order).
    """
    if len(query.shape) != 2 or use_causal_mask:
        raise ValueError(
            f"{owner} is stateful: it runs one decoder step at a time "
            "(AttentionWrapper / AttentionRNN), with a query of shape "
            "(batch_size, Dq) and no causal mask. Received: "
            f"query.shape={shape_str(query.shape)}, "
            f"use_causal_mask={use_causal_mask}"
        )


def check_alignment_state(owner: str, alignment_state: NestedTensor) -> None:
    """Raises a `ValueError` if a stateful step gets no alignment state."""
    if alignment_state is None:
        raise ValueError(
            f"{owner} is stateful: `attend` needs the previous step's "
            "`alignment_state` (`prepare_memory(...)['alignment_state']` "
            "or `initial_alignment_state(mask)` before the first step). "
            "Received: alignment_state=None"
        )


def keep_rows(
    keep: Tensor, new_state: NestedTensor, old_state: NestedTensor
) -> NestedTensor:
    """`new_state` where `keep` `(batch_size,)` is `True`, else `old_state`."""

    def select(new: Tensor, old: Tensor):
        shape = (-1,) + (1,) * (len(old.shape) - 1)
        return ops.where(ops.reshape(keep, shape), new, old)

    return tree.map_structure(select, new_state, old_state)


def alignment_state_spec(
    layer: keras.layers.Layer,
    batch_size: Optional[int],
    source_len: Optional[int],
) -> Optional[NestedTensor]:
    """`keras.KerasTensor`s of `layer`'s alignment state, or `None`.

    The state of a one-example, `source_len`-long memory (one position if
    unknown) gives the structure, dtypes and trailing sizes; the leading
    `(batch_size, S)` dimensions are those given.
    """
    if not layer.stateful:
        return None
    probe = layer.initial_alignment_state(
        ops.ones((1, source_len or 1), dtype="bool")
    )
    return tree.map_structure(
        lambda t: keras.KerasTensor(
            (batch_size, source_len) + tuple(t.shape[2:]),
            dtype=keras.backend.standardize_dtype(t.dtype),
        ),
        probe,
    )


class AlignmentStateHooks:
    """The stateful-attention hooks of `BaseAttention` (stateless here).

    A stateful layer overrides `stateful` (to `True`),
    `initial_alignment_state` and `stateful_alignment`.
    """

    @property
    def stateful(self) -> bool:
        """Whether the weights depend on the previous step's alignment."""
        return False

    def initial_alignment_state(
        self, memory_mask: Tensor
    ) -> Optional[NestedTensor]:
        """The alignment state before the first step; `None` if stateless.

        Args:
            memory_mask: Boolean `(batch_size, S)`, `True` = attend.

        Returns:
            A tensor, or a dict of tensors, each of shape
            `(batch_size, S, ...)`; `None` for a stateless layer.
        """
        return None

    def stateful_alignment(
        self,
        query: Tensor,
        projected_key: Tensor,
        value_mask: Optional[Tensor],
        alignment_state: NestedTensor,
        training: Optional[bool] = None,
    ) -> Tuple[Tensor, NestedTensor]:
        """Weights and next alignment state of one step (stateful layers).

        Args:
            query: `(batch_size, Dq)` in the score dtype.
            projected_key: `(batch_size, S, ...)`, from `project_key`.
            value_mask: Boolean `(batch_size, S)` or `None`.
            alignment_state: The previous step's alignment state.
            training: Python boolean, for training-only noise (e.g. the
                sigmoid noise of monotonic attention).

        Returns:
            `(weights, next_alignment_state)`: float32 weights
            `(batch_size, S)`, exactly zero at masked positions, and a state
            of the structure, shapes and dtypes of `alignment_state`.
        """
        raise NotImplementedError(
            f"{self.__class__.__name__} is stateful and must implement "
            "`stateful_alignment`."
        )

    def alignment_state_spec(
        self, batch_size: Optional[int], source_len: Optional[int]
    ) -> Optional[NestedTensor]:
        """`keras.KerasTensor`s of the alignment state; `None` if stateless.

        Args:
            batch_size: The batch size, or `None`.
            source_len: The number of source positions `S`, or `None`.
        """
        return alignment_state_spec(self, batch_size, source_len)

