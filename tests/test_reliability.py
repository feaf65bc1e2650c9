"""Reliability of the layers and models: numerical robustness, safe loading.

What `tests/test_layers.py` and `tests/test_rnn.py` already check is not
repeated (float32 gradients of moderate inputs, all-masked float32
gradients, mixed-precision forward passes of the core layers). Here:

- gradients (not only outputs) of the core layers under the float32,
  mixed_float16 and mixed_bfloat16 policies, for inputs of magnitude 1e4,
  for rows whose keys are all masked, rows with a single kept key, and
  sequences of length 1, through `call` and through the step-wise
  `project_key`/`attend` path;
- the same for `AttentionRNN` (both wirings) and `AttentionalOutput`, and
  for the NMT example's models (sequence-mode Luong and step-wise input
  feeding), whose token embeddings are scaled to 1e4;
- every `.keras` file the library and the example produce loads with
  `safe_mode=True` and gives the same outputs, and the packages contain no
  `Lambda` layer (a `.keras` file with a `Lambda` layer is refused in safe
  mode, which the last test shows, so the check can fail).
"""

import os
import re

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AdditiveAttention
from keras_attention import DotAttention
from keras_attention import MultiplicativeAttention
from keras_attention.rnn.attention_rnn import AttentionRNN
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from keras_attention.rnn.attentional_output import AttentionalOutput

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LARGE = 1e4
POLICIES = ["float32", "mixed_float16", "mixed_bfloat16"]
LAYERS = {
    "dot": lambda: DotAttention(),
    "multiplicative": lambda: MultiplicativeAttention(),
    "additive": lambda: AdditiveAttention(units=5),
}

# The tf.GradientTape tests run on TensorFlow only.
tf_only = pytest.mark.tf_only


def to_np(x):
    return ops.convert_to_numpy(ops.cast(x, "float32")).astype(np.float64)


def assert_finite(*tensors):
    for t in tensors:
        assert t is not None
        a = to_np(t)
        assert np.all(np.isfinite(a)), f"non-finite values in {a}"


def large(rng, *shape):
    return (rng.normal(size=shape) * LARGE).astype("float32")


def gradients(fn, inputs, weights):
    """Gradients of the scalar `fn(*inputs)` with respect to inputs and weights."""
    import tensorflow as tf

    inputs = [tf.convert_to_tensor(x) for x in inputs]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        out = fn(*inputs)
        loss = tf.add_n(
            [tf.reduce_mean(tf.cast(o, "float32")) for o in tf.nest.flatten(out)]
        )
    return out, tape.gradient(loss, inputs + list(weights))


# Mask rows of a batch of 4 over 5 keys: all kept, all masked, one kept key,
# every other key.
VALUE_MASK = np.array(
    [
        [1, 1, 1, 1, 1],
        [0, 0, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [1, 0, 1, 0, 1],
    ],
    bool,
)


# ----------------------------------------------------------------------------
# Core layers.
@tf_only
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_core_layer_large_inputs_masks_and_precision(name, policy):
    keras.config.set_dtype_policy(policy)
    rng = np.random.default_rng(0)
    layer = LAYERS[name]()
    q = large(rng, 4, 3, 6)
    v = large(rng, 4, 5, 6)
    (context, weights), grads = gradients(
        lambda q, v: layer(q, v, value_mask=VALUE_MASK), [q, v], layer.trainable_weights
    )
    assert_finite(context, weights, *grads)
    w, c = to_np(weights), to_np(context)
    # Masked keys get exactly zero weight, in every precision.
    assert np.all(w[np.broadcast_to(~VALUE_MASK[:, None], w.shape)] == 0.0)
    # A row with nothing to attend to: zero weights and zero context.
    assert np.all(w[1] == 0.0) and np.all(c[1] == 0.0)
    # A single kept key takes all the weight; the context is its value.
    np.testing.assert_array_equal(w[2, :, 2], 1.0)
    v_cast = to_np(ops.cast(v, layer.compute_dtype))
    np.testing.assert_allclose(c[2], np.broadcast_to(v_cast[2, 2], c[2].shape), rtol=1e-6)
    # Kept rows are distributions.
    atol = 1e-5 if policy == "float32" else 2e-2
    np.testing.assert_allclose(w[[0, 3]].sum(-1), 1.0, atol=atol)


@tf_only
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_core_layer_length_one_sequences(name, policy):
    keras.config.set_dtype_policy(policy)
    rng = np.random.default_rng(1)
    layer = LAYERS[name]()
    # One query step against one key (rank 3), and a rank-2 query.
    q3 = large(rng, 2, 1, 4)
    q2 = large(rng, 2, 4)
    v = large(rng, 2, 1, 4)
    (c3, w3), grads3 = gradients(lambda q, v: layer(q, v), [q3, v], layer.trainable_weights)
    (c2, w2), grads2 = gradients(lambda q, v: layer(q, v), [q2, v], layer.trainable_weights)
    assert_finite(c3, w3, c2, w2, *grads3, *grads2)
    assert tuple(w3.shape) == (2, 1, 1) and tuple(w2.shape) == (2, 1)
    np.testing.assert_array_equal(to_np(w3), 1.0)
    np.testing.assert_array_equal(to_np(w2), 1.0)
    v_cast = to_np(ops.cast(v, layer.compute_dtype))
    np.testing.assert_allclose(to_np(c2), v_cast[:, 0], rtol=1e-6)
    # The same length-1 key, masked: zeros, finite gradients.
    (c, w), grads = gradients(
        lambda q, v: layer(q, v, value_mask=np.zeros((2, 1), bool)),
        [q2, v],
        layer.trainable_weights,
    )
    assert_finite(*grads)
    assert np.all(to_np(w) == 0.0) and np.all(to_np(c) == 0.0)


@tf_only
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_core_layer_stepwise_attend_large_inputs(name, policy):
    """The decoding path: keys projected once, then one query at a time."""
    keras.config.set_dtype_policy(policy)
    rng = np.random.default_rng(2)
    layer = LAYERS[name]()
    q = large(rng, 4, 6)
    v = large(rng, 4, 5, 6)
    layer.build(q.shape, v.shape)

    def step(q, v):
        keys = layer.project_key(ops.cast(v, layer.score_dtype))
        return layer.attend(q, v, keys, value_mask=VALUE_MASK)

    (context, weights), grads = gradients(step, [q, v], layer.trainable_weights)
    assert_finite(context, weights, *grads)
    # Same numbers as the whole-sequence call, to the compute dtype's
    # precision: inside `__call__` Keras autocasts the inputs and reads the
    # weights in float16/bfloat16, while this direct path reads them in
    # float32 (a difference of one float16 ulp was seen).
    c_ref, w_ref = layer(q, v, value_mask=VALUE_MASK)
    weights_atol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[
        layer.compute_dtype
    ]
    np.testing.assert_allclose(to_np(weights), to_np(w_ref), atol=weights_atol)
    # The context is a weighted mean of values of magnitude up to max|v|.
    context_atol = max(1e-3, weights_atol * float(np.max(np.abs(v))))
    np.testing.assert_allclose(to_np(context), to_np(c_ref), atol=context_atol)
    assert np.all(to_np(weights)[1] == 0.0)


# ----------------------------------------------------------------------------
# AttentionRNN, AttentionWrapper, AttentionalOutput.
def _wrapper(wiring, attention="multiplicative"):
    return AttentionWrapper(
        keras.layers.LSTMCell(6),
        LAYERS[attention](),
        attention_layer_size=6,
        wiring=wiring,
    )


@tf_only
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "wiring, attention", [("luong", "multiplicative"), ("bahdanau", "additive"), ("luong", "dot")]
)
def test_attention_rnn_large_inputs_masks_and_precision(wiring, attention, policy):
    keras.config.set_dtype_policy(policy)
    rng = np.random.default_rng(3)
    rnn = AttentionRNN(_wrapper(wiring, attention))
    x = large(rng, 4, 3, 5)
    memory = large(rng, 4, 5, 6)
    inputs_mask = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]], bool)
    (outputs, alignments), grads = gradients(
        lambda x, m: rnn(x, m, inputs_mask=inputs_mask, memory_mask=VALUE_MASK),
        [x, memory],
        rnn.trainable_weights,
    )
    assert rnn.trainable_weights
    assert_finite(outputs, alignments, *grads)
    a = to_np(alignments)
    # Row 1 has an all-masked memory: zero weights at every step.
    assert np.all(a[1] == 0.0)
    # Row 2 keeps one source position (for its one kept step).
    np.testing.assert_array_equal(a[2, 0, 2], 1.0)
    # Padded target steps emit zeros.
    assert np.all(to_np(outputs)[2, 1:] == 0.0) and np.all(a[2, 1:] == 0.0)


@tf_only
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_attention_rnn_length_one_source_and_target(wiring, policy):
    keras.config.set_dtype_policy(policy)
    rng = np.random.default_rng(4)
    rnn = AttentionRNN(_wrapper(wiring))
    x = large(rng, 2, 1, 5)
    memory = large(rng, 2, 1, 6)
    (outputs, alignments), grads = gradients(
        lambda x, m: rnn(x, m), [x, memory], rnn.trainable_weights
    )
    assert_finite(outputs, alignments, *grads)
    assert tuple(outputs.shape) == (2, 1, 6)
    np.testing.assert_array_equal(to_np(alignments), 1.0)


@pytest.mark.slow
@tf_only
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_attention_rnn_exports_with_unknown_lengths_and_masks(wiring, tmp_path):
    """`model.export` traces with unknown batch and lengths, masks included.

    Keras' TensorFlow `ops.scan` fails on several scanned inputs of unknown
    length (`'NoneType' object has no attribute 'assert_is_compatible_with'`),
    which the target mask of an `Embedding(mask_zero=True)` gave before
    `AttentionRNN` packed its scanned inputs into one tensor. Here the whole
    round trip: export, load, same outputs.
    """
    import tensorflow as tf

    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    memory = keras.layers.Embedding(12, 6, mask_zero=True)(src)
    y = keras.layers.Embedding(12, 5, mask_zero=True)(tgt)
    outputs, weights = AttentionRNN(_wrapper(wiring))(y, memory)
    model = keras.Model([src, tgt], [outputs, weights])
    source = np.array([[3, 4, 5, 0], [6, 0, 0, 0]], "int32")
    target = np.array([[1, 2, 3], [4, 0, 0]], "int32")
    expected = model([source, target])
    model.export(str(tmp_path / "saved"), format="tf_saved_model", verbose=False)
    restored = tf.saved_model.load(str(tmp_path / "saved"))
    _assert_same(expected, restored.serve([source, target]))


@tf_only
@pytest.mark.parametrize("policy", POLICIES)
def test_attentional_output_large_inputs(policy):
    keras.config.set_dtype_policy(policy)
    rng = np.random.default_rng(5)
    layer = AttentionalOutput(4)
    c = large(rng, 2, 3, 6)
    h = large(rng, 2, 3, 5)
    out, grads = gradients(lambda c, h: layer(c, h), [c, h], layer.trainable_weights)
    assert_finite(out, *grads)
    # tanh saturates: |a| <= 1 in every precision.
    assert np.all(np.abs(to_np(out)) <= 1.0)


# ----------------------------------------------------------------------------
# The NMT example's models.
def _nmt_model(kind, policy):
    from keras_attention.training import runs as model_lib
    from keras_attention.training.settings import ModelConfig

    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(0)
    config = ModelConfig(
        source_vocab_size=12, target_vocab_size=10, model=kind,
        embedding_dim=4, units=4, dropout=0.0,
    )
    return model_lib.build_model(config)


@pytest.mark.slow
@tf_only
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kind", ["luong", "stepwise"])
def test_nmt_model_large_embeddings_empty_and_length_one_sources(kind, policy):
    import tensorflow as tf

    seq2seq = _nmt_model(kind, policy)
    model = seq2seq
    # Embeddings of magnitude 1e4 (saturating every gate and tanh).
    for layer in (seq2seq.source_embedding, seq2seq.target_embedding):
        w = layer.embeddings
        w.assign(np.random.default_rng(6).normal(size=w.shape) * LARGE)
    source = np.array(
        [[4, 5, 6, 3], [0, 0, 0, 0], [7, 0, 0, 0], [3, 0, 0, 0]], "int32"
    )  # a full row, an all-padding row, two length-1 rows
    target_in = np.array([[2, 4, 5], [2, 6, 0], [2, 0, 0], [2, 0, 0]], "int32")
    target_out = np.array([[4, 5, 3], [6, 3, 0], [3, 0, 0], [3, 0, 0]], "int32")
    from keras_attention.seq2seq import MaskedLoss

    loss_fn = MaskedLoss()
    with tf.GradientTape() as tape:
        logits = model(
            {"source_ids": source, "target_in": target_in}, training=True
        )["logits"]
        loss = loss_fn(target_out, logits)
    grads = tape.gradient(loss, model.trainable_weights)
    assert_finite(logits, loss, *[g for g in grads if g is not None])
    assert sum(g is not None for g in grads) >= len(grads) - 1
    weights = to_np(
        seq2seq({"source_ids": source, "target_in": target_in})["attention"]
    )
    assert np.all(np.isfinite(weights))
    assert np.all(weights[1] == 0.0)  # nothing to attend to
    # Length-1 source: its one token takes all the weight (the padded
    # target steps get none); padding positions get none.
    assert weights[2, 0, 0] == 1.0 and np.all(weights[2, 1:] == 0.0)
    assert np.all(weights[2:, :, 1:] == 0.0)
    # Step-wise decoding, as the exported translator runs it.
    state = seq2seq.encode(tf.constant(source))
    tokens = tf.fill([4], 2)
    for _ in range(3):
        log_probs, state, attention = seq2seq.step(tokens, state)
        assert_finite(log_probs, attention)
        tokens = tf.cast(tf.argmax(log_probs, -1), tf.int32)
    assert np.all(to_np(attention)[1] == 0.0)


# ----------------------------------------------------------------------------
# Safe loading.
def _library_model():
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(12, 4, mask_zero=True)(src)
    enc, h, c = keras.layers.LSTM(6, return_sequences=True, return_state=True)(x)
    y = keras.layers.Embedding(12, 4, mask_zero=True)(tgt)
    outputs = []
    for i, (wiring, attention) in enumerate(
        [("luong", "dot"), ("bahdanau", "additive"), ("luong", "multiplicative")]
    ):
        out, _ = AttentionRNN(_wrapper(wiring, attention), name=f"rnn_{i}")(
            y, enc, initial_state=[h, c]
        )
        outputs.append(out)
    dec = keras.layers.LSTM(6, return_sequences=True)(y, initial_state=[h, c])
    context, weights = AdditiveAttention(units=3, normalize=True)(dec, enc)
    outputs.append(AttentionalOutput(5, use_bias=True)(context, dec))
    outputs.append(weights)
    return keras.Model([src, tgt], outputs)


def _assert_same(expected, got):
    expected, got = keras.tree.flatten(expected), keras.tree.flatten(got)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(to_np(g), to_np(e), atol=1e-6)


def test_library_layers_load_in_safe_mode(tmp_path):
    model = _library_model()
    src = np.array([[3, 4, 5, 0], [6, 7, 8, 9]])
    tgt = np.array([[1, 2, 3], [4, 5, 0]])
    expected = model([src, tgt])
    path = tmp_path / "library.keras"
    model.save(path)
    loaded = keras.models.load_model(path, safe_mode=True)
    _assert_same(expected, loaded([src, tgt]))


@pytest.mark.slow
@pytest.mark.tf_only
@pytest.mark.parametrize("kind", ["luong", "stepwise"])
def test_nmt_models_load_in_safe_mode(kind, tmp_path):
    from keras_attention.training import runs as train_lib
    from keras_attention.training.settings import TrainConfig

    seq2seq = _nmt_model(kind, "float32")
    inputs = {
        "source_ids": np.array([[4, 5, 3, 0], [6, 3, 0, 0]], "int32"),
        "target_in": np.array([[2, 4, 5], [2, 6, 0]], "int32"),
    }
    # Compiled, with the example's losses and metric; all outputs (logits,
    # attention, alignment) compared.
    train_lib.compile_model(seq2seq, TrainConfig(), 10)
    expected = seq2seq(inputs)
    path = tmp_path / f"{seq2seq.name}.keras"
    seq2seq.save(path)
    loaded = keras.models.load_model(path, safe_mode=True)
    _assert_same(expected, loaded(inputs))


def test_packages_contain_no_lambda_layers():
    pattern = re.compile(r"\bLambda\s*\(|layers\.Lambda\b|\bpickle\b|\bmarshal\b")
    offenders = []
    for package in ("keras_attention", "examples"):
        for root, _, files in os.walk(os.path.join(REPO, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        for number, line in enumerate(f, 1):
                            if pattern.search(line):
                                offenders.append(f"{path}:{number}: {line.strip()}")
    assert not offenders, offenders


def test_safe_mode_refuses_lambda_layers(tmp_path):
    """The safe-mode check is real: a `Lambda` layer (pickled code) is refused."""
    inputs = keras.Input((3,))
    outputs = keras.layers.Lambda(lambda x: x * 2.0)(inputs)
    path = tmp_path / "lambda.keras"
    keras.Model(inputs, outputs).save(path)
    with pytest.raises(ValueError, match="safe_mode"):
        keras.models.load_model(path, safe_mode=True)
