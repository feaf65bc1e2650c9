"""Argument checks of the decoders, and the checked step function.

Each check raises a `ValueError` that names the argument, the expected and
the received value.
"""

import numbers
from typing import Optional
from typing import Tuple

import keras
import numpy as np
from keras import ops

from keras_attention.checks import check_bool
from keras_attention.checks import check_positive_int
from keras_attention.checks import concrete_value
from keras_attention.checks import shape_str
from keras_attention.checks import to_tensor
from keras_attention.typing import IntOrTensor
from keras_attention.typing import NestedTensor
from keras_attention.typing import StepFn
from keras_attention.typing import Tensor

INT32_MAX = 2**31 - 1
# A log-probability that no real hypothesis reaches; finite, so that sums,
# differences and divisions never produce NaN. The step's log-probabilities
# are clamped to at least this.
NEG_INF = -1e9
# Below every clamped log-probability: the tokens a prefix forbids.
FORBIDDEN = 2.0 * NEG_INF


def _is_int_dtype(tensor: Tensor):
    return "int" in keras.backend.standardize_dtype(tensor.dtype)


def check_start_tokens(
    start_tokens: IntOrTensor, initial_state: NestedTensor
) -> Tensor:
    """`start_tokens` as int32 `(batch_size,)`; a scalar is broadcast."""
    tokens = to_tensor("start_tokens", start_tokens)
    if not _is_int_dtype(tokens):
        raise ValueError(
            "`start_tokens` must be integer token ids. Received: "
            "start_tokens.dtype="
            f"{keras.backend.standardize_dtype(tokens.dtype)}"
        )
    value = concrete_value(tokens)
    if value is not None and value.size and value.min() < 0:
        raise ValueError(
            "`start_tokens` must be non-negative token ids. Received: "
            f"start_tokens with the value {int(value.min())}"
        )
    tokens = ops.cast(tokens, "int32")
    if len(tokens.shape) == 1:
        return tokens
    if len(tokens.shape) != 0:
        raise ValueError(
            "`start_tokens` must be a scalar or have shape (batch_size,). "
            f"Received: start_tokens.shape={shape_str(tokens.shape)}"
        )
    leaves = keras.tree.flatten(initial_state)
    if not leaves:
        raise ValueError(
            "A scalar `start_tokens` needs a non-empty `initial_state` to "
            "read the batch size from. Received: initial_state="
            f"{initial_state!r}"
        )
    return ops.broadcast_to(tokens, (ops.shape(leaves[0])[0],))


def check_state(state: NestedTensor, tokens: Tensor) -> None:
    batch = tokens.shape[0]
    for path, leaf in keras.tree.flatten_with_path(state):
        shape = tuple(leaf.shape)
        if len(shape) == 0:
            raise ValueError(
                "Every tensor of `initial_state` must have a leading batch "
                f"dimension. Received: initial_state{list(path)}.shape=()"
            )
        if batch is not None and shape[0] is not None and shape[0] != batch:
            raise ValueError(
                "Every tensor of `initial_state` must have the batch size "
                f"of `start_tokens`, ({batch}, ...). Received: "
                f"initial_state{list(path)}.shape={shape_str(shape)}"
            )


def check_token_id(
    name: str, value: Optional[IntOrTensor]
) -> Optional[IntOrTensor]:
    """A Python int, or an int32 scalar tensor."""
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    tensor = to_tensor(name, value)
    if len(tensor.shape) != 0 or not _is_int_dtype(tensor):
        raise ValueError(
            f"`{name}` must be an integer token id. Received: {name}={value!r}"
        )
    return ops.cast(tensor, "int32")


def check_beam_width(beam_width: IntOrTensor) -> IntOrTensor:
    """A Python int (checked), or an int32 scalar tensor at least 1."""
    if isinstance(beam_width, (numbers.Integral, float)):
        return check_positive_int("beam_width", beam_width)
    width = to_tensor("beam_width", beam_width)
    if not _is_int_dtype(width) or len(width.shape) != 0:
        raise ValueError(
            "`beam_width` must be a positive integer or a scalar integer "
            "tensor. Received: beam_width.dtype="
            f"{keras.backend.standardize_dtype(width.dtype)}, "
            f"beam_width.shape={shape_str(width.shape)}"
        )
    return ops.maximum(ops.cast(width, "int32"), 1)


def length_limits(
    max_length: IntOrTensor
) -> Tuple[IntOrTensor, Optional[Tensor]]:
    """Returns `(bound, limits)`: the number of steps at most, and `None` or
    the int32 `(batch_size,)` per-sentence limits.

    `0` is a valid limit, in a Python int as in a tensor: an empty output.
    A negative Python int raises; negative tensor entries count as `0`
    (a graph cannot raise on a value).
    """
    expected = (
        "a non-negative integer (at most 2**31 - 1) or an integer tensor"
    )
    if isinstance(max_length, numbers.Integral) and not isinstance(
        max_length, bool
    ):
        if not 0 <= max_length <= INT32_MAX:
            raise ValueError(
                f"`max_length` must be {expected}. "
                f"Received: max_length={max_length!r}"
            )
        return int(max_length), None
    if isinstance(max_length, (bool, float)):
        raise ValueError(
            f"`max_length` must be {expected}. "
            f"Received: max_length={max_length!r}"
        )
    limits = to_tensor("max_length", max_length)
    if not _is_int_dtype(limits):
        raise ValueError(
            f"`max_length` must be {expected}. Received: max_length.dtype="
            f"{keras.backend.standardize_dtype(limits.dtype)}"
        )
    limits = ops.maximum(ops.cast(limits, "int32"), 0)
    if len(limits.shape) == 0:
        return limits, None
    if len(limits.shape) == 1:
        return ops.max(limits), limits
    raise ValueError(
        "`max_length` must be a scalar or have shape (batch_size,). "
        f"Received: max_length.shape={shape_str(limits.shape)}"
    )


def check_buffer_size(
    num_rows: IntOrTensor, width: IntOrTensor, trailing: Tuple
) -> None:
    """The output buffers, allocated up front for `max_length` steps, must
    fit a tensor: at most `2**31 - 1` elements each.

    Checked where the sizes are static (Python ints); inside a traced
    function with dynamic sizes the backend allocates what it is asked.
    """
    sizes = (num_rows, width) + tuple(trailing)
    if not all(isinstance(size, numbers.Integral) for size in sizes):
        return
    elements = int(np.prod([int(size) for size in sizes], dtype=object))
    if elements > INT32_MAX:
        raise ValueError(
            "`max_length` is too large for the decode buffers, which are "
            "allocated up front for `max_length` steps: rows x max_length"
            f"{' x attention' if trailing else ''} = "
            f"{' x '.join(str(int(s)) for s in sizes)} = {elements:,} "
            "elements, more than a tensor holds (2**31 - 1). Pass a "
            f"smaller `max_length`. Received: max_length={int(width)}"
        )


def check_limits_batch(limits: Optional[Tensor], tokens: Tensor) -> None:
    """Per-sentence `max_length` limits must have the batch size."""
    if limits is None:
        return
    batch, size = tokens.shape[0], limits.shape[0]
    if batch is not None and size is not None and batch != size:
        raise ValueError(
            "A per-sentence `max_length` must have shape (batch_size,), the "
            f"batch size of `start_tokens` ({batch}). Received: "
            f"max_length.shape={shape_str(limits.shape)}"
        )


def check_prefix(
    prefix: Optional[Tensor], prefix_lengths: Optional[Tensor], tokens: Tensor
) -> Optional[Tuple[Tensor, Tensor]]:
    """`None`, or `(prefix, prefix_lengths)` as int32 tensors.

    Without `prefix_lengths`, a row's prefix ends at its first negative id
    (`-1` padding). Concrete `prefix_lengths` must lie in `[0, P]`; in a
    graph they are clamped to it. The ids are checked against the
    vocabulary by `resolve_prefix`, once the first step gives its size.
    """
    if prefix is None:
        if prefix_lengths is not None:
            raise ValueError(
                "`prefix_lengths` needs a `prefix`. Received: prefix=None, "
                f"prefix_lengths={prefix_lengths!r}"
            )
        return None
    prefix = to_tensor("prefix", prefix)
    batch = tokens.shape[0]
    if (
        not _is_int_dtype(prefix)
        or len(prefix.shape) != 2
        or (batch is not None and prefix.shape[0] not in (None, batch))
    ):
        raise ValueError(
            "`prefix` must be integer token ids of shape (batch_size, P), "
            f"batch_size={batch} as `start_tokens`. "
            f"Received: prefix.shape={shape_str(prefix.shape)}, "
            f"prefix.dtype={keras.backend.standardize_dtype(prefix.dtype)}"
        )
    if prefix.shape[1] == 0:
        return None
    prefix = ops.cast(prefix, "int32")
    width = ops.shape(prefix)[1]
    if prefix_lengths is None:
        # The leading non-negative ids: -1 is padding.
        leading = ops.cumprod(ops.cast(prefix >= 0, "int32"), axis=1)
        return prefix, ops.sum(leading, axis=1)
    prefix_lengths = to_tensor("prefix_lengths", prefix_lengths)
    rows = prefix.shape[0]
    if (
        not _is_int_dtype(prefix_lengths)
        or len(prefix_lengths.shape) != 1
        or (
            rows is not None
            and prefix_lengths.shape[0] not in (None, rows)
        )
    ):
        raise ValueError(
            "`prefix_lengths` must be integers of shape (batch_size,), "
            f"batch_size={rows} as `prefix`. Received: prefix_lengths.shape="
            f"{shape_str(prefix_lengths.shape)}, prefix_lengths.dtype="
            f"{keras.backend.standardize_dtype(prefix_lengths.dtype)}"
        )
    value = concrete_value(prefix_lengths)
    if value is not None and value.size and (
        value.min() < 0 or value.max() > prefix.shape[1]
    ):
        raise ValueError(
            f"`prefix_lengths` must lie in [0, {prefix.shape[1]}], the "
            "width P of `prefix`. Received: prefix_lengths="
            f"{value.tolist()}"
        )
    lengths = ops.clip(ops.cast(prefix_lengths, "int32"), 0, width)
    return prefix, lengths


def resolve_prefix(
    prefix: Optional[Tuple[Tensor, Tensor]], vocab_size: IntOrTensor
) -> Optional[Tuple[Tensor, Tensor]]:
    """The prefix with its ids checked against the vocabulary.

    Concrete ids inside a row's prefix must lie in `[0, vocab_size)`; in a
    graph, a row's prefix ends at its first id outside it.
    """
    if prefix is None:
        return None
    tokens, lengths = prefix
    inside = ops.logical_and(tokens >= 0, tokens < vocab_size)
    positions = ops.arange(ops.shape(tokens)[1], dtype="int32")
    in_prefix = ops.expand_dims(positions, 0) < ops.expand_dims(lengths, 1)
    values = concrete_value(tokens)
    counts = concrete_value(lengths)
    size = vocab_size if isinstance(vocab_size, int) else None
    if values is not None and counts is not None and size is not None:
        used = np.arange(values.shape[1])[None, :] < counts[:, None]
        bad = used & ((values < 0) | (values >= size))
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"`prefix` must hold token ids in [0, {size}), the "
                "vocabulary of the log_probs of `step_fn`, within each "
                "row's `prefix_lengths` (use -1 padding after them). "
                f"Received: prefix[{row}, {column}]={values[row, column]}"
            )
    leading = ops.cumprod(
        ops.cast(ops.logical_or(inside, ops.logical_not(in_prefix)), "int32"),
        axis=1,
    )
    return tokens, ops.minimum(lengths, ops.sum(leading, axis=1))


def checked_step(
    step_fn: StepFn, from_logits: bool, token_ids: dict, normalize: bool = True
) -> StepFn:
    """Wraps `step_fn`: validates its outputs, casts to float32.

    `token_ids` maps argument names to the token ids (`end_token`, ...)
    that must be in the vocabulary. With `normalize=False` the scores are
    returned as given (float32, no `log_softmax`, no `NEG_INF` guard over
    the vocabulary): for a decoder that normalizes and guards only the
    token it picks (`greedy.best_allowed`).
    """

    first = [True]  # The token ids are checked on the first call only.

    def step(tokens: Tensor, state: NestedTensor):
        outputs = step_fn(tokens, state)
        if not isinstance(outputs, (tuple, list)) or len(outputs) != 3:
            raise ValueError(
                "`step_fn(tokens, state)` must return a tuple "
                "(log_probs, new_state, attention). Received: "
                f"{type(outputs).__name__} {outputs!r:.200}"
            )
        log_probs, new_state, attention = outputs
        # A while loop needs the exact structure of the state back (a cell
        # may return a list for a tuple).
        leaves = keras.tree.flatten(state)
        new_leaves = keras.tree.flatten(new_state)
        if len(leaves) != len(new_leaves):
            raise ValueError(
                "`step_fn` must return a new state with the structure of "
                f"its state argument ({len(leaves)} tensors). Received "
                f"{len(new_leaves)} tensors: new_state={new_state!r:.200}"
            )
        new_state = keras.tree.pack_sequence_as(state, new_leaves)
        batch = tokens.shape[0]
        if len(log_probs.shape) != 2 or (
            batch is not None and log_probs.shape[0] not in (None, batch)
        ):
            raise ValueError(
                "`step_fn` must return log_probs of shape "
                f"({batch}, vocab_size). Received: "
                f"log_probs.shape={shape_str(log_probs.shape)}"
            )
        vocab_size = log_probs.shape[1]
        for name, value in token_ids.items():
            if not first[0]:
                break
            if not isinstance(value, int):
                concrete = concrete_value(value)
                value = None if concrete is None else int(concrete)
            if (
                value is not None
                and vocab_size is not None
                and not (0 <= value < vocab_size)
            ):
                raise ValueError(
                    f"`{name}` must be a token id in [0, {vocab_size}), the "
                    "vocabulary of the log_probs of `step_fn`. Received: "
                    f"{name}={value}, log_probs.shape="
                    f"{shape_str(log_probs.shape)}"
                )
        first[0] = False
        log_probs = ops.cast(log_probs, "float32")
        if normalize:
            if from_logits:
                log_probs = ops.log_softmax(log_probs, axis=-1)
            # NaN and anything below NEG_INF (-inf) count as NEG_INF:
            # scores stay finite.
            log_probs = ops.where(log_probs > NEG_INF, log_probs, NEG_INF)
        if attention is not None:
            if len(attention.shape) < 2 or (
                batch is not None and attention.shape[0] not in (None, batch)
            ):
                raise ValueError(
                    "`step_fn` must return attention of shape "
                    f"({batch}, S) or None. Received: "
                    f"attention.shape={shape_str(attention.shape)}"
                )
            attention = ops.cast(attention, "float32")
        return log_probs, new_state, attention

    return step


def check_common(
    step_fn: StepFn,
    start_tokens: IntOrTensor,
    initial_state: NestedTensor,
    end_token: IntOrTensor,
    pad_token: Optional[IntOrTensor],
    from_logits: bool,
    prefix: Optional[Tensor] = None,
    prefix_lengths: Optional[Tensor] = None,
    normalize_logits: bool = True,
) -> tuple:
    """The checks every decoder starts with.

    Returns `(step, start, end_token, pad_token, prefix)`. With
    `normalize_logits=False` the step returns the logits of a
    `from_logits=True` step as they are (`checked_step(normalize=False)`),
    for a decoder that normalizes only the token it picks.
    """
    if not callable(step_fn):
        raise ValueError(
            "`step_fn` must be a callable (tokens, state) -> (log_probs, "
            f"new_state, attention). Received: step_fn={step_fn!r:.80}"
        )
    from_logits = check_bool("from_logits", from_logits)
    start = check_start_tokens(start_tokens, initial_state)
    check_state(initial_state, start)
    end_token = check_token_id("end_token", end_token)
    pad_token = (
        end_token
        if pad_token is None
        else check_token_id("pad_token", pad_token)
    )
    step = checked_step(
        step_fn,
        from_logits,
        {"end_token": end_token, "pad_token": pad_token},
        normalize=normalize_logits or not from_logits,
    )
    prefix = check_prefix(prefix, prefix_lengths, start)
    return step, start, end_token, pad_token, prefix
