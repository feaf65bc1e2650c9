"""The state of `AttentionWrapper`: made for a memory, and its spec.

`initial_state` is the state before the first step, the work of
`AttentionWrapper.get_initial_state`: the prepared memory
(`attention.prepare_memory`: the values, the projected keys, the mask and,
for a stateful attention, the alignment state), the cell state and the
attentional vector `a_0`. `carried_state_spec` is the part that changes
from step to step (`AttentionRNN`'s final state) as `keras.KerasTensor`s.
Internal: nothing here is re-exported by `keras_attention`.
"""

from typing import Any
from typing import Optional

import keras
from keras import ops
from keras import tree

from keras_attention.checks import check_mask
from keras_attention.checks import shape_str
from keras_attention.rnn.rnn_cells import check_cell_state
from keras_attention.typing import NestedTensor
from keras_attention.typing import Shape
from keras_attention.typing import Tensor


def initial_state(
    wrapper: keras.layers.Layer,
    memory: Tensor,
    memory_shape: Shape,
    memory_mask: Optional[Tensor] = None,
    cell_state: NestedTensor = None,
    attention: Optional[Tensor] = None,
) -> dict[str, Any]:
    """The state of `wrapper` before the first step, for a memory.

    Args:
        wrapper: An `AttentionWrapper` whose attention layer is built.
        memory: `(batch_size, S, D)` memory.
        memory_shape: Its checked static shape.
        memory_mask, cell_state, attention: As
            `AttentionWrapper.get_initial_state`, which documents the
            returned dict.

    Raises:
        ValueError: on a mask, cell state or attention vector of the wrong
            shape, or a floating mask.
    """
    owner = wrapper.__class__.__name__
    memory_mask = check_mask(
        owner, "memory_mask", memory_mask, memory_shape[:2]
    )
    state = wrapper.attention.prepare_memory(memory, value_mask=memory_mask)
    batch_size = ops.shape(memory)[0]

    template = wrapper.initial_cell_state(batch_size)
    if cell_state is None:
        cell_state = template
    else:
        cell_state = check_cell_state(owner, cell_state, template)
    state["cell_state"] = tree.map_structure(
        lambda t: ops.cast(t, wrapper.cell.compute_dtype), cell_state
    )

    attention_size = wrapper.attention_size(memory_shape[-1])
    if attention is None:
        attention = ops.zeros(
            (batch_size, attention_size), dtype=wrapper.compute_dtype
        )
    elif tuple(attention.shape)[-1] != attention_size:
        raise ValueError(
            f"{owner}: `attention` must have shape "
            f"(batch_size, {attention_size}). Received: "
            f"attention.shape={shape_str(attention.shape)}"
        )
    state["attention"] = ops.cast(attention, wrapper.compute_dtype)
    return state


def carried_state_spec(
    wrapper: keras.layers.Layer,
    batch_size: Optional[int],
    memory_shape: Shape,
) -> dict[str, Any]:
    """What changes from step to step of `wrapper`, as `KerasTensor`s.

    `"cell_state"`, `"attention"` and, for a stateful attention layer,
    `"alignment_state"`: the final state of `AttentionRNN`.
    """
    template = wrapper.initial_cell_state(1)
    cell_state = tree.map_structure(
        lambda t: keras.KerasTensor(
            (batch_size,) + tuple(t.shape[1:]),
            dtype=wrapper.cell.compute_dtype,
        ),
        template,
    )
    attention = keras.KerasTensor(
        (batch_size, wrapper.attention_size(memory_shape[-1])),
        dtype=wrapper.compute_dtype,
    )
    spec = {"cell_state": cell_state, "attention": attention}
    if wrapper.attention.stateful:
        spec["alignment_state"] = wrapper.attention.alignment_state_spec(
            batch_size, memory_shape[1]
        )
    return spec
