"""How `TranslatorModule`'s signatures are compiled: `xla="auto"`'s rule.

`resolve_xla` turns the `xla` argument into the part of every signature
that one XLA function runs (`None`, `"step"` or `"decode"`); `"auto"`, the
default, is `"decode"` wherever TensorFlow has XLA. Under `"decode"` the
inputs of the XLA function are padded to buckets (`pad_batch`,
`pad_source`), so that a server compiles it a bounded number of times
(once per bucket of batch size and of source length, and beam width)
rather than at every new batch size and source length it meets.
"""

from typing import Optional

import tensorflow as tf

from keras_attention.checks import check_choice
from keras_attention.seq2seq import tokens as text_lib
from keras_attention.typing import Tensor

# The parts of a signature that `TranslatorModule(xla=...)` compiles;
# `"auto"` picks one by `resolve_xla`'s rule, `None` (or `"none"`) none.
XLA_CHOICES = ("auto", "none", "step", "decode")
# Source lengths compile in steps of this many tokens under `"decode"`.
SOURCE_BUCKET = 8
# Batch sizes compile in powers of two up to this, then in its multiples.
BATCH_BUCKET = 64


def resolve_xla(xla: Optional[str]) -> Optional[str]:
    """The part of each signature that is one XLA function.

    The rule of `"auto"`: the whole decoding (`"decode"`: the encoder and
    the decoding loop, from the token ids to the output ids) wherever
    TensorFlow has XLA (its CPU and GPU builds do), else none. Every
    signature's decoding compiles (greedy, beam, n-best, sampling,
    completion, ensembles; the string ops stay outside) and decodes the
    tokens of the plain export. On a 2-core CPU it decodes 2.0-3.6x faster
    than the plain export at batch 1, the serving case; at batch 64 1.2-2.4x
    on the examples' models, 0.9x (greedy) to 1.1x (beam) on a model with a
    5,000-word vocabulary and 256 units, where the matmuls take the time
    (docs/benchmarks.md, "The default export"; GPUs not measured). `"step"`
    compiles less and gains less; `None` or `"none"` compiles nothing (a
    server without XLA, large batches of a large model, converters that
    take plain TensorFlow ops).

    Raises:
        ValueError: for another value.
    """
    if xla is None:
        return None
    check_choice("xla", xla, XLA_CHOICES, "TranslatorModule")
    if xla == "none":
        return None
    if xla == "auto":
        return "decode" if tf.test.is_built_with_xla() else None
    return xla


def pad_batch(text: Tensor) -> Tensor:
    """`text` padded with empty strings to a power of two rows (to a
    multiple of `BATCH_BUCKET` above it): the compiled batch sizes. One
    row at least: the encoder cannot run on none."""
    texts = tf.shape(text)[0]
    rows = tf.maximum(texts, 1)
    powers = tf.constant([2**i for i in range(7) if 2**i <= BATCH_BUCKET])
    multiple = -(-rows // BATCH_BUCKET) * BATCH_BUCKET
    bucket = tf.reduce_min(
        tf.where(powers >= rows, powers, tf.maximum(multiple, BATCH_BUCKET))
    )
    return tf.concat([text, tf.fill([bucket - texts], "")], axis=0)


def pad_source(source: Tensor) -> Tensor:
    """int32 `(batch, S)` ids padded with `[PAD]` to a multiple of
    `SOURCE_BUCKET` columns (padding is masked: the same translations)."""
    length = tf.shape(source)[1]
    padded = -(-length // SOURCE_BUCKET) * SOURCE_BUCKET
    return tf.pad(
        source, [[0, 0], [0, padded - length]],
        constant_values=text_lib.PAD_ID,
    )


def pad_rows(x: Tensor, rows: Tensor) -> Tensor:
    """`x` cut or padded with zero rows to `rows` rows (a prefix's ids and
    lengths for the padded batch: no prefix there)."""
    x = x[:rows]
    pad = [[0, rows - tf.shape(x)[0]]] + [[0, 0]] * (len(x.shape) - 1)
    return tf.pad(x, pad)


def inference_only() -> None:
    """Drops the custom-gradient marks of the ops traced so far in the
    graph being built (`keras_attention.LSTM`'s loop, the additive score).

    The serving functions are inference only and are saved without the
    gradient functions (`export_saved_model`'s
    `experimental_custom_gradients=False`); an op still marked with one
    makes `tf.saved_model.load` warn "Importing a function ... with ops
    with unsaved custom gradients" for every signature. Called where each
    graph is traced (the signature, the decoding loop's body, the XLA
    functions), before TensorFlow finalizes it. A gradient of a loaded
    signature was never supported; it now runs through the forward ops.
    """
    graph = tf.compat.v1.get_default_graph()
    for op in graph.get_operations():
        if "_gradient_op_type" in op.node_def.attr:
            op._clear_attr("_gradient_op_type")  # No public API for it.
