"""TFA 0.23 side of `benchmarks.peers`: a worker run in its own venv.

Runs under Python 3.11 with `tensorflow-cpu==2.15.1 tensorflow-addons==0.23.0`
(the Makefile's `bench-peers` target creates that venv; `make test` never
does). It builds the models of TensorFlow Addons' NMT tutorial at the sizes
it is given and answers the commands of `benchmarks.peers` on stdin
(`benchmarks/peers_worker.py`: `setup`, `time NAME`, `quit`), started as
`python -m benchmarks.peers_tfa` in the repository's root.

This file imports only TensorFlow 2.15, TFA, the plain-Python protocol and
`benchmarks.common` (TensorFlow only),
never `keras_attention`.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_addons as tfa  # noqa: E402

from benchmarks.common import sync  # noqa: E402
from benchmarks.peers_worker import serve  # noqa: E402

END_TOKEN = 2
START_TOKEN = 1


class TFASeq2Seq(tf.keras.Model):
    """LSTM encoder, `AttentionWrapper(LSTMCell)` decoder, as TFA's tutorial.

    `attention`: `"luong"` (`LuongAttention(scale=True)`) or `"bahdanau"`
    (`BahdanauAttention(normalize=True)`). The attention layer is TFA's:
    `Dense(units, use_bias=False)` over `[cell_output; context]`.
    """

    def __init__(self, sizes, attention):
        super().__init__()
        vocab, emb, units = sizes["vocab"], sizes["embedding_dim"], sizes[
            "units"
        ]
        self.units = units
        self.source_embedding = tf.keras.layers.Embedding(vocab, emb)
        self.target_embedding = tf.keras.layers.Embedding(vocab, emb)
        self.encoder = tf.keras.layers.LSTM(
            units, return_sequences=True, return_state=True
        )
        if attention == "luong":
            self.mechanism = tfa.seq2seq.LuongAttention(units, scale=True)
        else:
            self.mechanism = tfa.seq2seq.BahdanauAttention(
                units, normalize=True
            )
        self.cell = tfa.seq2seq.AttentionWrapper(
            tf.keras.layers.LSTMCell(units),
            self.mechanism,
            attention_layer_size=units,
        )
        # The end token never wins, so every decode runs to the limit on
        # both sides (untrained weights stop at random places otherwise).
        bias = np.zeros([vocab], "float32")
        bias[END_TOKEN] = -1e4
        self.projection = tf.keras.layers.Dense(
            vocab, bias_initializer=tf.constant_initializer(bias)
        )
        self.decoder = tfa.seq2seq.BasicDecoder(
            self.cell,
            tfa.seq2seq.TrainingSampler(),
            output_layer=self.projection,
        )

    def encode(self, source):
        return self.encoder(self.source_embedding(source))

    def decoder_start(self, source, beam_width=None):
        """`(batch, state)`: the source encoded into the attention's memory
        and the wrapper's initial state from the encoder's, both tiled
        `beam_width` times for beam search (`tfa.seq2seq.tile_batch`)."""
        memory, h, c = self.encode(source)
        if beam_width:
            memory, h, c = (
                tfa.seq2seq.tile_batch(x, beam_width) for x in (memory, h, c)
            )
        self.mechanism.setup_memory(memory)
        state = self.cell.get_initial_state(
            batch_size=tf.shape(memory)[0], dtype=tf.float32
        ).clone(cell_state=[h, c])
        return tf.shape(source)[0], state

    def call(self, source, target_in):
        batch, state = self.decoder_start(source)
        lengths = tf.fill([batch], tf.shape(target_in)[1])
        outputs, _, _ = self.decoder(
            self.target_embedding(target_in),
            initial_state=state,
            sequence_length=lengths,
        )
        return outputs.rnn_output

    def greedy(self, source, max_length):
        batch, state = self.decoder_start(source)
        decoder = tfa.seq2seq.BasicDecoder(
            self.cell,
            tfa.seq2seq.GreedyEmbeddingSampler(self.target_embedding),
            output_layer=self.projection,
            maximum_iterations=max_length,
        )
        outputs, _, _ = decoder(
            None,
            start_tokens=tf.fill([batch], START_TOKEN),
            end_token=END_TOKEN,
            initial_state=state,
        )
        return outputs.sample_id

    def beam(self, source, max_length, beam_width):
        batch, state = self.decoder_start(source, beam_width)
        decoder = tfa.seq2seq.BeamSearchDecoder(
            self.cell,
            beam_width=beam_width,
            output_layer=self.projection,
            length_penalty_weight=0.6,
            maximum_iterations=max_length,
        )
        outputs, _, _ = decoder(
            self.target_embedding.variables[0],
            start_tokens=tf.fill([batch], START_TOKEN),
            end_token=END_TOKEN,
            initial_state=state,
        )
        return outputs.predicted_ids


def _batch(sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    v = sizes["vocab"]
    source = rng.integers(3, v, size=(batch, sizes["source_length"]))
    target_in = rng.integers(3, v, size=(batch, sizes["target_length"]))
    target_out = rng.integers(3, v, size=(batch, sizes["target_length"]))
    return (
        tf.constant(source, tf.int32),
        tf.constant(target_in, tf.int32),
        tf.constant(target_out, tf.int32),
    )


def _train_step(model, optimizer):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="none"
    )

    @tf.function
    def step(source, target_in, target_out):
        with tf.GradientTape() as tape:
            logits = model(source, target_in)
            mask = tf.cast(target_out != 0, tf.float32)
            loss = tf.reduce_sum(loss_fn(target_out, logits) * mask)
            loss = loss / tf.reduce_sum(mask)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def setup(sizes):
    if sizes.get("inter_op_threads"):
        # Before the first op runs (TensorFlow fixes its pools then).
        tf.config.threading.set_inter_op_parallelism_threads(
            sizes["inter_op_threads"])
    calls = {}
    source, target_in, target_out = _batch(sizes, sizes["batch"])
    for attention in sizes["tfa_attentions"]:
        model = TFASeq2Seq(sizes, attention)
        step = _train_step(model, tf.keras.optimizers.Adam())
        calls[f"tfa-{attention}-train"] = (
            lambda s=step: s(source, target_in, target_out)
        )
        if attention != "luong":
            continue
        limit = sizes["decode_length"]
        width = sizes["beam_width"]
        greedy = tf.function(lambda x, m=model: m.greedy(x, limit))
        beam = tf.function(lambda x, m=model: m.beam(x, limit, width))
        for batch in sizes["decode_batches"]:
            src = _batch(sizes, batch, seed=1)[0]
            calls[f"tfa-greedy-b{batch}"] = lambda f=greedy, x=src: f(x)
            calls[f"tfa-beam-b{batch}"] = lambda f=beam, x=src: f(x)
    for fn in calls.values():
        for _ in range(sizes["warmup"]):
            fn()
    return calls


def main():
    serve(setup, {"tensorflow": tf.__version__, "tfa": tfa.__version__},
          sync)


if __name__ == "__main__":
    main()
