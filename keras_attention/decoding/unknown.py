"""Unknown-word replacement by attention (OpenNMT-tf's
`replace_unknown_target`)."""

from typing import Optional

from keras import ops

from keras_attention.checks import shape_str
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
        int32 `(batch_size, L)`: `argmax_i attention[b, t, i]` where
        `target_tokens[b, t]` is `unknown_token`, `-1` elsewhere.

    Raises:
        ValueError: on inputs of the wrong ranks.
    """
    target_tokens = ops.convert_to_tensor(target_tokens)
    attention = ops.convert_to_tensor(attention)
    if len(target_tokens.shape) != 2 or len(attention.shape) != 3:
        raise ValueError(
            "`target_tokens` must be (batch_size, L) and `attention` "
            "(batch_size, L, S). Received: target_tokens.shape="
            f"{shape_str(target_tokens.shape)}, attention.shape="
            f"{shape_str(attention.shape)}"
        )
    if source_mask is not None:
        mask = ops.expand_dims(ops.cast(source_mask, "bool"), 1)
        attention = ops.where(mask, attention, -1.0)
    positions = ops.cast(ops.argmax(attention, axis=-1), "int32")
    return ops.where(ops.equal(target_tokens, unknown_token), positions, -1)


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
        `target_tokens` with the unknown tokens replaced.

    Raises:
        ValueError: on inputs of the wrong ranks.
    """
    source_tokens = ops.convert_to_tensor(source_tokens)
    if len(source_tokens.shape) != 2:
        raise ValueError(
            "`source_tokens` must be (batch_size, S). Received: "
            f"source_tokens.shape={shape_str(source_tokens.shape)}"
        )
    target_tokens = ops.convert_to_tensor(target_tokens)
    positions = unknown_source_positions(
        target_tokens, attention, unknown_token, source_mask
    )
    copied = ops.take_along_axis(
        source_tokens, ops.maximum(positions, 0), axis=1
    )
    return ops.where(
        positions >= 0, ops.cast(copied, target_tokens.dtype), target_tokens
    )
