"""The decoders driving a real attentional RNN decoder.

`keras_attention.AttentionWrapper` (LSTM cell, Luong input feeding,
additive attention over a masked memory) gives a nested state
(`cell_state` `[h, c]`, the previous attentional vector, memory, keys,
mask). Beam search must tile it and reorder it with the back-pointers at
every step: each returned hypothesis is re-scored here by running the same
step function on it alone, token by token (teacher forcing), which must
give the same log-probability and attention weights.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import greedy_decode

VOCAB, EMBED, UNITS, SOURCE = 7, 4, 8, 5
START, END = 0, 1


class Decoder:
    def __init__(self):
        keras.utils.set_random_seed(1)
        self.embedding = keras.layers.Embedding(VOCAB, EMBED)
        self.wrapper = keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(UNITS),
            keras_attention.AdditiveAttention(6),
            attention_layer_size=UNITS,
        )
        self.projection = keras.layers.Dense(
            VOCAB, kernel_initializer=keras.initializers.RandomNormal(0, 2.0)
        )
        rng = np.random.default_rng(0)
        self.memory = rng.normal(size=(3, SOURCE, 6)).astype("float32")
        self.mask = np.ones((3, SOURCE), bool)
        self.mask[2, 3:] = False  # a shorter source sentence
        self.embedding.build((None,))
        self.wrapper.build((None, EMBED), (None, SOURCE, 6))
        self.projection.build((None, UNITS))

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


@pytest.fixture(scope="module")
def decoder():
    return Decoder()


def teacher_forced(decoder, b, tokens):
    """Log-probability and attention of `tokens` for sentence `b` alone."""
    state = decoder.initial_state(slice(b, b + 1))
    previous, total, rows = START, 0.0, []
    for token in tokens:
        log_probs, state, weights = decoder.step(
            ops.convert_to_tensor([previous], dtype="int32"), state
        )
        total += float(ops.convert_to_numpy(log_probs)[0, token])
        rows.append(ops.convert_to_numpy(weights)[0])
        previous = token
    return total, np.stack(rows)


def test_every_beam_rescores_exactly_by_teacher_forcing(decoder):
    out = beam_search_decode(
        decoder.step,
        START,
        decoder.initial_state(),
        END,
        max_length=6,
        beam_width=3,
        return_all_beams=True,
    )
    tokens = ops.convert_to_numpy(out["beam_tokens"])
    lengths = ops.convert_to_numpy(out["beam_lengths"])
    log_probs = ops.convert_to_numpy(out["beam_log_probs"])
    attention = ops.convert_to_numpy(out["beam_attention"])
    for b in range(3):
        for i in range(3):
            n = lengths[b, i]
            total, rows = teacher_forced(decoder, b, tokens[b, i, :n])
            np.testing.assert_allclose(log_probs[b, i], total, atol=1e-4)
            np.testing.assert_allclose(attention[b, i, :n], rows, atol=1e-5)
    # The padded source positions of sentence 2 get no attention.
    assert np.all(attention[2, :, :, 3:] == 0.0)
    # Distinct hypotheses per sentence.
    for b in range(3):
        assert len({tuple(t[:n]) for t, n in zip(tokens[b], lengths[b])}) == 3


def test_beam_width_one_equals_greedy_on_attention_rnn(decoder):
    greedy = greedy_decode(
        decoder.step, START, decoder.initial_state(), END, max_length=6
    )
    beam = beam_search_decode(
        decoder.step,
        START,
        decoder.initial_state(),
        END,
        max_length=6,
        beam_width=1,
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(beam["tokens"]),
        ops.convert_to_numpy(greedy["tokens"]),
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(beam["attention"]),
        ops.convert_to_numpy(greedy["attention"]),
        atol=1e-6,
    )


@pytest.mark.tf_only
def test_attention_rnn_beam_search_saved_model(decoder, tmp_path):
    import tensorflow as tf

    class Module(tf.Module):
        def __init__(self, decoder):
            super().__init__()
            self.decoder = decoder
            self.layers = [
                decoder.embedding,
                decoder.wrapper,
                decoder.projection,
            ]

        @tf.function(
            input_signature=[
                tf.TensorSpec((None, None, 6), tf.float32),
                tf.TensorSpec((None, None), tf.bool),
            ]
        )
        def beam(self, memory, mask):
            state = self.decoder.wrapper.get_initial_state(memory, mask)
            lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
            out = beam_search_decode(
                self.decoder.step,
                START,
                state,
                END,
                max_length=lengths + 1,
                beam_width=3,
            )
            return {k: out[k] for k in ("tokens", "lengths", "attention")}

    path = str(tmp_path / "decoder")
    tf.saved_model.save(Module(decoder), path)
    loaded = tf.saved_model.load(path)
    served = loaded.beam(decoder.memory, decoder.mask)
    eager = beam_search_decode(
        decoder.step,
        START,
        decoder.initial_state(),
        END,
        max_length=ops.convert_to_tensor([6, 6, 4]),
        beam_width=3,
    )
    for key in ("tokens", "lengths", "attention"):
        np.testing.assert_allclose(
            served[key].numpy(), ops.convert_to_numpy(eager[key]), atol=1e-5
        )
    assert np.all(served["lengths"].numpy() <= [6, 6, 4])
