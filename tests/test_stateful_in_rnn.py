"""The stateful attention layers inside AttentionWrapper and AttentionRNN.

Live once `BaseAttention` carries the stateful contract (`stateful`,
`alignment_state` in `AttentionWrapper`'s state): skipped before.
"""

import keras
import numpy as np
import pytest

from keras_attention import BahdanauMonotonicAttention
from keras_attention import BaseAttention
from keras_attention import LocationSensitiveAttention
from keras_attention import LuongMonotonicAttention
from keras_attention.attention_rnn import AttentionRNN
from keras_attention.attention_wrapper import AttentionWrapper
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
