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

from keras_attention.rnn.rnn_cells import previous_output
from keras_attention.rnn.rnn_cells import run_cell
from keras_attention.rnn.rnn_cells import run_projected_cell
from keras_attention.typing import Tensor

WIRINGS = ("luong", "bahdanau")


def _attend(
    wrapper: keras.layers.Layer,
    query: Tensor,
    state: dict,
    training: Optional[bool],
    dropout_mask: Optional[Tensor],
):
    stateful = {}
    if wrapper.attention.stateful:
        stateful["alignment_state"] = state["alignment_state"]
    return wrapper.attention.attend(
        query,
        state["memory"],
        state["keys"],
        value_mask=state["memory_mask"],
        training=training,
        dropout_mask=dropout_mask,
        **stateful,
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
    projected: bool = False,
) -> Tuple[Tensor, dict, Tensor]:
    """One decoder step of a built `AttentionWrapper`.

    Args:
        wrapper: The `AttentionWrapper`.
        inputs: `(batch_size, E)` step inputs, or with `projected=True`
            their `rnn_cells.project_inputs` (an LSTM cell's input
            projection, hoisted out of a loop).
        state: The wrapper state (see `AttentionWrapper.get_initial_state`).
        training: Python boolean, whether dropout is applied.
        dropout_mask: Optional boolean `(batch_size, S)` keep mask of the
            attention dropout.
        projected: Whether `inputs` are projected.

    Returns:
        `(output, new_state, weights)`, as `AttentionWrapper.step`.
    """
    cell = wrapper.cell
    cell_state = state["cell_state"]

    def run(other: Optional[Tensor]):
        # The cell on `[inputs; other]` (`other` may be None).
        if projected:
            return run_projected_cell(cell, inputs, other, cell_state)
        cell_inputs = inputs if other is None else _concat(cell, inputs, other)
        return run_cell(cell, cell_inputs, cell_state, training)

    if wrapper.wiring == "bahdanau":
        query = previous_output(cell, cell_state)
        attended = _attend(wrapper, query, state, training, dropout_mask)
        cell_output, new_cell_state = run(attended[0])
    else:
        cell_output, new_cell_state = run(
            state["attention"] if wrapper.feeds_attention else None
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
