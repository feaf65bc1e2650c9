"""The stateful attention layers inside AttentionWrapper, AttentionRNN and
the greedy and beam search decoders.

Live once `BaseAttention` carries the stateful contract (`stateful`,
`alignment_state` in `AttentionWrapper`'s state): skipped before.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import BahdanauMonotonicAttention
from keras_attention import BaseAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongMonotonicAttention
from keras_attention.rnn.attention_rnn import AttentionRNN
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from tests.stateful_helpers import to_np

pytestmark = pytest.mark.skipif(
    not hasattr(BaseAttention, "stateful"),
    reason="AttentionWrapper does not carry alignment states yet",
)

E, D, H = 3, 4, 4  # input, memory and cell sizes

LAYERS = {
    "bahdanau_monotonic": lambda: BahdanauMonotonicAttention(
        5, normalize=True, score_bias_init=-0.5
    ),
    "luong_monotonic": lambda: LuongMonotonicAttention(
        H, scale=True, mode="recursive"
    ),
    "location": lambda: LocationSensitiveAttention(
        5, filters=2, kernel_size=3
    ),
}


@pytest.mark.parametrize("wiring", ["luong", "bahdanau"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_attention_rnn_carries_the_alignment_state(name, wiring):
    rng = np.random.default_rng(4)
    batch, steps, source = 2, 5, 4
    x = rng.normal(size=(batch, steps, E)).astype("float32")
    memory = rng.normal(size=(batch, source, D)).astype("float32")
    memory_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
    x_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    wrapper = AttentionWrapper(
        keras.layers.LSTMCell(H), LAYERS[name](), attention_layer_size=5,
        wiring=wiring,
    )
    outputs, alignments, final = AttentionRNN(wrapper, return_state=True)(
        x, memory, memory_mask=memory_mask, inputs_mask=x_mask
    )
    alignments = to_np(alignments)
    assert np.all(np.isfinite(alignments)) and np.all(alignments >= 0)
    assert np.all(alignments.sum(-1) <= 1 + 1e-5)
    assert np.all(alignments[~memory_mask[:, None].repeat(steps, 1)] == 0)
    assert np.all(alignments[~x_mask] == 0)
    last = np.array([2, 4])  # the last kept target step of each row
    state = final["alignment_state"]
    if name == "location":
        np.testing.assert_allclose(
            to_np(state["weights"]), alignments[[0, 1], last], atol=1e-6
        )
        np.testing.assert_allclose(
            to_np(state["cumulative"]), alignments.sum(1), atol=1e-5
        )
    else:
        np.testing.assert_allclose(
            to_np(state), alignments[[0, 1], last], atol=1e-6
        )
    # Stepping the wrapper by hand gives the same alignments.
    step_state = wrapper.get_initial_state(memory, memory_mask)
    for t in range(3):
        _, step_state, weights = wrapper.step(x[:, t], step_state)
        np.testing.assert_allclose(
            to_np(weights), alignments[:, t], atol=1e-5
        )


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_model_with_stateful_attention_trains_and_round_trips(name, tmp_path):
    keras.utils.set_random_seed(0)
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    enc = keras.layers.Embedding(12, E, mask_zero=True)(source)
    memory = keras.layers.LSTM(D, return_sequences=True)(enc)
    dec = keras.layers.Embedding(12, E, mask_zero=True)(target)
    outputs, _ = AttentionRNN(
        AttentionWrapper(
            keras.layers.LSTMCell(H), LAYERS[name](), attention_layer_size=6
        )
    )(dec, memory)
    model = keras.Model([source, target], keras.layers.Dense(12)(outputs))
    model.compile(
        keras.optimizers.Adam(0.05),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    rng = np.random.default_rng(7)
    src = rng.integers(2, 12, size=(8, 4))
    src[:4, 3] = 0
    tgt = np.concatenate([np.ones((8, 1), int), src[:, :-1]], 1)
    tgt[src == 0] = 0
    history = model.fit([src, tgt], src, epochs=3, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(
        to_np(loaded([src, tgt])), to_np(model([src, tgt])), atol=1e-5
    )


# ----------------------------------------------------------------------------
# Decoders: beam search must re-gather the alignment state with the beams.
VOCAB, EMBED, SOURCE = 7, 4, 5
START, END = 0, 1


class Decoder:
    def __init__(self, name):
        keras.utils.set_random_seed(1)
        self.embedding = keras.layers.Embedding(VOCAB, EMBED)
        self.wrapper = AttentionWrapper(
            keras.layers.LSTMCell(H), LAYERS[name](), attention_layer_size=H
        )
        self.projection = keras.layers.Dense(
            VOCAB, kernel_initializer=keras.initializers.RandomNormal(0, 2.0)
        )
        rng = np.random.default_rng(0)
        self.memory = rng.normal(size=(3, SOURCE, D)).astype("float32")
        self.mask = np.ones((3, SOURCE), bool)
        self.mask[2, 3:] = False
        self.embedding.build((None,))
        self.wrapper.build((None, EMBED), (None, SOURCE, D))
        self.projection.build((None, H))

    def initial_state(self, rows=slice(None)):
        return self.wrapper.get_initial_state(
            ops.convert_to_tensor(self.memory[rows]),
            memory_mask=ops.convert_to_tensor(self.mask[rows]),
        )

    def step(self, tokens, state):
        output, state, weights = self.wrapper.step(
            self.embedding(tokens), state
        )
        return ops.log_softmax(self.projection(output)), state, weights


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_beam_search_regathers_the_alignment_state(name):
    from keras_attention.decoding import beam_search_decode
    from keras_attention.decoding import greedy_decode

    decoder = Decoder(name)
    out = beam_search_decode(
        decoder.step, START, decoder.initial_state(), END, max_length=6,
        beam_width=3, return_all_beams=True,
    )
    tokens = to_np(out["beam_tokens"])
    lengths = to_np(out["beam_lengths"])
    log_probs = to_np(out["beam_log_probs"])
    attention = to_np(out["beam_attention"])
    # Each hypothesis, re-run alone token by token from the initial state,
    # gives the same log-probability and attention: its alignment state
    # followed it through the beam reorderings.
    for b in range(3):
        for i in range(3):
            state = decoder.initial_state(slice(b, b + 1))
            previous, total = START, 0.0
            for t, token in enumerate(tokens[b, i, : lengths[b, i]]):
                step_log_probs, state, weights = decoder.step(
                    ops.convert_to_tensor([previous], dtype="int32"), state
                )
                total += float(to_np(step_log_probs)[0, token])
                np.testing.assert_allclose(
                    attention[b, i, t], to_np(weights)[0], atol=1e-5
                )
                previous = token
            np.testing.assert_allclose(log_probs[b, i], total, atol=1e-4)
    assert np.all(attention[2, :, :, 3:] == 0.0)
    greedy = greedy_decode(
        decoder.step, START, decoder.initial_state(), END, max_length=6
    )
    beam = beam_search_decode(
        decoder.step, START, decoder.initial_state(), END, max_length=6,
        beam_width=1,
    )
    np.testing.assert_array_equal(
        to_np(beam["tokens"]), to_np(greedy["tokens"])
    )
    np.testing.assert_allclose(
        to_np(beam["attention"]), to_np(greedy["attention"]), atol=1e-6
    )


@pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="sigmoid noise is drawn inside AttentionRNN's scan, which JAX's "
    "lax.scan cannot leak random state out of (UnexpectedTracerError): "
    "AttentionRNN would need to draw it before the loop, as it draws the "
    "dropout masks",
)
def test_sigmoid_noise_in_training_inside_attention_rnn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 4, E)).astype("float32")
    memory = rng.normal(size=(2, 5, D)).astype("float32")
    wrapper = AttentionWrapper(
        keras.layers.LSTMCell(H),
        BahdanauMonotonicAttention(5, sigmoid_noise=1.0, sigmoid_noise_seed=1),
        attention_layer_size=H,
    )
    rnn = AttentionRNN(wrapper)
    _, noisy = rnn(x, memory, training=True)
    _, clean = rnn(x, memory, training=False)
    _, clean_again = rnn(x, memory)
    np.testing.assert_array_equal(to_np(clean), to_np(clean_again))
    assert np.abs(to_np(noisy) - to_np(clean)).max() > 1e-3
    assert np.all(np.isfinite(to_np(noisy)))
