"""A scan over time whose trip count XLA knows.

Internal: `AttentionRNN` runs its decoder steps with `scan_steps`; nothing
here is re-exported by `keras_attention`.
"""

from typing import Callable
from typing import Sequence
from typing import Tuple

import keras
from keras import ops

from keras_attention.typing import Tensor


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
