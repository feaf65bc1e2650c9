"""Encoder-decoder models of the NMT example.

Two decoders, chosen by `ModelConfig.model`:

- `"luong"` (sequence mode, Luong et al., 2015): the decoder RNN runs over
  the whole target sequence, then one attention call scores every decoder
  state `h_t` against the encoder states at once, and the attentional
  output is `h~_t = tanh(W_c [c_t; h_t])`, `p(y_t) = softmax(W_s h~_t)`.
  Training is one pass of cuDNN-able RNN layers; decoding runs the same
  layers step by step (`Seq2Seq.step`).
- `"stepwise"` (input feeding, Luong et al., 2015, section 3.3): the
  previous attentional output `h~_{t-1}` is concatenated to the input of
  the decoder at step `t`: `keras_attention.AttentionWrapper` around an
  LSTM/GRU cell, run over the target sequence by
  `keras_attention.AttentionRNN` in training and step by step
  (`AttentionWrapper.step`) in decoding.

The hyper-parameters are a `config.ModelConfig`. The score is one of the
layers of `keras_attention`: `"dot"`, `"general"` (multiplicative),
`"additive"` (Bahdanau), or, with the step-wise decoder only (they carry
the previous step's alignment), `"location"` (location-sensitive) and
`"monotonic"` (Bahdanau monotonic, mode `"parallel"` in training and in
decoding, as in TFA: the same expected alignment everywhere; `"hard"`
decoding would need training with `sigmoid_noise`). The encoder is a
stack of LSTM or GRU layers, optionally bidirectional (LSTMs are
`keras_attention.LSTM`: Keras' LSTM with a faster gradient where there is
no cuDNN kernel, same weights and results); the decoder has as
many units as the encoder output (`units`, doubled when bidirectional) so
that the dot score applies and the encoder's final states (forward and
backward concatenated) initialise every decoder layer.

All models share the same layers: `training_model` (`[source_ids,
target_in] -> logits`), `attention_model` (`-> attention weights`, for
alignment scoring), `encode` and `step` (one decoder step, in the
`step_fn(tokens, state) -> (log_probs, new_state, attention)` form of
`keras_attention.decoding`).
"""

import keras
from keras import ops

import keras_attention
from examples.nmt import alignment_head
from examples.nmt.model_layers import BridgeDropout
from examples.nmt.model_layers import DropMask
from examples.nmt.config import ModelConfig
from keras_attention.rnn.attention_rnn import AttentionRNN
from keras_attention.rnn.attention_wrapper import AttentionWrapper
from keras_attention.rnn.attentional_output import AttentionalOutput

# Id of `[END]` in every vocabulary of the example (`text.RESERVED_TOKENS`:
# [PAD] [UNK] [START] [END]; `text.py` imports TensorFlow, this module not).
END_ID = 3

def make_attention(config):
    """The attention layer of the configured score."""
    if config.score == "dot":
        return keras_attention.DotAttention(name="attention")
    if config.score == "general":
        return keras_attention.MultiplicativeAttention(name="attention")
    units = config.attention_units or config.decoder_units
    if config.score == "location":
        # Tacotron 2's location features (previous and cumulative weights).
        return keras_attention.LocationSensitiveAttention(
            units=units, name="attention"
        )
    if config.score == "monotonic":
        # Raffel et al.'s normalised energy. The parallel (expected)
        # alignment serves training and decoding alike: without sigmoid
        # noise in training, hard decoding would not match what was trained.
        return keras_attention.BahdanauMonotonicAttention(
            units=units, normalize=True, mode="parallel", name="attention"
        )
    return keras_attention.AdditiveAttention(units=units, name="attention")


def _rnn(config, units, name):
    layer_class = (
        keras_attention.LSTM if config.cell == "lstm" else keras.layers.GRU
    )
    return layer_class(
        units, return_sequences=True, return_state=True, name=name
    )


def _states_per_layer(config):
    return 2 if config.cell == "lstm" else 1


class Seq2Seq:
    """The layers of an attentional encoder-decoder and the models on them.

    Args:
        config: A `ModelConfig`.

    Attributes:
        training_model: `keras.Model` `{"source_ids", "target_in"} ->
            logits (batch, T, target_vocab_size)`, float32.
        attention_model: `keras.Model`, same inputs, `-> weights
            (batch, T, S)`, teacher-forced attention.
        alignment_model: `keras.Model`, same inputs, `-> weights
            (batch, T, S)`: the alignment head's (for `"lexical"` the
            posterior of the source word given the predicted word) with
            `config.alignment_head`, else `attention_model`. What `align`
            reads.
        guided_model: `keras.Model`, same inputs, `-> {"logits",
            "attention"}`, for training with guided alignment (the
            attention output is the alignment head's, if any).
        lexical_model: With `config.alignment_head="lexical"`: same
            inputs, `-> {"logits", "lexical"}`, the head's per-token
            negative log-likelihood `(batch, T)` as a second output.
        weights_model: The model whose weights a run saves and loads: the
            one that holds the alignment head (`guided_model`,
            `lexical_model`), else `training_model`.
        encoder_model: `keras.Model` `source_ids -> [memory, *states]`.
    """

    def __init__(self, config):
        for name in ("source_vocab_size", "target_vocab_size"):
            if getattr(config, name) is None:
                raise ValueError(
                    f"`config.{name}` must be set (the size of the learned "
                    f"vocabulary) before the model is built. Received: "
                    f"{name}=None"
                )
        self.config = config
        c = config
        self.source_embedding = keras.layers.Embedding(
            c.source_vocab_size, c.embedding_dim, mask_zero=True,
            name="source_embedding",
        )
        self.target_embedding = keras.layers.Embedding(
            c.target_vocab_size, c.embedding_dim, mask_zero=True,
            name="target_embedding",
        )
        self.encoder_rnns = []
        for i in range(c.encoder_layers):
            rnn = _rnn(c, c.units, f"encoder_rnn_{i}")
            if c.bidirectional:
                rnn = keras.layers.Bidirectional(
                    rnn, merge_mode="concat", name=f"encoder_birnn_{i}"
                )
            self.encoder_rnns.append(rnn)
        self.dropout = keras.layers.Dropout(c.dropout, name="dropout")
        self.attention = make_attention(c)
        self.output_projection = keras.layers.Dense(
            c.target_vocab_size, dtype="float32", name="logits"
        )
        if c.model == "luong":
            self.decoder_rnns = [
                _rnn(c, c.decoder_units, f"decoder_rnn_{i}")
                for i in range(c.decoder_layers)
            ]
            # Luong's attentional output tanh(W_c [c_t; h_t]).
            self.attentional_output = AttentionalOutput(
                c.decoder_units, name="attentional_output"
            )
        else:
            self._build_stepwise_decoder()
        # The second attention `align` reads (`alignment_head.py`).
        self.alignment_layers = alignment_head.make_layers(c)
        self._build_models()

    # ------------------------------------------------------------------
    def _build_stepwise_decoder(self):
        c = self.config
        cell_class = (
            keras.layers.LSTMCell if c.cell == "lstm" else keras.layers.GRUCell
        )
        cells = [
            cell_class(c.decoder_units, name=f"decoder_cell_{i}")
            for i in range(c.decoder_layers)
        ]
        cell = (
            cells[0]
            if len(cells) == 1
            else keras.layers.StackedRNNCells(cells, name="decoder_cells")
        )
        self.wrapper = AttentionWrapper(
            cell,
            self.attention,
            attention_layer_size=c.decoder_units,
            output_attention=True,
            input_feeding=True,
            name="attention_wrapper",
        )
        self.decoder_rnn = AttentionRNN(self.wrapper, name="decoder")

    def _cell_state(self, states):
        """Encoder final states in the structure of the decoder cell state."""
        if states is None:
            return None
        if self.config.decoder_layers == 1:
            return list(states)
        return [list(states) for _ in range(self.config.decoder_layers)]

    def _encode_symbolic(self, source_ids, training=None):
        c = self.config
        x = self.source_embedding(source_ids)
        x = self.dropout(x, training=training)
        embedded = x
        states = None
        for i, rnn in enumerate(self.encoder_rnns):
            outputs = rnn(x, training=training)
            x, states = outputs[0], list(outputs[1:])
            if i < len(self.encoder_rnns) - 1:
                x = self.dropout(x, training=training)
        if c.bidirectional:
            n = _states_per_layer(c)
            forward, backward = states[:n], states[n:]
            states = [
                ops.concatenate([f, b], axis=-1)
                for f, b in zip(forward, backward)
            ]
        return x, states, embedded

    def _decode_sequence(
        self, target_in, memory, source_mask, states, training=None,
        keys=None, values=None,
    ):
        y = self.target_embedding(target_in)
        y = self.dropout(y, training=training)
        if self.config.model == "stepwise":
            outputs, weights = self.decoder_rnn(
                y, memory, initial_state=self._cell_state(states),
                inputs_mask=ops.not_equal(target_in, 0),
                memory_mask=source_mask, training=training,
            )
            outputs = self.dropout(outputs, training=training)
            return self.output_projection(outputs), weights, outputs
        for i, rnn in enumerate(self.decoder_rnns):
            outputs = rnn(y, initial_state=states, training=training)
            y = outputs[0]
            if i < len(self.decoder_rnns) - 1:
                y = self.dropout(y, training=training)
        context, weights = self.attention(
            y, memory if values is None else values, key=keys,
            value_mask=source_mask, training=training,
        )
        h_tilde = self.attentional_output(context, y)
        h_tilde = self.dropout(h_tilde, training=training)
        logits = self.output_projection(h_tilde)
        return logits, weights, y

    def _keys_values(self, memory, embedded):
        """The attention's keys and values (`config.attention_keys`,
        `config.attention_values`): the encoder states or the embeddings."""
        c = self.config
        keys = embedded if c.attention_keys == "embedding" else memory
        values = embedded if c.attention_values == "embedding" else memory
        return keys, values

    def memory_mask(self, source_ids):
        """The attended source positions `(batch, S)` bool: not padding,
        not `[END]` unless `config.attend_source_end`, and none of
        `config.unattended_source_ids`."""
        mask = ops.not_equal(source_ids, 0)
        if not self.config.attend_source_end:
            mask = ops.logical_and(mask, ops.not_equal(source_ids, END_ID))
        if self.config.unattended_source_ids:
            ids = ops.convert_to_tensor(
                list(self.config.unattended_source_ids), source_ids.dtype
            )
            hit = ops.any(
                ops.equal(ops.expand_dims(source_ids, -1), ids), axis=-1
            )
            mask = ops.logical_and(mask, ops.logical_not(hit))
        return mask

    def _build_models(self):
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        memory, states, embedded = self._encode_symbolic(source_ids)
        source_mask = self.memory_mask(source_ids)
        keys, values = self._keys_values(memory, embedded)
        bridge = None
        if self.config.bridge:
            bridge = states
            if self.config.bridge_dropout:
                bridge = BridgeDropout(
                    self.config.bridge_dropout, name="bridge_dropout"
                )(states)
        logits, weights, decoded = self._decode_sequence(
            target_in, memory, source_mask, bridge, keys=keys, values=values,
        )
        # The loss masks padding itself (`losses.MaskedLoss`): the logits
        # carry no Keras mask.
        logits = DropMask(name="drop_mask")(logits)
        self.training_model = keras.Model(
            {"source_ids": source_ids, "target_in": target_in},
            logits,
            name="nmt",
        )
        weights = DropMask(name="drop_mask_weights")(weights)
        self.attention_model = keras.Model(
            {"source_ids": source_ids, "target_in": target_in},
            weights,
            name="nmt_attention",
        )
        self.alignment_model = self.attention_model
        inputs = {"source_ids": source_ids, "target_in": target_in}
        aligned = weights
        head = self.config.alignment_head
        if head != "off":
            aligned, nll = alignment_head.outputs(
                self.alignment_layers, head,
                alignment_head.next_tokens(target_in, END_ID), decoded,
                keys, embedded, source_mask,
                lambda ids: self.dropout(self.target_embedding(ids)),
            )
            aligned = DropMask(name="drop_mask_alignment")(aligned)
            self.alignment_model = keras.Model(
                inputs, aligned, name="nmt_alignment"
            )
        if head == "lexical":
            self.lexical_model = keras.Model(
                inputs, {"logits": logits, "lexical": nll}, name="nmt_lexical"
            )
        # Guided alignment (`train.py`): one loss per output.
        self.guided_model = keras.Model(
            {"source_ids": source_ids, "target_in": target_in},
            {"logits": logits, "attention": aligned},
            name="nmt_guided",
        )
        self.weights_model = {
            "off": self.training_model,
            "guided": self.guided_model,
            "lexical": getattr(self, "lexical_model", None),
        }[head]
        self.encoder_model = keras.Model(
            source_ids,
            [DropMask(name="drop_mask_memory")(memory)] + list(states),
            name="nmt_encoder",
        )

    # ------------------------------------------------------------------
    # Step-wise inference, in the `keras_attention.decoding` step_fn form.
    def encode(self, source_ids):
        """Initial decoder state for a batch of source ids `(batch, S)`.

        Returns:
            A dict: `memory (batch, S, D)`, `keys` (the attention's
            projected memory, computed once) and `memory_mask (batch, S)`
            bool, from `BaseAttention.prepare_memory`, and `rnn`, a list
            (one entry per decoder layer) of lists of states.
        """
        outputs = self.encoder_model(source_ids, training=False)
        memory, states = outputs[0], list(outputs[1:])
        source_mask = self.memory_mask(source_ids)
        if not self.config.bridge:
            states = [ops.zeros_like(s) for s in states]
        if self.config.model == "stepwise":
            return self.wrapper.get_initial_state(
                memory, memory_mask=source_mask,
                cell_state=self._cell_state(states),
            )
        key, value = self._keys_values(
            memory, self.source_embedding(source_ids)
        )
        if not self.attention.built:
            self.attention.build(
                (None, self.config.decoder_units), tuple(value.shape),
                tuple(key.shape),
            )
        state = self.attention.prepare_memory(
            value, key=key, value_mask=source_mask
        )
        state["rnn"] = [list(states) for _ in self.decoder_rnns]
        return state

    def step(self, tokens, state):
        """One decoder step: `(log_probs, new_state, attention)`.

        Args:
            tokens: int `(batch,)`, the previous target tokens.
            state: The dict of `encode` (or of the previous step).
        """
        # The embedding lookup without the layer call: a step has no
        # padding to mask.
        y = ops.cast(
            ops.take(self.target_embedding.embeddings, tokens, axis=0),
            self.target_embedding.compute_dtype,
        )
        if self.config.model == "stepwise":
            output, new_state, weights = self.wrapper.step(
                y, state, training=False
            )
            logits = ops.cast(self.output_projection(output), "float32")
            return (
                ops.log_softmax(logits, axis=-1),
                new_state,
                ops.cast(weights, "float32"),
            )
        new_rnn = []
        for rnn, layer_state in zip(self.decoder_rnns, state["rnn"]):
            y, new_state = rnn.cell(y, list(layer_state), training=False)
            new_rnn.append(list(new_state))
        context, weights = self.attention.attend(
            y, state["memory"], state["keys"], value_mask=state["memory_mask"]
        )
        h_tilde = self.attentional_output(context, y)
        logits = ops.cast(self.output_projection(h_tilde), "float32")
        log_probs = ops.log_softmax(logits, axis=-1)
        new_state = dict(state)
        new_state["rnn"] = new_rnn
        return log_probs, new_state, ops.cast(weights, "float32")


def build_model(config: ModelConfig) -> Seq2Seq:
    """Builds a `Seq2Seq` from a `ModelConfig` with its vocabulary sizes."""
    return Seq2Seq(config)
