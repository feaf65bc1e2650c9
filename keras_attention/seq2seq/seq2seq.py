"""`Seq2Seq`: an attentional RNN encoder-decoder, one `keras.Model`.

Two decoders (`model`):

- `"luong"` (sequence mode, Luong et al., 2015): the decoder RNN runs over
  the whole target sequence, then one attention call scores every decoder
  state `h_t` against the encoder states at once, and the attentional
  output is `h~_t = tanh(W_c [c_t; h_t])`, `p(y_t) = softmax(W_s h~_t)`.
  Training is one pass of cuDNN-able RNN layers; decoding runs the same
  layers step by step (`step`).
- `"stepwise"` (input feeding, Luong et al., 2015, section 3.3): the
  previous attentional output `h~_{t-1}` is concatenated to the input of
  the decoder at step `t`: `AttentionWrapper` around an LSTM/GRU cell, run
  over the target by `AttentionRNN` in training and step by step
  (`AttentionWrapper.step`) in decoding.

The score is `"dot"`, `"general"` (multiplicative), `"additive"`
(Bahdanau), or, with the step-wise decoder only, `"location"`
(location-sensitive) and `"monotonic"` (Bahdanau monotonic, mode
`"parallel"`). The encoder is a stack of LSTM (`keras_attention.LSTM`) or
GRU layers, optionally bidirectional; the decoder has as many units as the
encoder output, so that the dot score applies and the encoder's final
states initialise every decoder layer (the bridge).

Vocabularies follow one convention: id 0 is padding, 2 `[START]` and 3
`[END]` (`tokens.py`). The model runs on every Keras backend.
"""

import keras
from keras import ops

from keras_attention import decoding
from keras_attention.additive_attention import AdditiveAttention
from keras_attention.attention_rnn import AttentionRNN
from keras_attention.attention_wrapper import AttentionWrapper
from keras_attention.attentional_output import AttentionalOutput
from keras_attention.dot_attention import DotAttention
from keras_attention.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from keras_attention.lstm import LSTM
from keras_attention.monotonic_attention import BahdanauMonotonicAttention
from keras_attention.multiplicative_attention import MultiplicativeAttention
from keras_attention.seq2seq import layers as layers_lib
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.seq2seq.tokens import START_ID


def make_attention(score, units):
    """The attention layer of `score` (`units`: additive hidden size)."""
    if score == "dot":
        return DotAttention(name="attention")
    if score == "general":
        return MultiplicativeAttention(name="attention")
    if score == "location":
        return LocationSensitiveAttention(units=units, name="attention")
    if score == "monotonic":
        # The parallel (expected) alignment serves training and decoding:
        # without sigmoid noise in training, hard decoding would not match.
        return BahdanauMonotonicAttention(
            units=units, normalize=True, mode="parallel", name="attention"
        )
    return AdditiveAttention(units=units, name="attention")


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2Seq(keras.Model):
    """An attentional encoder-decoder: teacher forcing, decoding, alignment.

    A functional model with inputs `{"source_ids", "target_in"}` (int
    `(batch_size, S)` and `(batch_size, T)`, 0 = padding) and a dict of
    outputs: `"logits"` `(batch_size, T, target_vocab_size)` float32,
    `"attention"` `(batch_size, T, S)` (the translation attention),
    `"alignment"` `(batch_size, T, S)` (what `align` reads: the alignment
    head's weights, or the attention without a head) and, with
    `alignment_head="lexical"`, `"lexical"` `(batch_size, T)`, the head's
    per-token negative log-likelihood (a second training loss). Compile
    with a dict of losses over the outputs that train, and give `fit` the
    targets of those (a tensor alone is the `"logits"` target).

    Args:
        source_vocab_size: Size of the source vocabulary.
        target_vocab_size: Size of the target vocabulary.
        model: `"luong"` or `"stepwise"`. Defaults to `"luong"`.
        score: `"dot"`, `"general"`, `"additive"`, `"location"` or
            `"monotonic"`. Defaults to `"general"`.
        cell: `"lstm"` or `"gru"`. Defaults to `"lstm"`.
        bidirectional: Whether the encoder is bidirectional. Defaults to
            `True`.
        embedding_dim: Size of the embeddings. Defaults to `64`.
        units: Units of each encoder RNN (per direction). Defaults to `128`.
        encoder_layers: Stacked encoder RNNs. Defaults to `1`.
        decoder_layers: Stacked decoder RNNs. Defaults to `1`.
        dropout: Dropout rate. Defaults to `0.1`.
        attention_units: Hidden size of the additive scores. Defaults to
            the decoder units.
        bridge: Whether the encoder's final states initialise the decoder.
            Defaults to `True`.
        bridge_dropout: Share of training sentences whose decoder starts
            from zeros. Defaults to `0.0`.
        attend_source_end: Whether the attention may attend to the source
            `[END]`. Defaults to `True`.
        unattended_source_ids: Source ids never attended. Defaults to `()`.
        attention_keys: `"encoder"` or `"embedding"` (`"luong"` only).
            Defaults to `"encoder"`.
        attention_values: `"encoder"` or `"embedding"` (`"luong"` only).
            Defaults to `"encoder"`.
        alignment_head: `"off"`, `"guided"` or `"lexical"` (`layers.py`).
            Defaults to `"off"`.

    Example:

    ```python
    model = Seq2Seq(source_vocab_size=100, target_vocab_size=80, units=32)
    model.compile("adam", loss={"logits": MaskedLoss()})
    model.fit(x, {"logits": target_out})
    model.generate(source_ids, max_length=20)["tokens"]
    ```
    """

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        model="luong",
        score="general",
        cell="lstm",
        bidirectional=True,
        embedding_dim=64,
        units=128,
        encoder_layers=1,
        decoder_layers=1,
        dropout=0.1,
        attention_units=None,
        bridge=True,
        bridge_dropout=0.0,
        attend_source_end=True,
        unattended_source_ids=(),
        attention_keys="encoder",
        attention_values="encoder",
        alignment_head="off",
        **kwargs,
    ):
        for name, value in (
            ("source_vocab_size", source_vocab_size),
            ("target_vocab_size", target_vocab_size),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"`{name}` must be a positive integer (the size of the "
                    f"learned vocabulary). Received: {name}={value!r}"
                )
        decoder_units = units * (2 if bidirectional else 1)
        rnn_class = LSTM if cell == "lstm" else keras.layers.GRU

        def rnn(n, name):
            return rnn_class(
                n, return_sequences=True, return_state=True, name=name
            )

        # === Layers ===
        self.source_embedding = keras.layers.Embedding(
            source_vocab_size, embedding_dim, mask_zero=True,
            name="source_embedding",
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocab_size, embedding_dim, mask_zero=True,
            name="target_embedding",
        )
        self.encoder_rnns = []
        for i in range(encoder_layers):
            layer = rnn(units, f"encoder_rnn_{i}")
            if bidirectional:
                layer = keras.layers.Bidirectional(
                    layer, merge_mode="concat", name=f"encoder_birnn_{i}"
                )
            self.encoder_rnns.append(layer)
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        self.attention = make_attention(
            score, attention_units or decoder_units
        )
        self.output_projection = keras.layers.Dense(
            target_vocab_size, dtype="float32", name="logits"
        )
        if model == "luong":
            self.decoder_rnns = [
                rnn(decoder_units, f"decoder_rnn_{i}")
                for i in range(decoder_layers)
            ]
            self.attentional_output = AttentionalOutput(
                decoder_units, name="attentional_output"
            )
        else:
            cell_class = (
                keras.layers.LSTMCell if cell == "lstm"
                else keras.layers.GRUCell
            )
            cells = [
                cell_class(decoder_units, name=f"decoder_cell_{i}")
                for i in range(decoder_layers)
            ]
            self.wrapper = AttentionWrapper(
                cells[0] if len(cells) == 1
                else keras.layers.StackedRNNCells(cells, name="decoder_cells"),
                self.attention,
                attention_layer_size=decoder_units,
                output_attention=True,
                input_feeding=True,
                name="attention_wrapper",
            )
            self.decoder_rnn = AttentionRNN(self.wrapper, name="decoder")
        self.head_layers = layers_lib.make_head_layers(
            alignment_head, decoder_units, target_vocab_size
        )
        self.bridge_dropout_layer = (
            layers_lib.BridgeDropout(bridge_dropout, name="bridge_dropout")
            if bridge and bridge_dropout else None
        )

        # === Config ===
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.model = model
        self.score = score
        self.cell = cell
        self.bidirectional = bidirectional
        self.embedding_dim = embedding_dim
        self.units = units
        self.encoder_layers = encoder_layers
        self.decoder_layers = decoder_layers
        self.dropout = dropout
        self.attention_units = attention_units
        self.bridge = bridge
        self.bridge_dropout = bridge_dropout
        self.attend_source_end = attend_source_end
        self.unattended_source_ids = tuple(
            int(i) for i in unattended_source_ids
        )
        self.attention_keys = attention_keys
        self.attention_values = attention_values
        self.alignment_head = alignment_head
        self.decoder_units = decoder_units

        # === Functional model ===
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        outputs = self._teacher_forced(source_ids, target_in)
        super().__init__(
            inputs={"source_ids": source_ids, "target_in": target_in},
            outputs=outputs,
            **kwargs,
        )

    # ------------------------------------------------------------------
    def _encode(self, source_ids, training=None):
        """`(memory, final states, source embeddings)`."""
        x = self.source_embedding(source_ids)
        x = self.dropout_layer(x, training=training)
        embedded = x
        states = None
        for i, rnn in enumerate(self.encoder_rnns):
            out = rnn(x, training=training)
            x, states = out[0], list(out[1:])
            if i < len(self.encoder_rnns) - 1:
                x = self.dropout_layer(x, training=training)
        if self.bidirectional:
            n = len(states) // 2
            states = [
                ops.concatenate([f, b], axis=-1)
                for f, b in zip(states[:n], states[n:])
            ]
        return x, states, embedded

    def _cell_state(self, states):
        if states is None:
            return None
        if self.decoder_layers == 1:
            return list(states)
        return [list(states) for _ in range(self.decoder_layers)]

    def _keys_values(self, memory, embedded):
        keys = embedded if self.attention_keys == "embedding" else memory
        values = embedded if self.attention_values == "embedding" else memory
        return keys, values

    def memory_mask(self, source_ids):
        """The attended source positions `(batch, S)` bool: not padding,
        not `[END]` unless `attend_source_end`, none of
        `unattended_source_ids`."""
        mask = ops.not_equal(source_ids, 0)
        if not self.attend_source_end:
            mask = ops.logical_and(mask, ops.not_equal(source_ids, END_ID))
        if self.unattended_source_ids:
            ids = ops.convert_to_tensor(
                list(self.unattended_source_ids), source_ids.dtype
            )
            hit = ops.any(
                ops.equal(ops.expand_dims(source_ids, -1), ids), axis=-1
            )
            mask = ops.logical_and(mask, ops.logical_not(hit))
        return mask

    def _decode(self, target_in, memory, source_mask, states, keys, values):
        drop = self.dropout_layer
        y = drop(self.target_embedding(target_in))
        if self.model == "stepwise":
            outputs, weights = self.decoder_rnn(
                y, memory, initial_state=self._cell_state(states),
                inputs_mask=ops.not_equal(target_in, 0),
                memory_mask=source_mask,
            )
            outputs = drop(outputs)
            return self.output_projection(outputs), weights, outputs
        for i, rnn in enumerate(self.decoder_rnns):
            y = rnn(y, initial_state=states)[0]
            if i < len(self.decoder_rnns) - 1:
                y = drop(y)
        context, weights = self.attention(
            y, values, key=keys, value_mask=source_mask
        )
        h_tilde = drop(self.attentional_output(context, y))
        return self.output_projection(h_tilde), weights, y

    def _teacher_forced(self, source_ids, target_in):
        memory, states, embedded = self._encode(source_ids)
        source_mask = self.memory_mask(source_ids)
        keys, values = self._keys_values(memory, embedded)
        bridge = None
        if self.bridge:
            bridge = states
            if self.bridge_dropout_layer is not None:
                bridge = self.bridge_dropout_layer(states)
        logits, weights, decoded = self._decode(
            target_in, memory, source_mask, bridge, keys, values
        )
        # The losses mask padding themselves: no Keras mask on outputs.
        drop_mask = layers_lib.DropMask
        outputs = {
            "logits": drop_mask(name="drop_mask")(logits),
            "attention": drop_mask(name="drop_mask_weights")(weights),
        }
        aligned = weights
        if self.alignment_head != "off":
            aligned, nll = layers_lib.head_outputs(
                self.head_layers, self.alignment_head,
                layers_lib.next_tokens(target_in, END_ID), decoded,
                keys, embedded, source_mask,
                lambda ids: self.dropout_layer(self.target_embedding(ids)),
            )
            if nll is not None:
                outputs["lexical"] = nll
        outputs["alignment"] = drop_mask(name="drop_mask_alignment")(aligned)
        return outputs

    # ------------------------------------------------------------------
    # The `keras_attention.decoding` step protocol.
    def encode(self, source_ids):
        """The initial decoding state of source ids `(batch, S)`: a dict
        with `memory`, `keys` (the attention's projected memory) and
        `memory_mask`, and the decoder RNN states."""
        memory, states, embedded = self._encode(source_ids, training=False)
        memory = ops.copy(memory)
        source_mask = self.memory_mask(source_ids)
        if not self.bridge:
            states = [ops.zeros_like(s) for s in states]
        if self.model == "stepwise":
            return self.wrapper.get_initial_state(
                memory, memory_mask=source_mask,
                cell_state=self._cell_state(states),
            )
        key, value = self._keys_values(memory, embedded)
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
        # The lookup without the layer call: a step has no padding to mask.
        y = ops.cast(
            ops.take(self.target_embedding.embeddings, tokens, axis=0),
            self.target_embedding.compute_dtype,
        )
        if self.model == "stepwise":
            output, new_state, weights = self.wrapper.step(
                y, state, training=False
            )
        else:
            new_rnn = []
            for rnn, layer_state in zip(self.decoder_rnns, state["rnn"]):
                y, layer_new = rnn.cell(y, list(layer_state), training=False)
                new_rnn.append(list(layer_new))
            context, weights = self.attention.attend(
                y, state["memory"], state["keys"],
                value_mask=state["memory_mask"],
            )
            output = self.attentional_output(context, y)
            new_state = dict(state)
            new_state["rnn"] = new_rnn
        logits = ops.cast(self.output_projection(output), "float32")
        return (
            ops.log_softmax(logits, axis=-1), new_state,
            ops.cast(weights, "float32"),
        )

    def generate(self, source_ids, max_length=64, strategy="greedy",
                 **options):
        """Decodes source ids `(batch, S)` with `keras_attention.decoding`.

        Args:
            source_ids: int `(batch, S)`, 0 = padding.
            max_length: Longest output in tokens. Defaults to `64`.
            strategy: `"greedy"`, `"beam"` (`beam_search_decode`),
                `"nbest"` (`beam_search_nbest`, give `n_best`) or
                `"sample"` (`sample_decode`). Defaults to `"greedy"`.
            **options: More arguments of that decoder (`beam_width`,
                `temperature`, `seed`, ...).

        Returns:
            The decoder's dict (`tokens`, `lengths`, `scores`, ...).
        """
        decoders = {
            "greedy": decoding.greedy_decode,
            "beam": decoding.beam_search_decode,
            "nbest": decoding.beam_search_nbest,
            "sample": decoding.sample_decode,
        }
        if strategy not in decoders:
            raise ValueError(
                f"`strategy` must be one of {sorted(decoders)}. Received: "
                f"strategy={strategy!r}"
            )
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        start = ops.full((ops.shape(source_ids)[0],), START_ID, "int32")
        return decoders[strategy](
            self.step, start, self.encode(source_ids), END_ID, max_length,
            **options,
        )

    def align(self, source_ids, target_in):
        """The `(batch, T, S)` weights word alignment reads (the alignment
        head's, or the attention's), teacher-forced."""
        return self(
            {"source_ids": source_ids, "target_in": target_in},
            training=False,
        )["alignment"]

    # ------------------------------------------------------------------
    # Training: targets for the outputs that train only.
    def _all_targets(self, y, y_pred):
        """`y` as a dict over every output: a tensor is the `"logits"`
        target; outputs without a target (no loss) get their prediction."""
        if y is None or not isinstance(y_pred, dict):
            return y
        y = dict(y) if isinstance(y, dict) else {"logits": y}
        for name, value in y_pred.items():
            y.setdefault(name, value)
        return y

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        return super().compute_loss(
            x, self._all_targets(y, y_pred), y_pred, sample_weight, training
        )

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(
            x, self._all_targets(y, y_pred), y_pred, sample_weight
        )

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "model": self.model,
            "score": self.score,
            "cell": self.cell,
            "bidirectional": self.bidirectional,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "encoder_layers": self.encoder_layers,
            "decoder_layers": self.decoder_layers,
            "dropout": self.dropout,
            "attention_units": self.attention_units,
            "bridge": self.bridge,
            "bridge_dropout": self.bridge_dropout,
            "attend_source_end": self.attend_source_end,
            "unattended_source_ids": list(self.unattended_source_ids),
            "attention_keys": self.attention_keys,
            "attention_values": self.attention_values,
            "alignment_head": self.alignment_head,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
