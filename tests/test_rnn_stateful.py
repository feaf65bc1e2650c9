"""The stateful-attention contract of `BaseAttention`, end to end.

A small stateful layer defined here (a dot score plus a learned multiple
of the previous step's weights, with the cumulative weights carried too)
is checked against a numpy reference of its recurrence: one step at a
time, inside `AttentionWrapper` and `AttentionRNN` (step-wise equals the
scan, padded target steps keep the alignment state), in `fit` and through
a `.keras` round trip. Stateless layers keep their two outputs and refuse
an alignment state.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AttentionRNN
from keras_attention import AttentionWrapper
from keras_attention import DotAttention
from keras_attention import MultiplicativeAttention
from keras_attention import StatefulAttention
from keras_attention.ops.masking import masked_softmax
from keras_attention.ops.scores import dot_score
from tests.layer_harness import to_np

E, D, H = 3, 4, 4
GAIN = 1.5


@keras.saving.register_keras_serializable(package="keras_attention_tests")
class PreviousWeightsAttention(StatefulAttention, DotAttention):
    """`e_i = q . k_i + g * alpha_prev_i`, with a learned gain `g`."""

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        self.gain = self.add_weight(
            name="gain",
            shape=(),
            initializer=keras.initializers.Constant(GAIN),
            dtype=self.dtype,
        )

    def initial_alignment_state(self, memory_mask):
        zeros = ops.zeros(ops.shape(memory_mask), "float32")
        return {"weights": zeros, "cumulative": zeros}

    def stateful_alignment(
        self, query, projected_key, value_mask, alignment_state, training=None
    ):
        scores = dot_score(ops.expand_dims(query, 1), projected_key)[:, 0]
        previous = ops.cast(alignment_state["weights"], scores.dtype)
        scores = scores + ops.cast(self.gain, scores.dtype) * previous
        weights = masked_softmax(scores, value_mask)
        return weights, {
            "weights": weights,
            "cumulative": alignment_state["cumulative"] + weights,
        }


def np_softmax(scores, mask):
    scores = np.where(mask, scores, -np.inf)
    top = np.max(scores, -1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(mask, np.exp(scores - top), 0.0)
    total = e.sum(-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def np_step(gain, query, memory, mask, previous):
    """Context, weights and next state of one step of the recurrence."""
    scores = np.einsum("bd,bsd->bs", query, memory) + gain * previous[0]
    weights = np_softmax(scores, mask)
    context = np.einsum("bs,bsd->bd", weights, memory)
    return context, weights, (weights, previous[1] + weights)


def gain_of(layer):
    return float(to_np(layer.gain))


def test_one_layer_step_by_step_matches_numpy():
    rng = np.random.default_rng(0)
    layer = PreviousWeightsAttention()
    memory = rng.normal(size=(3, 5, D)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], bool)
    queries = rng.normal(size=(4, 3, D)).astype("float32")
    assert layer.stateful and not DotAttention().stateful
    prepared = None
    state = None
    ref = (np.zeros((3, 5)), np.zeros((3, 5)))
    for t, q in enumerate(queries):
        if state is None:
            # The first call fills in the initial state.
            context, weights, state = layer(q, memory, value_mask=mask)
            prepared = layer.prepare_memory(memory, value_mask=mask)
            for v in prepared["alignment_state"].values():
                np.testing.assert_array_equal(to_np(v), 0.0)
        else:
            context, weights, state = layer.attend(
                q,
                prepared["memory"],
                prepared["keys"],
                value_mask=prepared["memory_mask"],
                alignment_state=state,
            )
        ref_context, ref_weights, ref = np_step(
            gain_of(layer), q, memory * mask[..., None], mask, ref
        )
        np.testing.assert_allclose(to_np(weights), ref_weights, atol=1e-5)
        np.testing.assert_allclose(to_np(context), ref_context, atol=1e-5)
        np.testing.assert_allclose(to_np(state["weights"]), ref[0], atol=1e-5)
        np.testing.assert_allclose(
            to_np(state["cumulative"]), ref[1], atol=1e-5
        )
        assert {k: v.dtype for k, v in state.items()} == {
            k: v.dtype for k, v in prepared["alignment_state"].items()
        }
    # A masked query row keeps its state and gets zero weights.
    query_mask = np.array([True, False, True])
    _, weights, kept = layer.attend(
        queries[0],
        prepared["memory"],
        prepared["keys"],
        query_mask=query_mask,
        value_mask=prepared["memory_mask"],
        alignment_state=state,
    )
    assert np.all(to_np(weights)[1] == 0.0)
    np.testing.assert_array_equal(
        to_np(kept["cumulative"])[1], to_np(state["cumulative"])[1]
    )


def test_stateful_errors_and_stateless_layers_unchanged():
    layer = PreviousWeightsAttention()
    memory = np.zeros((2, 5, D), "float32")
    with pytest.raises(ValueError, match=r"stateful.*query.shape=\(2, 3, 4\)"):
        layer(np.zeros((2, 3, D), "float32"), memory)
    layer = PreviousWeightsAttention()
    layer.build((2, D), memory.shape)
    prepared = layer.prepare_memory(memory)
    with pytest.raises(ValueError, match="alignment_state=None"):
        layer.attend(
            np.zeros((2, D), "float32"), prepared["memory"], prepared["keys"]
        )
    stateless = MultiplicativeAttention()
    assert not stateless.stateful
    assert not hasattr(stateless, "initial_alignment_state")
    outputs = stateless(np.zeros((2, D), "float32"), memory)
    assert len(outputs) == 2
    stateless_memory = stateless.prepare_memory(memory)
    assert sorted(stateless_memory) == ["keys", "memory", "memory_mask"]
    with pytest.raises(TypeError, match="alignment_state"):
        stateless.attend(
            np.zeros((2, D), "float32"),
            stateless_memory["memory"],
            stateless_memory["keys"],
            alignment_state=prepared["alignment_state"],
        )
    wrapper = AttentionWrapper(keras.layers.GRUCell(H), stateless)
    assert "alignment_state" not in wrapper.get_initial_state(memory)


def np_decode(wrapper, x, memory, memory_mask, x_mask):
    """Luong wiring, SimpleRNNCell, input feeding, no attentional layer."""
    w = {v.path.split("/")[-1]: to_np(v) for v in wrapper.cell.weights}
    gain = gain_of(wrapper.attention)
    batch, steps, _ = x.shape
    memory = memory * memory_mask[..., None]
    h = np.zeros((batch, H))
    a = np.zeros((batch, D))
    align = (np.zeros(memory_mask.shape), np.zeros(memory_mask.shape))
    outputs = []
    for t in range(steps):
        inputs = np.concatenate([x[:, t], a], -1)
        new_h = np.tanh(
            inputs @ w["kernel"] + h @ w["recurrent_kernel"] + w["bias"]
        )
        c, alpha, new_align = np_step(gain, new_h, memory, memory_mask, align)
        keep = x_mask[:, t : t + 1]
        outputs.append(np.where(keep, c, 0.0))
        h = np.where(keep, new_h, h)
        a = np.where(keep, c, a)
        align = tuple(np.where(keep, n, o) for n, o in zip(new_align, align))
    return np.stack(outputs, 1), align


def _wrapper():
    return AttentionWrapper(
        keras.layers.SimpleRNNCell(
            H, bias_initializer=keras.initializers.RandomNormal(seed=1)
        ),
        PreviousWeightsAttention(),
    )


def test_attention_rnn_matches_numpy_and_stepping():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 5, E)).astype("float32")
    memory = rng.normal(size=(3, 4, D)).astype("float32")
    memory_mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], bool)
    x_mask = np.array(
        [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 1, 1, 0]], bool
    )
    wrapper = _wrapper()
    rnn = AttentionRNN(wrapper, return_state=True)
    outputs, alignments, final = rnn(
        x, memory, inputs_mask=x_mask, memory_mask=memory_mask
    )
    ref_outputs, ref_align = np_decode(wrapper, x, memory, memory_mask, x_mask)
    np.testing.assert_allclose(to_np(outputs), ref_outputs, atol=1e-5)
    np.testing.assert_allclose(
        to_np(final["alignment_state"]["weights"]), ref_align[0], atol=1e-5
    )
    np.testing.assert_allclose(
        to_np(final["alignment_state"]["cumulative"]), ref_align[1], atol=1e-5
    )
    # The cumulative weights are the sum of the kept steps' alignments.
    np.testing.assert_allclose(
        to_np(final["alignment_state"]["cumulative"]),
        to_np(alignments).sum(1),
        atol=1e-5,
    )
    # Step by step, on the full rows: the same outputs and state.
    state = wrapper.get_initial_state(memory, memory_mask)
    for t in range(5):
        out, state, weights = wrapper.step(x[:, t], state)
        np.testing.assert_allclose(
            to_np(out)[1], to_np(outputs)[1, t], atol=1e-5
        )
        np.testing.assert_allclose(
            to_np(weights)[1], to_np(alignments)[1, t], atol=1e-5
        )
    np.testing.assert_allclose(
        to_np(state["alignment_state"]["cumulative"])[1],
        to_np(final["alignment_state"]["cumulative"])[1],
        atol=1e-5,
    )


def test_padded_steps_keep_the_alignment_state():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 5, E)).astype("float32")
    memory = rng.normal(size=(1, 4, D)).astype("float32")
    x_mask = np.array([[1, 0, 1, 0, 1]], bool)
    rnn = AttentionRNN(_wrapper(), return_state=True)
    _, _, padded = rnn(x, memory, inputs_mask=x_mask)
    _, _, packed = rnn(x[:, x_mask[0]], memory)
    for got, want in zip(
        keras.tree.flatten(padded["alignment_state"]),
        keras.tree.flatten(packed["alignment_state"]),
    ):
        np.testing.assert_allclose(to_np(got), to_np(want), atol=1e-5)


def _model():
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    enc = keras.layers.Embedding(12, E, mask_zero=True)(source)
    memory = keras.layers.GRU(D, return_sequences=True)(enc)
    dec = keras.layers.Embedding(12, E, mask_zero=True)(target)
    rnn = AttentionRNN(
        AttentionWrapper(
            keras.layers.GRUCell(H),
            PreviousWeightsAttention(),
            attention_layer_size=5,
        ),
        return_state=True,
        name="decoder",
    )
    outputs, alignments, final = rnn(dec, memory)
    assert tuple(final["alignment_state"]["weights"].shape) == (None, None)
    logits = keras.layers.Dense(12)(outputs)
    return keras.Model([source, target], [logits, alignments])


@pytest.mark.slow
def test_fit_and_keras_file_round_trip(tmp_path):
    keras.utils.set_random_seed(0)
    model = _model()
    train = keras.Model(model.inputs, model.outputs[0])
    train.compile(
        keras.optimizers.Adam(0.05),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(3)
    src = rng.integers(1, 12, size=(8, 5))
    src[:4, 3:] = 0
    tgt = rng.integers(1, 12, size=(8, 4))
    gain = model.get_layer("decoder").wrapper.attention.gain
    history = train.fit([src, tgt], tgt, epochs=4, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert float(to_np(gain)) != GAIN
    expected = model([src, tgt])
    path = tmp_path / "stateful.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    for got, want in zip(loaded([src, tgt]), expected):
        np.testing.assert_allclose(to_np(got), to_np(want), atol=1e-5)
    attention = loaded.get_layer("decoder").wrapper.attention
    assert type(attention) is PreviousWeightsAttention
    assert float(to_np(attention.gain)) == float(to_np(gain))


class TrainingOnlyFirstPosition(PreviousWeightsAttention):
    """In training, all the weight on source position 0 (a stand-in for
    training-only noise such as monotonic attention's)."""

    def stateful_alignment(
        self, query, projected_key, value_mask, alignment_state, training=None
    ):
        weights, state = super().stateful_alignment(
            query, projected_key, value_mask, alignment_state
        )
        if training:
            first = ops.arange(ops.shape(weights)[1]) == 0
            weights = ops.broadcast_to(
                ops.cast(first, weights.dtype), ops.shape(weights)
            )
        return weights, state


def test_training_reaches_stateful_alignment():
    rng = np.random.default_rng(4)
    query = rng.normal(size=(2, D)).astype("float32")
    memory = rng.normal(size=(2, 3, D)).astype("float32")
    layer = TrainingOnlyFirstPosition()
    _, weights, _ = layer(query, memory, training=True)
    np.testing.assert_array_equal(to_np(weights), [[1, 0, 0], [1, 0, 0]])
    _, weights, _ = layer(query, memory, training=False)
    assert np.all(to_np(weights)[:, 1:] > 0)
