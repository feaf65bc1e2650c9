"""AttentionalOutput, serialization, shapes, mixed precision, export, errors
of the attention RNN layers."""

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
from tests.layer_harness import RUN_EAGERLY
from tests.layer_harness import run_layer_test

E, D, H = 3, 4, 4


def to_np(x):
    return ops.convert_to_numpy(x).astype(np.float64)


# ----------------------------------------------------------------------------
# AttentionalOutput.
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("use_bias", [False, True])
def test_attentional_output_matches_numpy(rank, use_bias):
    rng = np.random.default_rng(0)
    shape = (2, 3) if rank == 3 else (2,)
    context = rng.normal(size=shape + (D,)).astype("float32")
    decoder = rng.normal(size=shape + (H,)).astype("float32")
    layer = AttentionalOutput(
        5,
        use_bias=use_bias,
        bias_initializer=keras.initializers.RandomNormal(seed=2),
    )
    out = to_np(layer(context, decoder))
    kernel = to_np(layer.kernel)
    assert kernel.shape == (D + H, 5)
    # W_c [c; h] = W_context c + W_decoder h.
    expected = context @ kernel[:D] + decoder @ kernel[D:]
    if use_bias:
        expected = expected + to_np(layer.bias)
    else:
        assert layer.bias is None and len(layer.weights) == 1
    np.testing.assert_allclose(out, np.tanh(expected), atol=1e-5)
    assert layer.compute_output_shape(context.shape, decoder.shape) == (
        shape + (5,)
    )


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("use_bias", [False, True])
def test_attentional_output_harness(rank, use_bias, tmp_path):
    steps = (3,) if rank == 3 else ()
    run_layer_test(
        lambda **kw: AttentionalOutput(
            5, activation="relu", use_bias=use_bias, **kw
        ),
        {"context": (2,) + steps + (D,), "decoder_output": (2,) + steps + (H,)},
        [(2,) + steps + (5,)],
        expected_num_trainable_weights=2 if use_bias else 1,
        tmp_path=tmp_path,
    )


def _make_rnn(dtype=None, wiring="luong"):
    return AttentionRNN(
        AttentionWrapper(
            keras.layers.LSTMCell(H, dtype=dtype),
            AdditiveAttention(3, normalize=True, dtype=dtype),
            attention_layer_size=5,
            wiring=wiring,
            dtype=dtype,
        ),
        dtype=dtype,
    )


@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_attention_rnn_harness(wiring, tmp_path):
    run_layer_test(
        lambda dtype=None: _make_rnn(dtype, wiring),
        {"inputs": (2, 4, E), "memory": (2, 3, D)},
        [(2, 4, 5), (2, 4, 3)],
        # LSTMCell 3, AdditiveAttention 5, AttentionalOutput 1.
        expected_num_trainable_weights=9,
        masks={
            "inputs_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool),
            "memory_mask": np.array([[1, 1, 0], [0, 0, 0]], bool),
        },
        tmp_path=tmp_path,
    )


def test_attentional_output_activation_none_is_linear():
    rng = np.random.default_rng(1)
    context = rng.normal(size=(2, D)).astype("float32")
    decoder = rng.normal(size=(2, H)).astype("float32")
    layer = AttentionalOutput(3, activation=None)
    out = to_np(layer(context, decoder))
    doubled = to_np(layer(2 * context, 2 * decoder))
    np.testing.assert_allclose(doubled, 2 * out, atol=1e-5)


def _sequence_mode_model(bidirectional=False):
    """The sequence-mode pattern of docs/rnn.md."""
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(12, E, mask_zero=True)(source)
    if bidirectional:
        encoder = keras.layers.Bidirectional(
            keras.layers.LSTM(H, return_sequences=True, return_state=True)
        )
        memory, h_f, c_f, h_b, c_b = encoder(x)
        h = keras.layers.Concatenate()([h_f, h_b])
        c = keras.layers.Concatenate()([c_f, c_b])
        units = 2 * H
    else:
        memory, h, c = keras.layers.LSTM(
            H, return_sequences=True, return_state=True
        )(x)
        units = H
    y = keras.layers.Embedding(12, E, mask_zero=True)(target)
    decoded = keras.layers.LSTM(units, return_sequences=True)(
        y, initial_state=[h, c]
    )
    context, _ = MultiplicativeAttention()(decoded, memory)
    attentional = AttentionalOutput(units)(context, decoded)
    logits = keras.layers.Dense(12)(attentional)
    model = keras.Model([source, target], logits)
    model.compile(
        keras.optimizers.Adam(0.05),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=RUN_EAGERLY,
    )
    return model


@pytest.mark.slow
@pytest.mark.parametrize("bidirectional", [False, True])
def test_sequence_mode_propagates_the_decoder_mask_to_the_loss(bidirectional):
    keras.utils.set_random_seed(0)
    model = _sequence_mode_model(bidirectional)
    rng = np.random.default_rng(2)
    src = rng.integers(1, 12, size=(4, 5))
    src[:2, 3:] = 0
    tgt = rng.integers(1, 12, size=(4, 4))
    tgt[:, 3:] = 0
    labels = rng.integers(1, 12, size=(4, 4))
    other = labels.copy()
    other[:, 3:] = (labels[:, 3:] + 1) % 12
    loss = model.evaluate([src, tgt], labels, verbose=0)
    assert loss == pytest.approx(
        model.evaluate([src, tgt], other, verbose=0), rel=1e-6
    )
    history = model.fit([src, tgt], labels, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.parametrize(
    "context_shape,decoder_shape",
    [
        ((2, 3, D), (2, H)),  # rank mismatch
        ((2, 3, D), (2, 4, H)),  # steps mismatch
        ((2, D), (3, H)),  # batch mismatch
        ((2, 3, 1, D), (2, 3, 1, H)),  # rank 4
    ],
)
def test_attentional_output_bad_shapes(context_shape, decoder_shape):
    with pytest.raises(ValueError, match=r"context.shape=\(.*decoder_output"):
        AttentionalOutput(3)(np.zeros(context_shape), np.zeros(decoder_shape))


def test_attentional_output_bad_units():
    with pytest.raises(ValueError, match="units"):
        AttentionalOutput(0)


# ----------------------------------------------------------------------------
# Serialization.
def _wrapper(cell="lstm", attention="additive", **options):
    cells = {
        "lstm": lambda: keras.layers.LSTMCell(H),
        "stacked": lambda: keras.layers.StackedRNNCells(
            [keras.layers.GRUCell(H), keras.layers.SimpleRNNCell(H)]
        ),
    }
    attentions = {
        "dot": lambda: DotAttention(use_scale=True),
        "multiplicative": lambda: MultiplicativeAttention(),
        "additive": lambda: AdditiveAttention(3, normalize=True),
    }
    return AttentionWrapper(cells[cell](), attentions[attention](), **options)


@pytest.mark.parametrize(
    "cell,attention,options",
    [
        ("lstm", "additive", dict(attention_layer_size=5)),
        ("stacked", "dot", dict(wiring="bahdanau", output_attention=False)),
        (
            "lstm",
            "multiplicative",
            dict(
                input_feeding=False,
                attention_layer_size=2,
                attention_activation="relu",
                attention_use_bias=True,
            ),
        ),
    ],
)
def test_config_round_trip(cell, attention, options):
    wrapper = _wrapper(cell, attention, **options)
    rnn = AttentionRNN(wrapper, return_state=True, name="decoder")
    config = rnn.get_config()
    restored = AttentionRNN.from_config(config)
    assert restored.get_config() == config
    assert restored.return_state and restored.name == "decoder"
    for key, value in options.items():
        got = getattr(restored.wrapper, key)
        if key == "attention_activation":
            got = keras.activations.serialize(got)
        assert got == value
    assert type(restored.wrapper.cell) is type(wrapper.cell)
    assert restored.wrapper.attention.get_config() == (
        wrapper.attention.get_config()
    )
    # An explicitly built wrapper records its shapes for loading.
    wrapper.build((None, E), (None, None, H))
    rebuilt = AttentionWrapper.from_config(wrapper.get_config())
    rebuilt.build_from_config(wrapper.get_build_config())
    assert [w.shape for w in rebuilt.weights] == [
        w.shape for w in wrapper.weights
    ]


def _rnn_model(wrapper, return_state=False):
    target = keras.Input((None, E), name="target")
    memory = keras.Input((None, D), name="memory")
    h = keras.Input((H,), name="h")
    rnn = AttentionRNN(wrapper, return_state=return_state, name="decoder")
    cell_state = None
    if isinstance(wrapper.cell, keras.layers.LSTMCell):
        cell_state = [h, h]
    results = rnn(target, memory, initial_state=cell_state)
    return keras.Model([target, memory, h], results)


@pytest.mark.parametrize(
    "cell,attention,options",
    [
        ("lstm", "additive", dict(attention_layer_size=5)),
        ("stacked", "multiplicative", dict(wiring="bahdanau")),
    ],
)
def test_keras_file_round_trip_with_safe_mode(
    tmp_path, cell, attention, options
):
    rng = np.random.default_rng(3)
    model = _rnn_model(_wrapper(cell, attention, **options), return_state=True)
    inputs = [
        rng.normal(size=(2, 4, E)).astype("float32"),
        rng.normal(size=(2, 3, D)).astype("float32"),
        rng.normal(size=(2, H)).astype("float32"),
    ]
    expected = model(inputs)
    path = str(tmp_path / "decoder.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    got = loaded(inputs)
    for g, e in zip(keras.tree.flatten(got), keras.tree.flatten(expected)):
        np.testing.assert_allclose(to_np(g), to_np(e), atol=1e-6)
    # The loaded wrapper steps like the original.
    wrapper = loaded.get_layer("decoder").wrapper
    original = model.get_layer("decoder").wrapper
    s1 = wrapper.get_initial_state(inputs[1])
    s2 = original.get_initial_state(inputs[1])
    o1, _, w1 = wrapper.step(inputs[0][:, 0], s1)
    o2, _, w2 = original.step(inputs[0][:, 0], s2)
    np.testing.assert_allclose(to_np(o1), to_np(o2), atol=1e-6)
    np.testing.assert_allclose(to_np(w1), to_np(w2), atol=1e-6)


# ----------------------------------------------------------------------------
# Shapes.
@pytest.mark.parametrize(
    "options,output_size",
    [
        (dict(), "memory"),
        (dict(attention_layer_size=6), 6),
        (dict(attention_layer_size=6, output_attention=False), "cell"),
        (dict(wiring="bahdanau"), "memory"),
    ],
)
def test_symbolic_and_eager_shapes_agree(options, output_size):
    wrapper = AttentionWrapper(
        keras.layers.LSTMCell(H), MultiplicativeAttention(), **options
    )
    rnn = AttentionRNN(wrapper, return_state=True)
    target = keras.Input((7, E))
    memory = keras.Input((5, D + 1))
    outputs, alignments, state = rnn(target, memory)
    attention_size = options.get("attention_layer_size", D + 1)
    output_size = {"memory": D + 1, "cell": H}.get(output_size, output_size)
    assert outputs.shape == (None, 7, output_size)
    assert alignments.shape == (None, 7, 5)
    assert [s.shape for s in state["cell_state"]] == [(None, H), (None, H)]
    assert state["attention"].shape == (None, attention_size)
    rng = np.random.default_rng(4)
    eager = rnn(
        rng.normal(size=(2, 7, E)).astype("float32"),
        rng.normal(size=(2, 5, D + 1)).astype("float32"),
    )
    for sym, val in zip(
        keras.tree.flatten((outputs, alignments, state)),
        keras.tree.flatten(eager),
    ):
        assert tuple(val.shape) == (2,) + tuple(sym.shape[1:])


# ----------------------------------------------------------------------------
# Mixed precision.
def test_mixed_precision_matches_float32():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4, E)).astype("float32")
    memory = rng.normal(size=(2, 3, D)).astype("float32")
    memory_mask = np.array([[True, True, False], [True, True, True]])

    def build():
        rnn = AttentionRNN(
            AttentionWrapper(
                keras.layers.LSTMCell(H),
                AdditiveAttention(4),
                attention_layer_size=5,
            )
        )
        return rnn, rnn(x, memory, memory_mask=memory_mask)

    rnn32, (out32, align32) = build()
    keras.config.set_dtype_policy("mixed_float16")
    rnn16, _ = build()
    for w16, w32 in zip(rnn16.weights, rnn32.weights):
        assert keras.backend.standardize_dtype(w16.dtype) == "float32"
        w16.assign(w32)
    out16, align16 = rnn16(x, memory, memory_mask=memory_mask)
    dtypes = {
        keras.backend.standardize_dtype(t.dtype) for t in (out16, align16)
    }
    assert dtypes == {"float16"}
    np.testing.assert_allclose(to_np(out16), to_np(out32), atol=1e-2)
    np.testing.assert_allclose(to_np(align16), to_np(align32), atol=1e-2)
    assert np.all(to_np(align16)[0, :, 2] == 0)


@pytest.mark.slow
def test_mixed_precision_fit_step():
    keras.config.set_dtype_policy("mixed_float16")
    keras.utils.set_random_seed(0)
    target = keras.Input((None,), dtype="int32")
    memory = keras.Input((None, D))
    y = keras.layers.Embedding(10, E, mask_zero=True)(target)
    outputs, _ = AttentionRNN(
        AttentionWrapper(
            keras.layers.GRUCell(H),
            DotAttention(),
            attention_layer_size=5,
            wiring="bahdanau",
        )
    )(y, memory)
    logits = keras.layers.Dense(10, dtype="float32")(outputs)
    model = keras.Model([target, memory], logits)
    model.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=RUN_EAGERLY,
    )
    rng = np.random.default_rng(6)
    tgt = rng.integers(1, 10, size=(4, 3))
    mem = rng.normal(size=(4, 5, D)).astype("float32")
    history = model.fit([tgt, mem], tgt, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


# ----------------------------------------------------------------------------
# Inference in a compiled loop, exported as a SavedModel.
def _greedy(embedding, wrapper, dense, memory, memory_mask, steps):
    """Greedy decoding with `wrapper.step` inside `keras.ops.while_loop`."""
    batch = ops.shape(memory)[0]
    state = wrapper.get_initial_state(memory, memory_mask)
    tokens = ops.ones((batch,), "int32")
    history = ops.zeros((batch, steps), "int32")

    def body(t, tokens, state, history):
        output, state, _ = wrapper.step(embedding(tokens), state)
        tokens = ops.cast(ops.argmax(dense(output), axis=-1), "int32")
        at_t = ops.expand_dims(ops.arange(steps) == t, 0)
        history = ops.where(at_t, ops.expand_dims(tokens, 1), history)
        return t + 1, tokens, state, history

    _, _, _, history = ops.while_loop(
        lambda t, *_: t < steps, body, (0, tokens, state, history)
    )
    return history


@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_step_in_while_loop_under_mixed_precision(wiring):
    """The state keeps its structure and dtypes from step to step, as
    `while_loop` requires, with a stack of cells under `mixed_float16`."""
    keras.config.set_dtype_policy("mixed_float16")
    rng = np.random.default_rng(9)
    embedding = keras.layers.Embedding(10, E)
    wrapper = AttentionWrapper(
        keras.layers.StackedRNNCells(
            [keras.layers.LSTMCell(H), keras.layers.GRUCell(H)]
        ),
        AdditiveAttention(4),
        attention_layer_size=5,
        wiring=wiring,
    )
    dense = keras.layers.Dense(10)
    embedding.build((None,))
    wrapper.build((None, E), (None, None, D))
    dense.build((None, 5))
    memory = rng.normal(size=(3, 4, D)).astype("float32")
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    looped = ops.convert_to_numpy(
        _greedy(embedding, wrapper, dense, memory, mask, 4)
    )
    state = wrapper.get_initial_state(memory, mask)
    first = [
        keras.backend.standardize_dtype(v.dtype)
        for v in keras.tree.flatten(state)
    ]
    tokens = ops.ones((3,), "int32")
    expected = []
    for _ in range(4):
        output, state, weights = wrapper.step(embedding(tokens), state)
        assert keras.backend.standardize_dtype(output.dtype) == "float16"
        tokens = ops.cast(ops.argmax(dense(output), axis=-1), "int32")
        expected.append(ops.convert_to_numpy(tokens))
    last = [
        keras.backend.standardize_dtype(v.dtype)
        for v in keras.tree.flatten(state)
    ]
    assert first == last
    np.testing.assert_array_equal(looped, np.stack(expected, 1))


@pytest.mark.slow
@pytest.mark.tf_only
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_step_in_tf_function_exports_as_saved_model(tmp_path, wiring):
    import tensorflow as tf

    rng = np.random.default_rng(7)
    embedding = keras.layers.Embedding(10, E)
    wrapper = AttentionWrapper(
        keras.layers.LSTMCell(H),
        AdditiveAttention(4),
        attention_layer_size=5,
        wiring=wiring,
    )
    dense = keras.layers.Dense(10)
    wrapper.build((None, E), (None, None, D))
    embedding.build((None,))
    dense.build((None, 5))
    memory = rng.normal(size=(3, 4, D)).astype("float32")
    memory_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    eager = ops.convert_to_numpy(
        _greedy(embedding, wrapper, dense, memory, memory_mask, 5)
    )

    module = tf.Module()
    module.layers = [embedding, wrapper, dense]
    module.decode = tf.function(
        lambda memory, memory_mask: _greedy(
            embedding, wrapper, dense, memory, memory_mask, 5
        ),
        input_signature=[
            tf.TensorSpec((None, None, D), tf.float32),
            tf.TensorSpec((None, None), tf.bool),
        ],
    )
    path = str(tmp_path / "decoder")
    tf.saved_model.save(module, path)
    restored = tf.saved_model.load(path)
    exported = restored.decode(memory, memory_mask).numpy()
    np.testing.assert_array_equal(exported, eager)


@pytest.mark.tf_only
def test_attention_rnn_traces_with_unknown_lengths():
    """A `tf.function` with `None` lengths (`model.export`, `fit`
    retracing): Keras' TensorFlow `scan` fails on several scanned tensors
    of unknown length."""
    import tensorflow as tf

    rng = np.random.default_rng(8)
    rnn = AttentionRNN(
        AttentionWrapper(
            keras.layers.GRUCell(H),
            AdditiveAttention(4, dropout=0.3),
            attention_layer_size=5,
        )
    )
    x = rng.normal(size=(2, 3, E)).astype("float32")
    memory = rng.normal(size=(2, 4, D)).astype("float32")
    mask = np.array([[True, True, False], [True, True, True]])
    expected = rnn(x, memory, inputs_mask=mask)
    signature = [
        tf.TensorSpec((None, None, E)),
        tf.TensorSpec((None, None, D)),
        tf.TensorSpec((None, None), tf.bool),
    ]
    infer = tf.function(
        lambda x, m, k: rnn(x, m, inputs_mask=k), input_signature=signature
    )
    train = tf.function(
        lambda x, m, k: rnn(x, m, inputs_mask=k, training=True),
        input_signature=signature,
    )
    for got, want in zip(infer(x, memory, mask), expected):
        np.testing.assert_allclose(to_np(got), to_np(want), atol=1e-6)
    outputs, alignments = train(x, memory, mask)
    assert tuple(outputs.shape) == (2, 3, 5)
    assert np.all(to_np(outputs)[0, 2] == 0)
    np.testing.assert_allclose(
        to_np(alignments)[:, 0], to_np(expected[1])[:, 0], atol=1e-6
    )


# ----------------------------------------------------------------------------
# Errors.
@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: AttentionWrapper("lstm", DotAttention()), "cell"),
        (
            lambda: AttentionWrapper(
                keras.layers.LSTMCell(H), keras.layers.Attention()
            ),
            "attention",
        ),
        (
            lambda: AttentionWrapper(
                keras.layers.LSTMCell(H), DotAttention(), wiring="tfa"
            ),
            "wiring",
        ),
        (
            lambda: AttentionWrapper(
                keras.layers.LSTMCell(H),
                DotAttention(),
                attention_layer_size=0,
            ),
            "attention_layer_size",
        ),
        (
            lambda: AttentionWrapper(
                keras.layers.LSTMCell(H),
                DotAttention(),
                wiring="bahdanau",
                input_feeding=True,
            ),
            "input_feeding",
        ),
        (lambda: AttentionRNN(keras.layers.LSTMCell(H)), "wrapper"),
    ],
)
def test_bad_configuration(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_shapes():
    wrapper = AttentionWrapper(keras.layers.LSTMCell(H), DotAttention())
    rnn = AttentionRNN(wrapper)
    x = np.zeros((2, 3, E), "float32")
    memory = np.zeros((2, 5, D), "float32")
    with pytest.raises(ValueError, match=r"memory.shape=\(2, 5\)"):
        rnn(x, memory[..., 0])
    with pytest.raises(ValueError, match=r"inputs.shape=\(2, 3\)"):
        rnn(x[..., 0], memory)
    with pytest.raises(ValueError, match="same batch size"):
        rnn(x, memory[:1])
    with pytest.raises(ValueError, match="memory_mask.shape=\\(2, 4\\)"):
        wrapper.get_initial_state(memory, np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="cell_state"):
        wrapper.get_initial_state(memory, cell_state=[np.zeros((2, H))])
    with pytest.raises(ValueError, match=r"cell_state.*\(2, 7\)"):
        wrapper.get_initial_state(
            memory, cell_state=[np.zeros((2, 7)), np.zeros((2, 7))]
        )
    state = wrapper.get_initial_state(memory)
    with pytest.raises(ValueError, match=r"inputs.shape=\(2, 3, 3\)"):
        wrapper.step(x, state)
    # The dot score needs query (cell output) and keys of the same size.
    bad = AttentionWrapper(keras.layers.LSTMCell(H + 1), DotAttention())
    with pytest.raises(ValueError, match="key.shape"):
        bad.get_initial_state(memory)
