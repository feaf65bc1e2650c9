"""One step of `AttentionWrapper`: the Luong and Bahdanau wirings.

Luong (input feeding): the cell runs on `[x_t; a_{t-1}]`, its output
queries the memory. Bahdanau: the previous cell output queries the memory
and the cell runs on `[x_t; c_t]`. See `AttentionWrapper` for the
equations; this module holds them, the wrapper holds the configuration and
the state.
"""

from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.rnn_cells import previous_output
from keras_attention.rnn_cells import run_cell
from keras_attention.typing import Tensor

WIRINGS = ("luong", "bahdanau")


def _attend(
    wrapper: keras.layers.Layer,
    query: Tensor,
    state: dict,
    training: Optional[bool],
    dropout_mask: Optional[Tensor],
):
    return wrapper.attention.attend(
        query,
        state["memory"],
        state["keys"],
        value_mask=state["memory_mask"],
        training=training,
        alignment_state=state.get("alignment_state"),
        dropout_mask=dropout_mask,
    )


def _concat(cell: keras.layers.Layer, *tensors):
    return ops.concatenate(
        [ops.cast(t, cell.compute_dtype) for t in tensors], axis=-1
    )


def wiring_step(
    wrapper: keras.layers.Layer,
    inputs: Tensor,
    state: dict,
    training: Optional[bool],
    dropout_mask: Optional[Tensor] = None,
) -> Tuple[Tensor, dict, Tensor]:
    """One decoder step of a built `AttentionWrapper`.

    Args:
        wrapper: The `AttentionWrapper`.
        inputs: `(batch_size, E)` step inputs.
        state: The wrapper state (see `AttentionWrapper.get_initial_state`).
        training: Python boolean, whether dropout is applied.
        dropout_mask: Optional boolean `(batch_size, S)` keep mask of the
            attention dropout.

    Returns:
        `(output, new_state, weights)`, as `AttentionWrapper.step`.
    """
    cell = wrapper.cell
    cell_state = state["cell_state"]
    if wrapper.wiring == "bahdanau":
        query = previous_output(cell, cell_state)
        attended = _attend(wrapper, query, state, training, dropout_mask)
        cell_output, new_cell_state = run_cell(
            cell, _concat(cell, inputs, attended[0]), cell_state, training
        )
    else:
        cell_inputs = inputs
        if wrapper.feeds_attention:
            cell_inputs = _concat(cell, inputs, state["attention"])
        cell_output, new_cell_state = run_cell(
            cell, cell_inputs, cell_state, training
        )
        attended = _attend(
            wrapper, cell_output, state, training, dropout_mask
        )
    context, weights = attended[:2]
    if wrapper.attention_layer is not None:
        attentional = wrapper.attention_layer(context, cell_output)
    else:
        attentional = context
    dtype = wrapper.compute_dtype
    attentional = ops.cast(attentional, dtype)
    output = attentional if wrapper.output_attention else cell_output
    new_state = dict(state)
    new_state["cell_state"] = new_cell_state
    new_state["attention"] = attentional
    if wrapper.attention.stateful:
        new_state["alignment_state"] = attended[2]
    return ops.cast(output, dtype), new_state, ops.cast(weights, dtype)
