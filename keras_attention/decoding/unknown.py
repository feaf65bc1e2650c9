"""Unknown-word replacement by attention (OpenNMT-tf's
`replace_unknown_target`)."""

from typing import Optional

import keras
from keras import ops

from keras_attention.checks import check_mask
from keras_attention.checks import shape_str
from keras_attention.checks import to_tensor
from keras_attention.decoding.args import check_token_id
from keras_attention.typing import IntOrTensor
from keras_attention.typing import Tensor


def unknown_source_positions(
    target_tokens: Tensor,
    attention: Tensor,
    unknown_token: IntOrTensor,
    source_mask: Optional[Tensor] = None,
) -> Tensor:
    """The most attended source position of every unknown target token.

    Args:
        target_tokens: int `(batch_size, L)`, a decoder's `tokens`.
        attention: float `(batch_size, L, S)`, the decoder's `attention`.
        unknown_token: The unknown token's id (or scalar tensor).
        source_mask: Optional bool `(batch_size, S)`, True = a real source
            position; masked positions are never chosen. Defaults to
            `None`.

    Returns:
        int32 `(batch_size, L)`: `argmax_i attention[b, t, i]` over the
        real (unmasked, not NaN) positions where `target_tokens[b, t]` is
        `unknown_token`, `-1` elsewhere and where the row has no real
        position.

    Raises:
        ValueError: on inputs of the wrong ranks, dtypes or shapes (the
            batch size, `L` and `S` must agree).
    """
    target_tokens = to_tensor("target_tokens", target_tokens)
    attention = to_tensor("attention", attention)
    if len(target_tokens.shape) != 2 or len(attention.shape) != 3 or any(
        a is not None and b is not None and a != b
        for a, b in zip(target_tokens.shape, attention.shape[:2])
    ):
        raise ValueError(
            "`target_tokens` must be (batch_size, L) and `attention` "
            "(batch_size, L, S), of the same batch_size and L. Received: "
            f"target_tokens.shape={shape_str(target_tokens.shape)}, "
            f"attention.shape={shape_str(attention.shape)}"
        )
    _check_dtype("target_tokens", target_tokens, "int")
    _check_dtype("attention", attention, "float")
    unknown_token = check_token_id("unknown_token", unknown_token)
    batch, _, length = attention.shape
    if source_mask is not None:
        source_mask = to_tensor("source_mask", source_mask)
    mask = check_mask(
        "unknown_source_positions", "source_mask", source_mask,
        (batch, length),
    )
    attention = ops.cast(attention, "float32")
    # Masked and NaN weights are replaced before the argmax; a row with no
    # real source position copies nothing.
    valid = ops.logical_not(ops.isnan(attention))
    if mask is not None:
        valid = ops.logical_and(valid, ops.expand_dims(mask, 1))
    scores = ops.where(valid, attention, -float("inf"))
    # One more column, never chosen: an argmax needs one (a source of
    # length 0).
    scores = ops.pad(scores, [[0, 0], [0, 0], [0, 1]],
                     constant_values=-float("inf"))
    positions = ops.cast(ops.argmax(scores, axis=-1), "int32")
    positions = ops.where(ops.any(valid, axis=-1), positions, -1)
    return ops.where(ops.equal(target_tokens, unknown_token), positions, -1)


def _check_dtype(name: str, tensor: Tensor, kind: str) -> None:
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    if kind not in dtype:
        expected = "integer token ids" if kind == "int" else "float weights"
        raise ValueError(
            f"`{name}` must be {expected}. Received: {name}.dtype={dtype}"
        )


def replace_unknown(
    target_tokens: Tensor,
    attention: Tensor,
    source_tokens: Tensor,
    unknown_token: IntOrTensor,
    source_mask: Optional[Tensor] = None,
) -> Tensor:
    """Replaces each unknown target token by the most attended source token.

    For every output position `t` whose token is `unknown_token`, the token
    becomes `source_tokens[argmax_i attention[t, i]]` (OpenNMT-tf's
    `replace_unknown_target`). Written with `keras.ops`: it runs in a graph
    and in a SavedModel. The tokens are ids (a shared vocabulary); for words
    use `unknown_source_positions` and gather the source words yourself (on
    TensorFlow, `tf.gather(source_words, tf.maximum(positions, 0),
    batch_dims=1)` where `positions >= 0`).

    Args:
        target_tokens: int `(batch_size, L)`, a decoder's `tokens`.
        attention: float `(batch_size, L, S)`, the decoder's `attention`.
        source_tokens: int `(batch_size, S)`.
        unknown_token: The unknown token's id (or scalar tensor).
        source_mask: Optional bool `(batch_size, S)`, True = a real source
            position; masked positions are never copied. Defaults to
            `None`.

    Returns:
        `target_tokens` with the unknown tokens replaced; an unknown token
        whose source row has no real position stays unknown.

    Raises:
        ValueError: on inputs of the wrong ranks, dtypes or shapes.
    """
    source_tokens = to_tensor("source_tokens", source_tokens)
    attention = to_tensor("attention", attention)
    expected = (None, None)
    if len(attention.shape) == 3:
        expected = (attention.shape[0], attention.shape[2])
    if len(source_tokens.shape) != 2 or any(
        a is not None and b is not None and a != b
        for a, b in zip(source_tokens.shape, expected)
    ):
        raise ValueError(
            "`source_tokens` must be (batch_size, S), as `attention` "
            "(batch_size, L, S). Received: "
            f"source_tokens.shape={shape_str(source_tokens.shape)}, "
            f"attention.shape={shape_str(attention.shape)}"
        )
    _check_dtype("source_tokens", source_tokens, "int")
    target_tokens = to_tensor("target_tokens", target_tokens)
    positions = unknown_source_positions(
        target_tokens, attention, unknown_token, source_mask
    )
    # (One more column: the gather needs one for a source of length 0.)
    padded = ops.pad(source_tokens, [[0, 0], [0, 1]])
    copied = ops.take_along_axis(padded, ops.maximum(positions, 0), axis=1)
    return ops.where(
        positions >= 0, ops.cast(copied, target_tokens.dtype), target_tokens
    )
