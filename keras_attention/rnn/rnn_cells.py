"""What the attention RNN layers need of a Keras RNN cell.

Sizes, the initial state and its checks, one call, and the cells' own
dropout masks. Internal: `AttentionWrapper` and `AttentionRNN` use these
functions; nothing here is re-exported by `keras_attention`.
"""

from typing import List
from typing import Optional
from typing import Tuple

import keras
from keras import ops
from keras import tree

from keras_attention.checks import shape_str
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import Tensor


def cell_output_size(cell: keras.layers.Layer) -> int:
    """The size of the output of `cell` (its first state size if unset)."""
    output_size = getattr(cell, "output_size", None)
    if output_size is not None:
        return output_size
    state_size = cell.state_size
    if isinstance(state_size, (list, tuple)):
        return tree.flatten(state_size)[0]
    return state_size


def previous_output(
    cell: keras.layers.Layer, cell_state: NestedTensor
) -> Tensor:
    """The output of the previous step, read from a cell state.

    Keras cells keep their output as the first state tensor (`h` of `[h, c]`
    for `LSTMCell`); a `StackedRNNCells` outputs the top cell's.
    """
    if isinstance(cell, keras.layers.StackedRNNCells):
        return previous_output(cell.cells[-1], cell_state[-1])
    return tree.flatten(cell_state)[0]


def initial_cell_state(
    cell: keras.layers.Layer, batch_size: IntOrTensor
) -> list:
    """The cell's zero state, always nested (a list for one tensor)."""
    state = cell.get_initial_state(batch_size=batch_size)
    if not tree.is_nested(state):
        state = [state]
    return state


def check_cell_state(
    owner: str, cell_state: NestedTensor, template: NestedTensor
) -> NestedTensor:
    """`cell_state` packed as `template`, or a `ValueError`.

    Args:
        owner: The class name that prefixes the message.
        cell_state: The given state (a tensor is accepted for a one-tensor
            state).
        template: The cell's own initial state, whose structure and feature
            sizes `cell_state` must have.
    """
    given = tree.flatten(cell_state)
    expected = tree.flatten(template)
    if len(given) != len(expected):
        raise ValueError(
            f"{owner}: `cell_state` must have "
            f"{len(expected)} tensor(s), the structure of the cell "
            f"state. Received {len(given)} tensor(s) with shapes "
            + ", ".join(shape_str(t.shape) for t in given)
        )
    for g, e in zip(given, expected):
        if g.shape[-1] is not None and g.shape[-1] != e.shape[-1]:
            raise ValueError(
                f"{owner}: `cell_state` tensors must have shapes "
                + ", ".join(shape_str((None, t.shape[-1])) for t in expected)
                + ". Received: "
                + ", ".join(shape_str(t.shape) for t in given)
            )
    return tree.pack_sequence_as(template, given)


def run_cell(
    cell: keras.layers.Layer,
    cell_inputs: Tensor,
    cell_state: NestedTensor,
    training: Optional[bool],
) -> Tuple[Tensor, NestedTensor]:
    """One call of `cell`; the new state keeps the structure of the old."""
    kwargs = {}
    if getattr(cell, "_call_has_training_arg", True):
        kwargs["training"] = training
    cell_inputs = ops.cast(cell_inputs, cell.compute_dtype)
    output, new_state = cell(cell_inputs, cell_state, **kwargs)
    # Keep the exact structure of the state (a while loop requires it;
    # cells return a bare tensor or a list for a one-tensor state).
    new_state = tree.pack_sequence_as(cell_state, tree.flatten(new_state))
    return output, new_state


def dropout_cells(cell: keras.layers.Layer) -> List[keras.layers.Layer]:
    """The cells of `cell` (recursing into stacks) that cache dropout masks."""
    if isinstance(cell, keras.layers.StackedRNNCells):
        return [c for sub in cell.cells for c in dropout_cells(sub)]
    if hasattr(cell, "get_dropout_mask") and hasattr(
        cell, "reset_dropout_mask"
    ):
        return [cell]
    return []


def prepare_dropout_masks(
    cell: keras.layers.Layer, cell_inputs: Tensor, cell_state: NestedTensor
) -> None:
    """Creates the cells' dropout masks before a loop, as `keras.layers.RNN`.

    A Keras cell draws its dropout masks on its first call and reuses them
    at every step; drawing them inside the loop would leak loop tensors (and
    break JAX's pure loops), so they are drawn here, once per call.
    """
    if isinstance(cell, keras.layers.StackedRNNCells):
        inputs = cell_inputs
        for sub, state in zip(cell.cells, cell_state):
            prepare_dropout_masks(sub, inputs, state)
            state = list(state) if tree.is_nested(state) else [state]
            inputs, _ = sub(inputs, state)
        return
    if hasattr(cell, "get_dropout_mask"):
        cell.get_dropout_mask(cell_inputs)
        first = tree.flatten(cell_state)[0]
        cell.get_recurrent_dropout_mask(first)


def reset_dropout_masks(cell: keras.layers.Layer) -> None:
    """Forgets the masks of `prepare_dropout_masks` after the loop."""
    for sub in dropout_cells(cell):
        sub.reset_dropout_mask()
        sub.reset_recurrent_dropout_mask()


# ----------------------------------------------------------------------
# The input projection of an LSTM cell, hoisted out of a loop.


def can_project_inputs(cell: keras.layers.Layer, training: bool) -> bool:
    """Whether `project_inputs`/`run_projected_cell` can replace `cell`.

    True for a plain `keras.layers.LSTMCell` (not a subclass, whose call may
    differ) without dropout in this call: its gates are
    `[x; u] @ kernel + h @ recurrent_kernel + bias`, so the `x` part of all
    steps is one matmul before the loop.
    """
    if type(cell) is not keras.layers.LSTMCell:
        return False
    return not (training and (cell.dropout > 0 or cell.recurrent_dropout > 0))


def project_inputs(cell: keras.layers.Layer, inputs: Tensor) -> Tensor:
    """`inputs @ kernel[:E] + bias` of a built LSTM cell, for all steps.

    `inputs` is `(..., E)`, the first `E` features of the cell input; the
    result `(..., 4 * units)`, in the cell's compute dtype.
    """
    dtype = cell.compute_dtype
    size = inputs.shape[-1]
    kernel = ops.cast(cell.kernel, dtype)[:size]
    projected = ops.matmul(ops.cast(inputs, dtype), kernel)
    if cell.use_bias:
        projected = projected + ops.cast(cell.bias, dtype)
    return projected


def run_projected_cell(
    cell: keras.layers.Layer,
    projected: Tensor,
    other_inputs: Optional[Tensor],
    cell_state: NestedTensor,
) -> Tuple[Tensor, NestedTensor]:
    """One LSTM step from `project_inputs`' slice of this step.

    The same as `run_cell(cell, [x; other_inputs], cell_state)`: `other_inputs`
    (or `None`) are the cell input's features after the projected ones.
    """
    dtype = cell.compute_dtype
    h, c = cell_state
    h = ops.cast(h, dtype)
    z = ops.cast(projected, dtype) + ops.matmul(
        h, ops.cast(cell.recurrent_kernel, dtype)
    )
    if other_inputs is not None:
        kernel = ops.cast(cell.kernel, dtype)
        size = other_inputs.shape[-1]
        z = z + ops.matmul(
            ops.cast(other_inputs, dtype), kernel[kernel.shape[0] - size :]
        )
    z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
    i = cell.recurrent_activation(z_i)
    f = cell.recurrent_activation(z_f)
    c = f * ops.cast(c, dtype) + i * cell.activation(z_c)
    o = cell.recurrent_activation(z_o)
    h = o * cell.activation(c)
    return h, tree.pack_sequence_as(cell_state, [h, c])
