"""Unknown-word replacement by attention (OpenNMT-tf's
`replace_unknown_target`)."""

from keras import ops

from keras_attention.checks import shape_str


def replace_unknown(
    target_tokens, attention, source_tokens, unknown_token, source_mask=None
):
    """Replaces each unknown target token by the most attended source token.

    For every output position `t` whose token is `unknown_token`, the token
    becomes `source_tokens[argmax_i attention[t, i]]`. Written with
    `keras.ops`: it runs in a graph and in a SavedModel. The tokens may be
    ids of a shared vocabulary; for words, call it on the positions
    (`source_tokens = ops.arange(S)`) and gather the words yourself (on
    TensorFlow, `tf.gather(source_words, positions, batch_dims=1)`).

    Args:
        target_tokens: int `(batch_size, L)`, a decoder's `tokens`.
        attention: float `(batch_size, L, S)`, the decoder's `attention`.
        source_tokens: `(batch_size, S)` tensor of the target's dtype.
        unknown_token: The unknown token's id (or scalar tensor).
        source_mask: Optional bool `(batch_size, S)`, True = a real source
            position; masked positions are never copied. Defaults to
            `None`.

    Returns:
        `target_tokens` with the unknown tokens replaced.

    Raises:
        ValueError: on inputs of mismatched ranks.
    """
    attention = ops.convert_to_tensor(attention)
    target_tokens = ops.convert_to_tensor(target_tokens)
    source_tokens = ops.convert_to_tensor(source_tokens)
    if (
        len(target_tokens.shape) != 2
        or len(attention.shape) != 3
        or len(source_tokens.shape) != 2
    ):
        raise ValueError(
            "`target_tokens` must be (batch_size, L), `attention` "
            "(batch_size, L, S) and `source_tokens` (batch_size, S). "
            f"Received: target_tokens.shape={shape_str(target_tokens.shape)}"
            f", attention.shape={shape_str(attention.shape)}, "
            f"source_tokens.shape={shape_str(source_tokens.shape)}"
        )
    if source_mask is not None:
        mask = ops.expand_dims(ops.cast(source_mask, "bool"), 1)
        attention = ops.where(mask, attention, -1.0)
    positions = ops.argmax(attention, axis=-1)  # (batch_size, L)
    copied = ops.take_along_axis(source_tokens, positions, axis=1)
    return ops.where(
        ops.equal(target_tokens, unknown_token),
        ops.cast(copied, target_tokens.dtype),
        target_tokens,
    )
