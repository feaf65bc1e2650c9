"""The generic loop of `AttentionRNN`, on a scan whose trip count XLA knows.

`generic_decode` runs `AttentionWrapper.step` over a target sequence (any
cell, attention and wiring; `fused_decoder.fused_decode` is the fast loop
of the configurations it knows) with `scan_steps`. Internal: nothing here
is re-exported by `keras_attention`.

`portable_loops()` makes the loops traced inside it portable to runtimes
without TensorFlow's TensorList ops (LiteRT): buffers written by index
instead of `keras.ops.scan`'s stacked outputs.
"""

from typing import Callable
from typing import Iterator
from typing import Optional
from typing import Sequence
from typing import Tuple

import contextlib
import threading

import keras
from keras import ops
from keras import tree

from keras_attention.rnn.rnn_cells import can_project_inputs
from keras_attention.rnn.rnn_cells import dropout_cells
from keras_attention.rnn.rnn_cells import prepare_dropout_masks
from keras_attention.rnn.rnn_cells import project_inputs
from keras_attention.rnn.rnn_cells import reset_dropout_masks
from keras_attention.typing import Tensor


_MODE = threading.local()


@contextlib.contextmanager
def portable_loops() -> Iterator[None]:
    """Within it, `keras_attention.LSTM`'s inference loop runs on
    `scan_steps`' buffers, not `keras.ops.scan` (whose TensorFlow loop
    stacks its outputs in TensorList ops that LiteRT's converter lowers
    only for a known batch size). For tracing an export; the same
    results, per thread."""
    before = getattr(_MODE, "portable", False)
    _MODE.portable = True
    try:
        yield
    finally:
        _MODE.portable = before


def portable() -> bool:
    """Whether the caller runs inside `portable_loops()`."""
    return getattr(_MODE, "portable", False)


def scan_steps(
    step: Callable[[dict, Tensor], dict],
    init: dict,
    sequence: Tensor,
    collect: Sequence[str],
) -> Tuple[dict, dict]:
    """Runs `carry = step(carry, sequence[t])` for every `t`.

    Args:
        step: The step function, from the carry (a dict of tensors) and the
            step's slice of `sequence` to the new carry (same structure,
            shapes and dtypes).
        init: The initial carry.
        sequence: Time-major `(T, ...)` tensor.
        collect: Keys of the carry whose value after each step is kept.

    Returns:
        `(final_carry, history)`: `history[k]` stacks `carry[k]` after each
        step, `(T,) + carry[k].shape`.

    On TensorFlow the loop is a `while_loop` with `maximum_iterations=T`
    writing each step's values into preallocated buffers, so that a train
    step with the loop compiles with XLA (`jit_compile=True`): the gradient
    of a `tf.while_loop` without a bound, which `keras.ops.scan` is there,
    does not. On JAX (`lax.scan`, which XLA always compiles) and PyTorch
    it is `keras.ops.scan`.
    """
    if keras.backend.backend() != "tensorflow":

        def scan_step(carry: dict, x_t: Tensor):
            carry = step(carry, x_t)
            # `ops.scan` on TensorFlow wants per-step outputs shaped as the
            # carry; the other backends accept any structure.
            return carry, {k: carry[k] for k in collect}

        return ops.scan(scan_step, init, sequence)

    length = ops.shape(sequence)[0]
    # TensorFlow's scatter rejects an empty update (a zero-length memory
    # gives `(batch_size, 0)` weights): values whose last size is not known
    # to be positive are stored with one extra zero column, cut off after.
    padded = {k for k in collect if not (init[k].shape[-1] or 0) > 0}

    def stored(k: str, value: Tensor):
        if k not in padded:
            return value
        extra = ops.zeros(tuple(ops.shape(value)[:-1]) + (1,), value.dtype)
        return ops.concatenate([value, extra], axis=-1)

    buffers = {
        k: ops.zeros(
            (length,) + tuple(ops.shape(stored(k, init[k]))), init[k].dtype
        )
        for k in collect
    }

    def body(i: Tensor, carry: dict, buffers: dict):
        carry = step(carry, ops.take(sequence, i, axis=0))
        buffers = {
            # A scatter, not `slice_update`: TensorFlow has no gradient for
            # XLA's dynamic update slice outside XLA.
            k: ops.scatter_update(
                buffers[k],
                ops.reshape(i, (1, 1)),
                ops.expand_dims(stored(k, carry[k]), 0),
            )
            for k in collect
        }
        return i + 1, carry, buffers

    _, final, history = ops.while_loop(
        lambda i, carry, buffers: i < length,
        body,
        (ops.convert_to_tensor(0, "int32"), init, buffers),
        maximum_iterations=length,
    )
    history = {
        k: v[..., :-1] if k in padded else v for k, v in history.items()
    }
    return final, history


def generic_decode(
    wrapper: keras.layers.Layer,
    inputs: Tensor,
    memory: Tensor,
    state: dict,
    inputs_mask: Optional[Tensor],
    training: Optional[bool],
    dtype: str,
) -> Tuple[Tensor, Tensor, dict]:
    """`AttentionRNN`'s generic loop: `wrapper.step` at every target step.

    Runs any cell, attention and wiring (`fused_decoder.fused_decode` runs
    the configurations it knows faster). The dropout masks of the cell and
    of the attention are drawn before the loop; at a step whose
    `inputs_mask` is `False` the carried state is kept and the output and
    the weights are zeros.

    Args:
        wrapper: A built `AttentionWrapper`.
        inputs: `(batch_size, T, E)` target inputs.
        memory: The `(batch_size, S, D)` memory the state was made from.
        state: `wrapper.get_initial_state(memory, ...)`.
        inputs_mask: Boolean `(batch_size, T)`, or `None`.
        training: Python boolean, whether dropout is applied.
        dtype: The dtype of the outputs and alignments.

    Returns:
        `(outputs, alignments, final_state)`: `(batch_size, T,
        output_size)` and `(batch_size, T, S)` in `dtype`, and the state
        carried from step to step after the last kept step (`"cell_state"`,
        `"attention"` and, for a stateful attention, `"alignment_state"`).
    """
    carried = ["cell_state", "attention"]
    if wrapper.attention.stateful:
        carried.append("alignment_state")
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

    # `keras.ops.scan` gets a single scanned tensor: on TensorFlow it fails
    # on several scanned tensors whose length is unknown when traced (a
    # `tf.function` with a `None` time dimension, as in `model.export` or
    # `fit` retracing on new lengths). The target mask and the attention
    # dropout masks travel as 0/1 features appended to the inputs.
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
        new_carry["output"] = ops.cast(output, dtype)
        new_carry["weights"] = ops.cast(weights, dtype)
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
    init["output"] = ops.zeros((batch_size, output_size), dtype)
    init["weights"] = ops.zeros((batch_size, source_len), dtype)
    final, history = scan_steps(
        step, init, time_major, collect=("output", "weights")
    )

    if cell_dropout:
        reset_dropout_masks(wrapper.cell)

    outputs = ops.cast(ops.transpose(history["output"], (1, 0, 2)), dtype)
    alignments = ops.cast(ops.transpose(history["weights"], (1, 0, 2)), dtype)
    return outputs, alignments, {k: final[k] for k in carried}
