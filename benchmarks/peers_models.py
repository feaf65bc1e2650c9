"""The models of `benchmarks.peers` (ours and the TF tutorial's).

At the sizes `benchmarks.peers.SIZES` gives: the step-wise model
(`AttentionRNN(AttentionWrapper(LSTMCell, score))` with input feeding and
TFA's linear attention layer), the sequence-mode model (LSTM decoder +
attention + `AttentionalOutput`), the TF tutorial's model (bidirectional
GRU, one-head `MultiHeadAttention`), one `tf.function` train step, the
step-wise model's decoders on every backend (`Decoders`), and the
`Translator` module whose exported greedy, beam, n-best, coverage and
ensemble signatures are timed against TFA's decoders. The models and
`Decoders` are Keras only (the JAX worker, `benchmarks/peers_jax.py`,
builds them too); the module imports TensorFlow for the rest.
"""

import keras
import numpy as np
import tensorflow as tf

import keras_attention as ka
from keras_attention.seq2seq import FusedAdam
from keras_attention.seq2seq import sparse_cross_entropy

END_TOKEN = 2
START_TOKEN = 1
# GNMT beta of the `coverage` decoder.
COVERAGE_PENALTY = 0.2

def _attention(score, units):
    if score == "luong":
        return ka.MultiplicativeAttention(use_scale=True)
    if score == "location":
        # Tacotron 2's location features: 32 filters of width 31.
        return ka.LocationSensitiveAttention(units, filters=32, kernel_size=31)
    if score == "monotonic":
        return ka.BahdanauMonotonicAttention(
            units, normalize=True, score_bias_init=-1.0
        )
    return ka.AdditiveAttention(units, normalize=True)


def _output_bias(vocab):
    bias = np.zeros([vocab], "float32")
    bias[END_TOKEN] = -1e4
    return keras.initializers.Constant(bias)


def encoder(sizes, source, lstm=ka.LSTM):
    x = keras.layers.Embedding(sizes["vocab"], sizes["embedding_dim"])(source)
    return lstm(
        sizes["units"], return_sequences=True, return_state=True
    )(x)


def stepwise_parts(sizes, score, logits_dtype=None, cell="lstm"):
    """The step-wise decoder's layers: embedding, wrapper, projection.

    `logits_dtype="float32"` keeps the vocabulary projection in float32
    under a mixed policy (`Seq2Seq(projection_dtype="float32")`; `None`,
    the policy's, is what its default does under mixed_bfloat16); `cell`: `"lstm"` or
    `"gru"`, the decoder cell."""
    units = sizes["units"]
    cells = {"lstm": keras.layers.LSTMCell, "gru": keras.layers.GRUCell}
    wrapper = ka.AttentionWrapper(
        cells[cell](units),
        _attention(score, units),
        attention_layer_size=units,
        attention_activation=None,  # TFA's attention layer is linear
    )
    embedding = keras.layers.Embedding(sizes["vocab"], sizes["embedding_dim"])
    projection = keras.layers.Dense(
        sizes["vocab"], bias_initializer=_output_bias(sizes["vocab"]),
        dtype=logits_dtype,
    )
    return embedding, wrapper, projection


def stepwise_model(sizes, score, logits_dtype=None, lstm=ka.LSTM,
                   fused="auto", cell="lstm"):
    """The training model and the layers the translator reuses; `lstm`:
    the encoder's layer class (`keras.layers.LSTM` for the figures before
    `keras_attention.LSTM`); `fused`: `AttentionRNN`'s (`False` for the
    generic loop); `cell`: the decoder cell, `"lstm"` or `"gru"` (which
    starts from the encoder's `h`)."""
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    encoder_model = keras.Model(source, encoder(sizes, source, lstm))
    memory, h, c = encoder_model(source)
    embedding, wrapper, projection = stepwise_parts(
        sizes, score, logits_dtype, cell
    )
    outputs, _ = ka.AttentionRNN(wrapper, fused=fused)(
        embedding(target), memory,
        initial_state=[h] if cell == "gru" else [h, c],
    )
    model = keras.Model([source, target], projection(outputs))
    return model, (encoder_model, embedding, wrapper, projection)


def sequence_model(sizes, score, logits_dtype=None, lstm=ka.LSTM):
    units = sizes["units"]
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    memory, h, c = encoder(sizes, source, lstm)
    y = keras.layers.Embedding(sizes["vocab"], sizes["embedding_dim"])(target)
    decoded = lstm(units, return_sequences=True)(
        y, initial_state=[h, c]
    )
    context, _ = _attention(score, units)(decoded, memory)
    attentional = ka.AttentionalOutput(units)(context, decoded)
    logits = keras.layers.Dense(sizes["vocab"], dtype=logits_dtype)(
        attentional
    )
    return keras.Model([source, target], logits)


def tutorial_model(sizes):
    """The TF "NMT with attention" tutorial's model (GRU, one-head MHA)."""
    units = sizes["units"]
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(sizes["vocab"], units)(source)
    memory = keras.layers.Bidirectional(
        keras.layers.GRU(units, return_sequences=True), merge_mode="sum"
    )(x)
    y = keras.layers.Embedding(sizes["vocab"], units)(target)
    decoded = keras.layers.GRU(units, return_sequences=True)(y)
    attended = keras.layers.MultiHeadAttention(num_heads=1, key_dim=units)(
        query=decoded, value=memory
    )
    hidden = keras.layers.LayerNormalization()(
        keras.layers.Add()([decoded, attended])
    )
    logits = keras.layers.Dense(sizes["vocab"])(hidden)
    return keras.Model([source, target], logits)


def keras_cross_entropy(labels, logits):
    """Keras' token cross-entropy (TensorFlow's fused op), as the
    tutorial's model and the models before this library's building blocks
    train with."""
    return keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True
    )


def train_step(model, jit_compile=False, optimizer=None, cross_entropy=None):
    """One `tf.function` step: Adam on the masked cross-entropy (of float32
    logits); XLA-compiled with `jit_compile=True`. `optimizer` defaults to
    the NMT example's `FusedAdam`, `cross_entropy` (labels, logits ->
    per-token losses) to the library's `sparse_cross_entropy`, which
    `MaskedLoss` trains with."""
    optimizer = optimizer or FusedAdam()
    cross_entropy = cross_entropy or sparse_cross_entropy

    @tf.function(jit_compile=jit_compile)
    def step(source, target_in, target_out):
        with tf.GradientTape() as tape:
            logits = tf.cast(model([source, target_in], training=True),
                             "float32")
            mask = tf.cast(target_out != 0, "float32")
            loss = tf.reduce_sum(cross_entropy(target_out, logits) * mask)
            loss = loss / tf.reduce_sum(mask)
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    return step


_SOURCE = tf.TensorSpec([None, None], tf.int32)


def numpy_batch(sizes, batch, seed=0):
    """`(source, target_in, target_out)` int32 arrays of random ids in
    `[3, vocab)` (no padding, no start or end token)."""
    rng = np.random.default_rng(seed)
    v = sizes["vocab"]
    return tuple(
        rng.integers(3, v, size=(batch, length)).astype("int32")
        for length in (
            sizes["source_length"],
            sizes["target_length"],
            sizes["target_length"],
        )
    )


def batch_of(sizes, batch, seed=0):
    """`numpy_batch` as TensorFlow tensors."""
    return tuple(tf.constant(x) for x in numpy_batch(sizes, batch, seed))


class Decoders:
    """Our step-wise model's encoder and decoders over token ids, on every
    backend (`keras.ops`): `greedy_tokens(source)` and
    `beam_tokens(source)` return `{"tokens": ...}`; `Translator` exports
    them, `benchmarks/peers_jax.py` compiles them with `jax.jit`.

    `parts`: those of `stepwise_model`; `members`: more of them, which
    the ensemble decodes with.
    """

    def __init__(self, sizes, parts, members=()):
        self.sizes = sizes
        self.members = [parts] + list(members)

    @staticmethod
    def _member_start(parts, source):
        encoder, _, wrapper, _ = parts
        memory, h, c = encoder(source)
        return wrapper.get_initial_state(memory, cell_state=[h, c])

    @staticmethod
    def _member_step(parts, logits=False):
        _, embedding, wrapper, projection = parts

        def step(tokens, state):
            output, state, weights = wrapper.step(embedding(tokens), state)
            scores = projection(output)
            if not logits:
                scores = keras.ops.log_softmax(scores)
            return scores, state, weights

        return step

    @staticmethod
    def _start_tokens(source):
        return keras.ops.full((keras.ops.shape(source)[0],), START_TOKEN,
                              "int32")

    def _start(self, source):
        return (
            self._start_tokens(source),
            self._member_start(self.members[0], source),
        )

    def step(self, tokens, state):
        return self._member_step(self.members[0])(tokens, state)

    def _beam(self, source, step=None, **options):
        start, state = self._start(source)
        return ka.beam_search_decode(
            step or self.step, start, state, end_token=END_TOKEN,
            max_length=self.sizes["decode_length"],
            beam_width=self.sizes["beam_width"], length_penalty=0.6,
            **options,
        )

    def step_logits(self, tokens, state):
        return self._member_step(self.members[0], logits=True)(tokens, state)

    def greedy_tokens(self, source, step=None):
        """Greedy decoding from the logits, as `Seq2Seq` and the exported
        `TranslatorModule` decode (only the picked token is normalized)."""
        start, state = self._start(source)
        out = ka.greedy_decode(
            step or self.step_logits, start, state, end_token=END_TOKEN,
            max_length=self.sizes["decode_length"], from_logits=True,
        )
        return {"tokens": out["tokens"]}

    def beam_tokens(self, source):
        return {"tokens": self._beam(source)["tokens"]}


class Translator(Decoders, tf.Module):
    """`Decoders`' decoders as `tf.function`s, for export.

    `ensemble` is a list of more `(model, parts)` of `stepwise_model`: the
    `ensemble` signature decodes with all the models at once
    (`keras_attention.decoding.ensemble_step`).
    """

    def __init__(self, sizes, model, parts, ensemble=()):
        tf.Module.__init__(self, name="translator")
        Decoders.__init__(self, sizes, parts, [p for _, p in ensemble])
        self.tracked = [
            v.value for m in [model] + [m for m, _ in ensemble]
            for v in m.variables
        ]

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def greedy(self, source):
        return self.greedy_tokens(source)

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def beam(self, source):
        return self.beam_tokens(source)

    @tf.function(input_signature=[_SOURCE], autograph=False,
                 jit_compile=True)
    def greedy_xla(self, source):
        """`greedy`, XLA-compiled (a server then needs XLA)."""
        return self.greedy_tokens(source)

    @tf.function(input_signature=[_SOURCE], autograph=False,
                 jit_compile=True)
    def beam_xla(self, source):
        """`beam`, XLA-compiled (a server then needs XLA)."""
        return self.beam_tokens(source)

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def greedy_xla_step(self, source):
        """`greedy` with the step XLA-compiled, the loop in TensorFlow
        (`TranslatorModule(xla="step")`)."""
        return self.greedy_tokens(source, self._xla_step(logits=True))

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def beam_xla_step(self, source):
        """`beam` with the step XLA-compiled, the loop in TensorFlow."""
        return {"tokens": self._beam(source, self._xla_step())["tokens"]}

    def _xla_step(self, logits=False):
        step = self.step_logits if logits else self.step
        return tf.function(step, jit_compile=True, autograph=False)

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def coverage(self, source):
        """Beam search with GNMT's coverage penalty (the attention sums
        travel in the beam state)."""
        out = self._beam(source, coverage_penalty=COVERAGE_PENALTY)
        return {"tokens": out["tokens"]}

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def nbest(self, source):
        """Every beam, `(batch, beam_width, L)` tokens, scores, attention."""
        start, state = self._start(source)
        out = ka.decoding.beam_search_nbest(
            self.step, start, state, end_token=END_TOKEN,
            max_length=self.sizes["decode_length"],
            n_best=self.sizes["beam_width"], length_penalty=0.6,
        )
        return {k: out[k] for k in ("tokens", "scores", "attention")}

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def ensemble(self, source):
        """Beam search over the members' averaged probabilities."""
        step = ka.decoding.ensemble_step(
            [self._member_step(p) for p in self.members]
        )
        state = ka.decoding.ensemble_state(
            *[self._member_start(p, source) for p in self.members]
        )
        out = ka.beam_search_decode(
            step, self._start_tokens(source), state,
            end_token=END_TOKEN, max_length=self.sizes["decode_length"],
            beam_width=self.sizes["beam_width"], length_penalty=0.6,
        )
        return {"tokens": out["tokens"]}


def sequence_step_flops(sizes, kind="sequence"):
    """Matmul FLOPs of one Luong training step of a `kind` model
    (`"sequence"` or `"stepwise"`).

    Forward: encoder and decoder LSTMs (the step-wise decoder's input is
    the embedding and the fed attentional vector), the key projection,
    scores and context, the attentional layer and the vocabulary
    projection; the backward pass costs twice the forward.
    """
    b, s, t = sizes["batch"], sizes["source_length"], sizes["target_length"]
    e, u, v = sizes["embedding_dim"], sizes["units"], sizes["vocab"]
    decoder_input = e + u if kind == "stepwise" else e
    forward = (
        b * s * 2 * 4 * u * (e + u)
        + b * t * 2 * 4 * u * (decoder_input + u)
        + 2 * b * s * u * u
        + 2 * 2 * b * t * s * u
        + 2 * b * t * 2 * u * u
        + 2 * b * t * u * v
    )
    return 3 * forward


def decode_flops(sizes, batch, rows_per_sentence=1):
    """Matmul FLOPs of one decode of `batch` sentences to
    `sizes["decode_length"]` tokens with the step-wise Luong model:
    the encoder and key projection once, then per step and row (beams
    are rows) the LSTM, scores and context, the attentional layer and
    the vocabulary projection."""
    s, e, u, v = (sizes["source_length"], sizes["embedding_dim"],
                  sizes["units"], sizes["vocab"])
    encode = batch * s * (2 * 4 * u * (e + u) + 2 * u * u)
    step = (2 * 4 * u * (e + 2 * u) + 2 * 2 * s * u + 2 * 2 * u * u
            + 2 * u * v)
    rows = batch * rows_per_sentence
    return encode + sizes["decode_length"] * rows * step
