"""Tests of AttentionWrapper, AttentionRNN and AttentionalOutput.

Numbers come from independent numpy references that use the layers' own
weights (a SimpleRNN cell and the three scores, for both wirings), and from
equalities the maths requires: the step-wise decoder without input feeding
equals the sequence mode (RNN then attention); stepping `step` T times
equals `AttentionRNN`; padded target steps change nothing.
"""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import AdditiveAttention
from keras_attention import DotAttention
from keras_attention import MultiplicativeAttention
from keras_attention.rnn.attention_rnn import AttentionRNN
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from tests.layer_harness import RUN_EAGERLY
from tests.layer_harness import gradients

E, D, H = 3, 4, 4  # input, memory and cell sizes (D == H for the dot score)

ATTENTIONS = {
    "dot": lambda: DotAttention(),
    "multiplicative": lambda: MultiplicativeAttention(),
    "additive": lambda: AdditiveAttention(units=5, use_bias=True),
}

CELLS = {
    "lstm": lambda: keras.layers.LSTMCell(H),
    "gru": lambda: keras.layers.GRUCell(H),
    "simple_rnn": lambda: keras.layers.SimpleRNNCell(H),
    "stacked": lambda: keras.layers.StackedRNNCells(
        [keras.layers.LSTMCell(H), keras.layers.GRUCell(H)]
    ),
}


def to_np(x):
    return ops.convert_to_numpy(x).astype(np.float64)


def weights_of(layer):
    return {w.path.split("/")[-1]: to_np(w) for w in layer.weights}


def random_mask(rng, shape, keep_first=True):
    mask = rng.random(shape) < 0.7
    if keep_first:
        mask[:, 0] = True
    return mask


# ----------------------------------------------------------------------------
# Independent numpy references.
def np_attention(layer, q, memory, mask):
    """Context (b, D) and weights (b, S) of one query step (b, H)."""
    w = weights_of(layer)
    if isinstance(layer, DotAttention):
        scores = np.einsum("bh,bsh->bs", q, memory)
    elif isinstance(layer, MultiplicativeAttention):
        scores = np.einsum("bh,hd,bsd->bs", q, w["kernel"], memory)
    else:
        hidden = (
            memory @ w["key_kernel"]
            + (q @ w["query_kernel"])[:, None, :]
            + w["bias"]
        )
        scores = np.tanh(hidden) @ w["score_kernel"]
    scores = np.where(mask, scores, -np.inf)
    row_max = np.max(scores, axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exps = np.where(mask, np.exp(scores - row_max), 0.0)
    total = exps.sum(-1, keepdims=True)
    weights = exps / np.where(total > 0, total, 1.0)
    return np.einsum("bs,bsd->bd", weights, memory), weights


def np_simple_rnn(cell, x, h):
    w = weights_of(cell)
    return np.tanh(x @ w["kernel"] + h @ w["recurrent_kernel"] + w["bias"])


def np_decode(wrapper, x, memory, memory_mask, x_mask, h0):
    """The wrapper's equations, step by step, for a SimpleRNNCell."""
    batch, steps, _ = x.shape
    attention_size = wrapper.attention_size(memory.shape[-1])
    h = h0
    a = np.zeros((batch, attention_size))
    outputs, alignments = [], []
    for t in range(steps):
        if wrapper.wiring == "bahdanau":
            c, alpha = np_attention(wrapper.attention, h, memory, memory_mask)
            new_h = np_simple_rnn(
                wrapper.cell, np.concatenate([x[:, t], c], -1), h
            )
        else:
            inputs = x[:, t]
            if wrapper.feeds_attention:
                inputs = np.concatenate([inputs, a], -1)
            new_h = np_simple_rnn(wrapper.cell, inputs, h)
            c, alpha = np_attention(
                wrapper.attention, new_h, memory, memory_mask
            )
        if wrapper.attention_layer is not None:
            kernel = weights_of(wrapper.attention_layer)["kernel"]
            new_a = np.tanh(np.concatenate([c, new_h], -1) @ kernel)
        else:
            new_a = c
        out = new_a if wrapper.output_attention else new_h
        keep = x_mask[:, t : t + 1]
        outputs.append(np.where(keep, out, 0.0))
        alignments.append(np.where(keep, alpha, 0.0))
        h = np.where(keep, new_h, h)
        a = np.where(keep, new_a, a)
    return np.stack(outputs, 1), np.stack(alignments, 1), h, a


WIRING_OPTIONS = [
    dict(wiring="luong"),
    dict(wiring="luong", attention_layer_size=5),
    dict(wiring="luong", attention_layer_size=5, output_attention=False),
    dict(wiring="luong", input_feeding=False, attention_layer_size=5),
    dict(wiring="bahdanau"),
    dict(wiring="bahdanau", attention_layer_size=5),
    dict(wiring="bahdanau", output_attention=False),
]


@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
@pytest.mark.parametrize("options", WIRING_OPTIONS, ids=str)
def test_attention_rnn_matches_numpy_reference(attention, options):
    rng = np.random.default_rng(0)
    batch, steps, source = 3, 4, 5
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    h0 = rng.normal(size=(batch, H)).astype("float32")
    memory_mask = random_mask(rng, (batch, source))
    memory_mask[2] = False  # a memory with nothing to attend to
    x_mask = random_mask(rng, (batch, steps))
    wrapper = AttentionWrapper(
        keras.layers.SimpleRNNCell(
            H, bias_initializer=keras.initializers.RandomNormal(seed=1)
        ),
        ATTENTIONS[attention](),
        **options,
    )
    rnn = AttentionRNN(wrapper, return_state=True)
    outputs, alignments, final = rnn(
        x,
        memory,
        initial_state=h0,
        inputs_mask=x_mask,
        memory_mask=memory_mask,
    )
    ref_out, ref_align, ref_h, ref_a = np_decode(
        wrapper, x, memory, memory_mask, x_mask, h0
    )
    np.testing.assert_allclose(to_np(outputs), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_np(alignments), ref_align, atol=1e-5)
    np.testing.assert_allclose(to_np(final["cell_state"][0]), ref_h, atol=1e-5)
    np.testing.assert_allclose(to_np(final["attention"]), ref_a, atol=1e-5)
    # Kept source positions of a kept step sum to one, masked ones are 0.
    align = to_np(alignments)
    masked = ~np.broadcast_to(memory_mask[:, None], align.shape)
    assert np.all(align[masked] == 0)
    sums = align.sum(-1)
    expected = x_mask & memory_mask.any(-1)[:, None]
    np.testing.assert_allclose(sums, expected.astype(float), atol=1e-5)


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    batch=st.integers(1, 3),
    steps=st.integers(1, 4),
    source=st.integers(1, 4),
    wiring=st.sampled_from(["luong", "bahdanau"]),
)
def test_numpy_reference_over_shapes_and_masks(
    seed, batch, steps, source, wiring
):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    h0 = rng.normal(size=(batch, H)).astype("float32")
    memory_mask = rng.random((batch, source)) < 0.7
    x_mask = rng.random((batch, steps)) < 0.7
    wrapper = AttentionWrapper(
        keras.layers.SimpleRNNCell(H),
        AdditiveAttention(units=3, use_bias=True),
        attention_layer_size=2,
        wiring=wiring,
    )
    outputs, alignments, final = AttentionRNN(wrapper, return_state=True)(
        x,
        memory,
        initial_state=h0,
        inputs_mask=x_mask,
        memory_mask=memory_mask,
    )
    ref_out, ref_align, ref_h, _ = np_decode(
        wrapper, x, memory, memory_mask, x_mask, h0
    )
    np.testing.assert_allclose(to_np(outputs), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_np(alignments), ref_align, atol=1e-5)
    np.testing.assert_allclose(to_np(final["cell_state"][0]), ref_h, atol=1e-5)


# ----------------------------------------------------------------------------
# Sequence mode == step-wise mode without input feeding.
@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_without_input_feeding_equals_sequence_mode(cell, attention):
    rng = np.random.default_rng(1)
    batch, steps, source = 3, 5, 4
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    memory_mask = random_mask(rng, (batch, source))
    x_mask = np.ones((batch, steps), bool)
    x_mask[0, 3:] = False  # trailing padding, as Keras masks have
    x_mask[1, 4:] = False
    wrapper = AttentionWrapper(
        CELLS[cell](),
        ATTENTIONS[attention](),
        attention_layer_size=6,
        input_feeding=False,
    )
    initial = wrapper.cell.get_initial_state(batch_size=batch)
    initial = [
        ops.convert_to_tensor(rng.normal(size=s.shape).astype("float32"))
        for s in initial
    ]
    outputs, alignments = AttentionRNN(wrapper)(
        x,
        memory,
        initial_state=initial,
        inputs_mask=x_mask,
        memory_mask=memory_mask,
    )
    # The same cell and layers, in sequence mode.
    decoder = keras.layers.RNN(wrapper.cell, return_sequences=True)
    decoded = decoder(x, initial_state=initial, mask=x_mask)
    context, weights = wrapper.attention(
        decoded, memory, query_mask=x_mask, value_mask=memory_mask
    )
    attentional = wrapper.attention_layer(context, decoded)
    kept = x_mask
    np.testing.assert_allclose(
        to_np(outputs)[kept], to_np(attentional)[kept], atol=1e-5
    )
    np.testing.assert_allclose(to_np(alignments), to_np(weights), atol=1e-5)


# ----------------------------------------------------------------------------
# The single-step call.
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
@pytest.mark.parametrize("cell", sorted(CELLS))
def test_stepping_equals_attention_rnn(cell, wiring):
    rng = np.random.default_rng(2)
    batch, steps, source = 2, 4, 3
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    memory_mask = np.array([[True, True, False], [True, True, True]])
    wrapper = AttentionWrapper(
        CELLS[cell](),
        AdditiveAttention(units=5),
        attention_layer_size=5,
        wiring=wiring,
    )
    template = wrapper.cell.get_initial_state(batch_size=batch)
    initial = keras.tree.map_structure(
        lambda s: ops.convert_to_tensor(
            rng.normal(size=s.shape).astype("float32")
        ),
        template,
    )
    outputs, alignments, final = AttentionRNN(wrapper, return_state=True)(
        x, memory, initial_state=initial, memory_mask=memory_mask
    )
    state = wrapper.get_initial_state(
        memory, memory_mask, cell_state=initial
    )
    for t in range(steps):
        out, state, weights = wrapper.step(x[:, t], state)
        np.testing.assert_allclose(
            to_np(out), to_np(outputs[:, t]), atol=1e-5
        )
        np.testing.assert_allclose(
            to_np(weights), to_np(alignments[:, t]), atol=1e-5
        )
    for got, want in zip(
        keras.tree.flatten(state["cell_state"]),
        keras.tree.flatten(final["cell_state"]),
    ):
        np.testing.assert_allclose(to_np(got), to_np(want), atol=1e-5)
    # The memory (zeros at masked positions), keys and mask travel
    # unchanged in the state.
    np.testing.assert_array_equal(
        to_np(state["memory"]), np.where(memory_mask[..., None], memory, 0.0)
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(state["memory_mask"]), memory_mask
    )


@pytest.mark.parametrize("cell", ["lstm", "gru", "stacked"])
def test_bahdanau_query_is_the_previous_cell_output(cell):
    """The first query is `h` of the initial state (the top cell's `h` for
    a stack), not `c` nor a lower cell's state."""
    rng = np.random.default_rng(12)
    wrapper = AttentionWrapper(
        CELLS[cell](), MultiplicativeAttention(), wiring="bahdanau"
    )
    memory = rng.normal(size=(2, 3, D)).astype("float32")
    template = wrapper.cell.get_initial_state(batch_size=2)
    initial = keras.tree.map_structure(
        lambda s: rng.normal(size=s.shape).astype("float32"), template
    )
    h0 = initial[-1][0] if cell == "stacked" else initial[0]
    state = wrapper.get_initial_state(memory, cell_state=initial)
    x = rng.normal(size=(2, E)).astype("float32")
    _, _, weights = wrapper.step(x, state)
    _, expected = np_attention(
        wrapper.attention, h0, memory, np.ones((2, 3), bool)
    )
    np.testing.assert_allclose(to_np(weights), expected, atol=1e-5)


def test_keys_are_projected_once_per_memory():
    rng = np.random.default_rng(3)
    attention = AdditiveAttention(units=5)
    wrapper = AttentionWrapper(keras.layers.GRUCell(H), attention)
    calls = []
    original = attention.project_key

    def counting_project_key(key):
        calls.append(key.shape)
        return original(key)

    attention.project_key = counting_project_key
    x = rng.normal(size=(2, 6, E)).astype("float32")
    memory = rng.normal(size=(2, 3, D)).astype("float32")
    AttentionRNN(wrapper)(x, memory)
    assert len(calls) == 1
    state = wrapper.get_initial_state(memory)
    for t in range(6):
        _, state, _ = wrapper.step(x[:, t], state)
    assert len(calls) == 2


def test_initial_attention_and_extra_state_entries_pass_through():
    rng = np.random.default_rng(4)
    wrapper = AttentionWrapper(
        keras.layers.SimpleRNNCell(H), MultiplicativeAttention()
    )
    memory = rng.normal(size=(2, 3, D)).astype("float32")
    a0 = rng.normal(size=(2, D)).astype("float32")
    state = wrapper.get_initial_state(memory, attention=a0)
    state["step"] = ops.zeros((2,), "int32")
    x = rng.normal(size=(2, E)).astype("float32")
    out, new_state, _ = wrapper.step(x, state)
    assert "step" in new_state
    # Input feeding: the first cell input is [x; a0].
    h = np_simple_rnn(
        wrapper.cell, np.concatenate([x, a0], -1), np.zeros((2, H))
    )
    c, _ = np_attention(wrapper.attention, h, memory, np.ones((2, 3), bool))
    np.testing.assert_allclose(to_np(out), c, atol=1e-5)


# ----------------------------------------------------------------------------
# Masks.
@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    steps=st.integers(1, 5),
    wiring=st.sampled_from(["luong", "bahdanau"]),
)
def test_padded_target_steps_change_nothing(seed, steps, wiring):
    """A sequence with padded steps equals the sequence without them."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, steps, E)).astype("float32")
    memory = rng.normal(size=(1, 3, D)).astype("float32")
    x_mask = rng.random((1, steps)) < 0.6
    wrapper = AttentionWrapper(
        keras.layers.LSTMCell(H),
        MultiplicativeAttention(),
        attention_layer_size=5,
        wiring=wiring,
    )
    rnn = AttentionRNN(wrapper, return_state=True)
    outputs, alignments, final = rnn(x, memory, inputs_mask=x_mask)
    outputs, alignments = to_np(outputs), to_np(alignments)
    kept = x_mask[0]
    assert np.all(outputs[0, ~kept] == 0) and np.all(alignments[0, ~kept] == 0)
    if kept.any():
        packed, packed_align, packed_final = rnn(x[:, kept], memory)
        np.testing.assert_allclose(
            outputs[0, kept], to_np(packed)[0], atol=1e-5
        )
        np.testing.assert_allclose(
            alignments[0, kept], to_np(packed_align)[0], atol=1e-5
        )
    else:
        packed_final = wrapper.get_initial_state(memory)
    for got, want in zip(
        keras.tree.flatten([final["cell_state"], final["attention"]]),
        keras.tree.flatten(
            [packed_final["cell_state"], packed_final["attention"]]
        ),
    ):
        np.testing.assert_allclose(to_np(got), to_np(want), atol=1e-5)


@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_masked_source_positions_are_ignored(wiring):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4, E)).astype("float32")
    memory = rng.normal(size=(2, 5, D)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 0]], bool)
    other = np.where(memory_mask[..., None], memory, 100.0).astype("float32")
    wrapper = AttentionWrapper(
        keras.layers.GRUCell(H), AdditiveAttention(4), wiring=wiring
    )
    rnn = AttentionRNN(wrapper)
    out1, align1 = rnn(x, memory, memory_mask=memory_mask)
    out2, align2 = rnn(x, other, memory_mask=memory_mask)
    np.testing.assert_allclose(to_np(out1), to_np(out2), atol=1e-6)
    np.testing.assert_allclose(to_np(align1), to_np(align2), atol=1e-6)
    masked = ~np.broadcast_to(memory_mask[:, None], (2, 4, 5))
    assert np.all(to_np(align1)[masked] == 0)


def _keras_mask_model(wiring="luong", cell="lstm", attention="multiplicative"):
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    enc = keras.layers.Embedding(12, E, mask_zero=True)(source)
    memory = keras.layers.GRU(D, return_sequences=True)(enc)
    dec = keras.layers.Embedding(12, E, mask_zero=True)(target)
    outputs, alignments = AttentionRNN(
        AttentionWrapper(
            CELLS[cell](),
            ATTENTIONS[attention](),
            attention_layer_size=5,
            wiring=wiring,
        )
    )(dec, memory)
    logits = keras.layers.Dense(12)(outputs)
    return keras.Model([source, target], [logits, alignments])


def test_keras_masks_fill_both_masks():
    model = _keras_mask_model()
    src = np.array([[3, 4, 5, 0, 0], [6, 7, 8, 9, 2]])
    tgt = np.array([[1, 2, 0], [3, 4, 5]])
    _, alignments = model([src, tgt])
    alignments = to_np(alignments)
    assert np.all(alignments[0, :, 3:] == 0)
    assert np.all(alignments[0, 2] == 0)  # padded target step
    np.testing.assert_allclose(alignments[0, :2].sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(alignments[1].sum(-1), 1.0, atol=1e-5)


def test_padded_target_steps_do_not_change_the_loss():
    model = _keras_mask_model(wiring="bahdanau")
    logits_model = keras.Model(model.inputs, model.outputs[0])
    logits_model.compile(
        "sgd",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=RUN_EAGERLY,
    )
    rng = np.random.default_rng(6)
    src = rng.integers(1, 12, size=(4, 5))
    tgt = rng.integers(1, 12, size=(4, 4))
    tgt[:, 2:] = 0
    labels = rng.integers(1, 12, size=(4, 4))
    other_labels = labels.copy()
    other_labels[:, 2:] = rng.integers(1, 12, size=(4, 2))
    loss = logits_model.evaluate([src, tgt], labels, verbose=0)
    other_loss = logits_model.evaluate([src, tgt], other_labels, verbose=0)
    assert loss == pytest.approx(other_loss, rel=1e-6)
    # ...and the loss is the mean over the kept steps only.
    logits = to_np(logits_model([src, tgt]))[:, :2]
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, labels[:, :2, None], -1)
    assert loss == pytest.approx(nll.mean(), rel=1e-4)


# ----------------------------------------------------------------------------
# Training.
def _train_model(cell, attention, wiring, memory_from_encoder=True):
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    enc = keras.layers.Embedding(12, E, mask_zero=True, name="src_emb")(source)
    encoder = keras.layers.LSTM(D, return_sequences=True, name="encoder")
    memory = encoder(enc)
    dec = keras.layers.Embedding(12, E, mask_zero=True)(target)
    outputs, _ = AttentionRNN(
        AttentionWrapper(
            cell, attention, attention_layer_size=6, wiring=wiring
        )
    )(dec, memory)
    logits = keras.layers.Dense(12)(outputs)
    model = keras.Model([source, target], logits)
    model.compile(
        keras.optimizers.Adam(0.05),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=RUN_EAGERLY,  # graph mode: test_fit_in_graph_mode
    )
    return model


def _copy_task(rng, n=8):
    src = rng.integers(2, 12, size=(n, 4))
    src[: n // 2, 3] = 0
    tgt_in = np.concatenate([np.ones((n, 1), int), src[:, :-1]], 1)
    tgt_in[src == 0] = 0
    return src, tgt_in, src


@pytest.mark.slow
@pytest.mark.parametrize(
    "cell,attention,wiring",
    [
        ("lstm", "additive", "luong"),
        ("gru", "dot", "bahdanau"),
        ("simple_rnn", "multiplicative", "luong"),
        ("stacked", "additive", "bahdanau"),
        ("dropout_lstm", "multiplicative", "bahdanau"),
    ],
)
def test_each_cell_and_attention_trains_with_fit(cell, attention, wiring):
    keras.utils.set_random_seed(0)
    if cell == "dropout_lstm":
        rnn_cell = keras.layers.LSTMCell(
            H, dropout=0.2, recurrent_dropout=0.2, seed=1
        )
    else:
        rnn_cell = CELLS[cell]()
    model = _train_model(rnn_cell, ATTENTIONS[attention](), wiring)
    src, tgt_in, labels = _copy_task(np.random.default_rng(7))
    before = [to_np(w) for w in model.trainable_weights]
    history = model.fit(
        [src, tgt_in], labels, epochs=6, batch_size=8, verbose=0
    )
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]
    after = [to_np(w) for w in model.trainable_weights]
    assert all(np.any(a != b) for a, b in zip(after, before))


@pytest.mark.slow
def test_fit_in_graph_mode():
    from keras.src.trainers.trainer import model_supports_jit

    keras.utils.set_random_seed(0)
    model = _train_model(
        keras.layers.LSTMCell(H), AdditiveAttention(4), "luong"
    )
    # The loop has a known trip count on every backend (TensorFlow: a
    # bounded while loop): XLA may compile it (jit_compile="auto").
    assert model_supports_jit(model)
    model.compile(
        keras.optimizers.Adam(0.05),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=False,
    )
    src, tgt_in, labels = _copy_task(np.random.default_rng(8))
    history = model.fit(
        [src, tgt_in], labels, epochs=5, batch_size=4, verbose=0
    )
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


@pytest.mark.slow
@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="XLA around TensorFlow's graph (JAX always compiles with XLA: "
    "its fit tests run jitted)",
)
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_xla_fit_matches_fit_without_xla(wiring):
    """`jit_compile=True` trains a masked `AttentionRNN` (TensorFlow: the
    gradient of its bounded while loop compiles) with the same steps."""
    src, tgt_in, labels = _copy_task(np.random.default_rng(3))
    runs = []
    for jit in (False, True):
        keras.utils.set_random_seed(0)
        model = _train_model(
            keras.layers.LSTMCell(H), AdditiveAttention(4), wiring
        )
        model.compile(
            keras.optimizers.Adam(0.05),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit,
        )
        assert model.jit_compile is jit
        history = model.fit(
            [src, tgt_in], labels, epochs=3, batch_size=4, verbose=0,
            shuffle=False,
        )
        runs.append((history.history["loss"], model.get_weights()))
    (losses, weights), (xla_losses, xla_weights) = runs
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(xla_losses, losses, rtol=1e-4)
    for a, b in zip(weights, xla_weights):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-5)


@pytest.mark.slow
def test_gradients_reach_the_encoder_through_the_memory():
    """The decoder starts from zeros: only the memory links it to the
    encoder."""
    keras.utils.set_random_seed(1)
    model = _train_model(
        keras.layers.GRUCell(H), MultiplicativeAttention(), "bahdanau"
    )
    encoder = model.get_layer("encoder")
    src_emb = model.get_layer("src_emb")
    before = [to_np(w) for w in encoder.weights + src_emb.weights]
    src, tgt_in, labels = _copy_task(np.random.default_rng(9))
    model.fit([src, tgt_in], labels, epochs=1, batch_size=8, verbose=0)
    after = [to_np(w) for w in encoder.weights + src_emb.weights]
    for a, b in zip(after, before):
        assert np.all(np.isfinite(a)) and np.any(a != b)


@pytest.mark.tf_only
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
def test_memory_gradient_matches_finite_differences(wiring):
    import tensorflow as tf

    rng = np.random.default_rng(10)
    wrapper = AttentionWrapper(
        keras.layers.GRUCell(H, dtype="float64"),
        AdditiveAttention(4, dtype="float64"),
        attention_layer_size=3,
        wiring=wiring,
        dtype="float64",
    )
    rnn = AttentionRNN(wrapper, dtype="float64")
    x = tf.constant(rng.normal(size=(1, 3, E)))
    memory = tf.Variable(rng.normal(size=(1, 3, D)))
    probe = rng.normal(size=(1, 3, 3))

    def loss_fn():
        outputs, _ = rnn(x, memory)
        return tf.reduce_sum(outputs * probe)

    with tf.GradientTape() as tape:
        loss = loss_fn()
    grad = tape.gradient(loss, memory).numpy()
    assert np.any(grad != 0)
    eps = 1e-6
    base = memory.numpy()
    numeric = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            shifted = base.copy()
            shifted[idx] += sign * eps
            memory.assign(shifted)
            numeric[idx] += sign * float(loss_fn()) / (2 * eps)
    memory.assign(base)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


def test_attention_dropout_drops_weights_once_per_step():
    """Each training output is the context of the weights with some source
    positions dropped and the others scaled by 1 / (1 - rate)."""
    rng = np.random.default_rng(11)
    batch, steps, source, rate = 64, 2, 3, 0.5
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    wrapper = AttentionWrapper(
        keras.layers.GRUCell(H),
        MultiplicativeAttention(dropout=rate, seed=3),
        input_feeding=False,  # the cell does not see the dropped context
    )
    rnn = AttentionRNN(wrapper)
    plain, plain_align = rnn(x, memory)
    outputs, alignments = rnn(x, memory, training=True)
    outputs, alignments = to_np(outputs), to_np(alignments)
    np.testing.assert_allclose(alignments, to_np(plain_align), atol=1e-6)
    np.testing.assert_allclose(
        to_np(plain),
        np.einsum("bts,bsd->btd", alignments, memory),
        atol=1e-5,
    )
    masks = np.array(list(np.ndindex(*(2,) * source)), dtype=np.float64)
    # Contexts of all 2**S dropout masks: (batch, steps, 2**S, D).
    candidates = np.einsum(
        "bts,ms,bsd->btmd", alignments, masks / (1 - rate), memory
    )
    errors = np.abs(candidates - outputs[:, :, None]).max(-1)
    best = errors.argmin(-1)
    assert np.all(errors.min(-1) < 1e-4)
    kept = masks[best].mean()
    assert 0.35 < kept < 0.65
    # Different masks at different steps and rows.
    assert len(np.unique(best)) > 4


def test_attention_rnn_dropout_equals_stepwise_dropout_with_the_same_masks():
    """AttentionRNN draws all steps' attention dropout masks before its
    loop with `draw_dropout_mask`; `step` with those masks gives the same
    outputs, with input feeding (the cell sees the dropped context)."""
    rng = np.random.default_rng(13)
    batch, steps, source = 3, 4, 5
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    memory_mask = random_mask(rng, (batch, source))
    attention = AdditiveAttention(4, dropout=0.5, seed=7)
    wrapper = AttentionWrapper(
        keras.layers.GRUCell(H), attention, attention_layer_size=5
    )
    rnn = AttentionRNN(wrapper)
    rnn.build(x.shape, memory.shape)
    seed_state = to_np(attention.seed_generator.state)
    outputs, alignments = rnn(
        x, memory, memory_mask=memory_mask, training=True
    )
    attention.seed_generator.state.assign(seed_state.astype("uint32"))
    masks = attention.draw_dropout_mask((batch, steps, source))
    state = wrapper.get_initial_state(memory, memory_mask)
    for t in range(steps):
        out, state, weights = wrapper.step(
            x[:, t], state, training=True, dropout_mask=masks[:, t]
        )
        np.testing.assert_allclose(
            to_np(out), to_np(outputs[:, t]), atol=1e-5
        )
        np.testing.assert_allclose(
            to_np(weights), to_np(alignments[:, t]), atol=1e-5
        )
    # The masks did act: without dropout the outputs differ.
    plain, _ = rnn(x, memory, memory_mask=memory_mask)
    assert not np.allclose(to_np(plain), to_np(outputs), atol=1e-3)


# ----------------------------------------------------------------------------
# Masked source positions never influence the result, whatever is stored
# there; float masks are refused.
@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_memory_at_masked_positions_changes_nothing(
    attention, wiring, bad
):
    rng = np.random.default_rng(14)
    x = rng.normal(size=(3, 4, E)).astype("float32")
    memory = rng.normal(size=(3, 5, D)).astype("float32")
    memory_mask = np.array(
        [[1, 1, 1, 1, 1], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], bool
    )
    clean = np.where(memory_mask[..., None], memory, 0.0).astype("float32")
    dirty = np.where(memory_mask[..., None], memory, bad).astype("float32")
    wrapper = AttentionWrapper(
        keras.layers.LSTMCell(H),
        ATTENTIONS[attention](),
        attention_layer_size=5,
        wiring=wiring,
    )
    rnn = AttentionRNN(wrapper)

    def run(x, memory):
        return rnn(x, memory, memory_mask=memory_mask)

    # Both through the same differentiated program: the results must be
    # bit for bit the same.
    (outputs, alignments), clean_grads = gradients(run, x, clean)
    (dirty_outputs, dirty_alignments), grads = gradients(run, x, dirty)
    np.testing.assert_array_equal(to_np(grads[0]), to_np(clean_grads[0]))
    np.testing.assert_array_equal(to_np(dirty_outputs), to_np(outputs))
    np.testing.assert_array_equal(to_np(dirty_alignments), to_np(alignments))
    for grad in grads:
        assert np.all(np.isfinite(to_np(grad)))
    assert np.all(to_np(grads[1])[~memory_mask] == 0.0)
    # Step-wise: the memory is prepared (zeroed) once.
    state = wrapper.get_initial_state(dirty, memory_mask)
    assert np.all(np.isfinite(to_np(state["memory"])))
    assert np.all(np.isfinite(to_np(state["keys"])))
    for t in range(4):
        out, state, _ = wrapper.step(x[:, t], state)
        np.testing.assert_allclose(
            to_np(out), to_np(outputs[:, t]), atol=1e-5
        )


def test_float_masks_are_refused():
    wrapper = AttentionWrapper(keras.layers.GRUCell(H), DotAttention())
    rnn = AttentionRNN(wrapper)
    x = np.zeros((2, 3, E), "float32")
    memory = np.zeros((2, 5, D), "float32")
    half = np.full((2, 5), 0.5, "float32")
    message = r"must be a boolean \(or integer 0/1\) mask.*dtype=float32"
    with pytest.raises(ValueError, match="`memory_mask` " + message):
        wrapper.get_initial_state(memory, half)
    with pytest.raises(ValueError, match="`memory_mask` " + message):
        rnn(x, memory, memory_mask=half)
    with pytest.raises(ValueError, match="`inputs_mask` " + message):
        rnn(x, memory, inputs_mask=np.ones((2, 3), "float32"))
    # Integer 0/1 masks are masks.
    int_mask = np.array([[1, 1, 0, 0, 1], [1, 1, 1, 1, 1]], "int32")
    got = rnn(x, memory, memory_mask=int_mask)
    want = rnn(x, memory, memory_mask=int_mask.astype(bool))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(to_np(g), to_np(w))


# ----------------------------------------------------------------------------
# The hoisted input projection of a plain LSTM cell.


class _SubclassedLSTMCell(keras.layers.LSTMCell):
    """Not a plain `LSTMCell`: `AttentionRNN` runs it through its call."""


@pytest.mark.parametrize(
    "wiring, feeding", [("luong", True), ("luong", False), ("bahdanau", False)]
)
def test_hoisted_input_projection_matches_the_cell_call(wiring, feeding):
    """A plain `LSTMCell`'s input projection is computed before the loop;
    outputs, alignments, final state and gradients (w.r.t. inputs and
    memory) are those of the cell's own call, padded steps included."""
    from keras_attention.rnn.rnn_cells import can_project_inputs

    rng = np.random.default_rng(11)
    x = rng.normal(size=(3, 5, E)).astype("float32")
    memory = rng.normal(size=(3, 6, D)).astype("float32")
    inputs_mask = random_mask(rng, (3, 5))
    memory_mask = random_mask(rng, (3, 6))
    results = []
    for cell_cls in (keras.layers.LSTMCell, _SubclassedLSTMCell):
        keras.utils.set_random_seed(0)
        layer = AttentionRNN(
            AttentionWrapper(
                cell_cls(H), AdditiveAttention(5), attention_layer_size=6,
                wiring=wiring, input_feeding=feeding,
            ),
            return_state=True,
        )
        layer(x, memory)  # build
        assert can_project_inputs(layer.wrapper.cell, True) is (
            cell_cls is keras.layers.LSTMCell
        )
        if results:
            layer.set_weights(results[0][0])

        def run(x_, memory_, layer=layer):
            out, align, final = layer(
                x_, memory_, inputs_mask=inputs_mask,
                memory_mask=memory_mask, training=True,
            )
            return out, align, final["cell_state"], final["attention"]

        outputs, grads = gradients(run, x, memory)
        results.append((layer.get_weights(), outputs, grads))
    (_, ours, our_grads), (_, ref, ref_grads) = results
    for a, b in zip(keras.tree.flatten(ours), keras.tree.flatten(ref)):
        np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-5, atol=1e-6)
    for a, b in zip(our_grads, ref_grads):
        np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-4, atol=1e-6)


def test_lstm_dropout_is_not_hoisted():
    from keras_attention.rnn.rnn_cells import can_project_inputs

    assert can_project_inputs(keras.layers.LSTMCell(2, dropout=0.5), False)
    assert not can_project_inputs(keras.layers.LSTMCell(2, dropout=0.5), True)
    assert not can_project_inputs(
        keras.layers.LSTMCell(2, recurrent_dropout=0.5), True
    )
    assert not can_project_inputs(keras.layers.GRUCell(2), False)
    assert not can_project_inputs(_SubclassedLSTMCell(2), False)
