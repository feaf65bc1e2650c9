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
`[END]` (`tokens.py`). The model runs on every Keras backend. This module
makes the layers and holds the configuration and the training targets;
the forward pass over the layers (the encoder, the memory mask, the
teacher-forced decoder: the functional model's outputs) is in
`forward.py`, the decoding methods (`encode`, `step`, `generate`,
`align`) in `generation.py`.
"""

from typing import Any
from typing import Optional
from typing import Sequence
from keras_attention.typing import Tensor

import keras

from keras_attention.rnn import AttentionRNN
from keras_attention.rnn import AttentionWrapper
from keras_attention.rnn import AttentionalOutput
from keras_attention.rnn import LSTM
from keras_attention.seq2seq import layers as layers_lib
from keras_attention.seq2seq.forward import ForwardPass
from keras_attention.seq2seq.generation import Generation


# The constructor arguments, in order (`get_config`).
_ARGUMENTS = (
    "source_vocab_size",
    "target_vocab_size",
    "model",
    "score",
    "cell",
    "bidirectional",
    "embedding_dim",
    "units",
    "encoder_layers",
    "decoder_layers",
    "dropout",
    "attention_units",
    "bridge",
    "bridge_dropout",
    "attend_source_end",
    "unattended_source_ids",
    "attention_keys",
    "attention_values",
    "alignment_head",
)


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2Seq(ForwardPass, Generation, keras.Model):
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
        source_vocab_size: int,
        target_vocab_size: int,
        model: str = "luong",
        score: str = "general",
        cell: str = "lstm",
        bidirectional: bool = True,
        embedding_dim: int = 64,
        units: int = 128,
        encoder_layers: int = 1,
        decoder_layers: int = 1,
        dropout: float = 0.1,
        attention_units: Optional[int] = None,
        bridge: bool = True,
        bridge_dropout: float = 0.0,
        attend_source_end: bool = True,
        unattended_source_ids: Sequence[int] = (),
        attention_keys: str = "encoder",
        attention_values: str = "encoder",
        alignment_head: str = "off",
        **kwargs: Any,
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

        def rnn(n: Any, name: str) -> Any:
            return rnn_class(
                n, return_sequences=True, return_state=True, name=name
            )

        # === Layers ===
        self.source_embedding = keras.layers.Embedding(
            source_vocab_size,
            embedding_dim,
            mask_zero=True,
            name="source_embedding",
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocab_size,
            embedding_dim,
            mask_zero=True,
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
        self.attention = layers_lib.make_attention(
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
                keras.layers.LSTMCell
                if cell == "lstm"
                else keras.layers.GRUCell
            )
            cells = [
                cell_class(decoder_units, name=f"decoder_cell_{i}")
                for i in range(decoder_layers)
            ]
            self.wrapper = AttentionWrapper(
                cells[0]
                if len(cells) == 1
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
            if bridge and bridge_dropout
            else None
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

    def __setattr__(self, name: str, value: Any) -> None:
        # The layers are set before `Model.__init__` (the functional model
        # tracks them). On torch a Keras layer is a `torch.nn.Module`,
        # which refuses sub-modules before its `__init__`: set them plainly
        # (as KerasHub's backbones do).
        if keras.config.backend() == "torch" and "_modules" not in vars(self):
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)

    # ------------------------------------------------------------------
    # Training: targets for the outputs that train only.
    def _all_targets(self, y: Tensor, y_pred: Tensor):
        """`y` as a dict over every output: a tensor is the `"logits"`
        target; outputs without a target (no loss) get their prediction."""
        if y is None or not isinstance(y_pred, dict):
            return y
        y = dict(y) if isinstance(y, dict) else {"logits": y}
        for name, value in y_pred.items():
            y.setdefault(name, value)
        return y

    def compute_loss(
        self,
        x: Tensor = None,
        y: Tensor = None,
        y_pred: Tensor = None,
        sample_weight: Any = None,
        training: Optional[bool] = True,
    ) -> Tensor:
        return super().compute_loss(
            x, self._all_targets(y, y_pred), y_pred, sample_weight, training
        )

    def compute_metrics(
        self, x: Tensor, y: Tensor, y_pred: Tensor, sample_weight: Any = None
    ) -> dict:
        return super().compute_metrics(
            x, self._all_targets(y, y_pred), y_pred, sample_weight
        )

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable}
        config.update({name: getattr(self, name) for name in _ARGUMENTS})
        config["unattended_source_ids"] = list(self.unattended_source_ids)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Any:
        return cls(**config)
