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

import contextlib
import inspect

import keras

from keras_attention.rnn import AttentionRNN
from keras_attention.rnn import AttentionWrapper
from keras_attention.rnn import AttentionalOutput
from keras_attention.rnn import LSTM
from keras_attention.seq2seq import arguments as arguments_lib
from keras_attention.seq2seq import layers as layers_lib
from keras_attention.seq2seq.arguments import ALIGNMENT_HEADS  # noqa: F401
from keras_attention.seq2seq.arguments import PROJECTION_DTYPES  # noqa: F401
from keras_attention.seq2seq.arguments import ATTENTION_INPUTS  # noqa: F401
from keras_attention.seq2seq.arguments import CELLS  # noqa: F401
from keras_attention.seq2seq.arguments import MODELS  # noqa: F401
from keras_attention.seq2seq.arguments import SCORES  # noqa: F401
from keras_attention.seq2seq.arguments import STATEFUL_SCORES  # noqa: F401
from keras_attention.seq2seq.forward import ForwardPass
from keras_attention.seq2seq.generation import Generation
from keras_attention.seq2seq.targets import OutputTargets


@contextlib.contextmanager
def _dtype_policy_scope(policy: Any):
    """The global dtype policy set to `policy` meanwhile, so that every
    sublayer `Seq2Seq` makes (the RNN cells inside the wrappers, the
    layers of the functional graph) takes the model's policy. Keras keeps
    the global policy per thread."""
    saved = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(saved)


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2Seq(OutputTargets, ForwardPass, Generation, keras.Model):
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

    Every argument is checked before any layer is made
    (`Seq2Seq.check_arguments`). Integer arguments take Python or numpy
    integers (not bools, not floats); the configuration holds Python
    values. The model's dtype policy (`dtype=`, else the global policy)
    is every sublayer's and is part of `get_config`, so a `.keras` file
    reloads with the policy it was saved with.

    Args:
        source_vocab_size: Size of the source vocabulary, an integer >= 4:
            every vocabulary starts with the reserved tokens `[PAD] [UNK]
            [START] [END]` (ids 0 to 3; the memory mask reads `[END]`, id
            3, on the source side too).
        target_vocab_size: Size of the target vocabulary, an integer >= 4.
        model: `"luong"` (sequence-mode decoder, attention after it) or
            `"stepwise"` (`AttentionRNN` with input feeding). Defaults to
            `"luong"`.
        score: `"dot"`, `"general"`, `"additive"`, or, with
            `model="stepwise"` only (they are stateful), `"location"` and
            `"monotonic"`. Defaults to `"general"`.
        cell: `"lstm"` or `"gru"`. Defaults to `"lstm"`.
        bidirectional: Whether the encoder is bidirectional. Defaults to
            `True`.
        embedding_dim: Size of the embeddings, a positive integer.
            Defaults to `64`.
        units: Units of each encoder RNN (per direction), a positive
            integer. Defaults to `128`.
        encoder_layers: Stacked encoder RNNs, a positive integer. Defaults
            to `1`.
        decoder_layers: Stacked decoder RNNs, a positive integer. Defaults
            to `1`.
        dropout: Dropout rate, in `[0, 1)`. Defaults to `0.1`.
        attention_units: Hidden size of the additive, location and
            monotonic scores, a positive integer or `None` for the decoder
            units (the dot and general scores have none and ignore it).
            Defaults to `None`.
        bridge: Whether the encoder's final states initialise the decoder.
            Defaults to `True`.
        bridge_dropout: Share of training sentences whose decoder starts
            from zeros, in `[0, 1)` (without effect when `bridge=False`).
            Defaults to `0.0`.
        attend_source_end: Whether the attention may attend to the source
            `[END]`. Defaults to `True`.
        unattended_source_ids: Source ids never attended, integers in
            `[0, source_vocab_size)`. Defaults to `()`.
        attention_keys: `"encoder"` or `"embedding"` (`model="luong"`
            only; with `score="dot"`, `embedding_dim` must equal the
            decoder units). Defaults to `"encoder"`.
        attention_values: `"encoder"` or `"embedding"` (`model="luong"`
            only; not both `"embedding"` without the bridge, which would
            leave the encoder unused). Defaults to `"encoder"`.
        alignment_head: `"off"`, `"guided"` or `"lexical"` (`layers.py`).
            Defaults to `"off"`.
        projection_dtype: Where the vocabulary projection (the largest
            matmul of a step) computes: `"float32"` (always float32),
            `"policy"` (the model's compute dtype: bfloat16 under
            `mixed_bfloat16`), or `"auto"`: `"policy"` under a bfloat16
            policy (bfloat16 has float32's range), `"float32"` under
            any other. In bfloat16 the matmul reads the hidden states and
            the kernel in bfloat16, accumulates in float32 and rounds its
            result to bfloat16 (logits with bfloat16's 8 bits of
            precision); the `"logits"` output is cast to float32 either
            way, and the softmax and the loss run in float32. Under a
            mixed policy the kernel is stored in float32, under plain
            `"bfloat16"` in bfloat16. Defaults to `"auto"`; a
            configuration saved without it loads as `"float32"`, what
            those models did.
        **kwargs: `keras.Model` arguments: `name`, `trainable`, `dtype`
            (a dtype policy, e.g. `"mixed_bfloat16"`).

    Raises:
        ValueError: for an argument out of its domain (an unknown choice,
            a non-positive size, a rate outside `[0, 1)` or NaN, a
            vocabulary smaller than the reserved tokens, an unattended id
            outside the source vocabulary) or a combination the model does
            not support (a stateful score or an `"embedding"` attention
            input with the other decoder, the dot score over embedding keys
            of another size than the decoder's). The message names the
            argument, the expected and the received value.
        ArgumentTypeError: (a `TypeError` and a `ValueError`) for an
            argument of the wrong type (`units="8"`, `units=8.0`,
            `bidirectional="yes"`).

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
        projection_dtype: str = "auto",
        **kwargs: Any,
    ):
        given = locals()
        arguments = self.check_arguments(
            **{name: given[name] for name in _ARGUMENTS}
        )
        policy = keras.dtype_policies.get(kwargs.pop("dtype", None))
        # === Config ===
        for name, value in arguments.items():
            setattr(self, name, value)
        self.decoder_units = self.units * (2 if self.bidirectional else 1)
        # The functional model takes its own policy from the global one
        # too: it drops a `dtype` argument.
        with _dtype_policy_scope(policy):
            inputs, outputs = self._make_layers()
            super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    @classmethod
    def check_arguments(cls, **arguments: Any) -> dict:
        """The constructor arguments, checked, with the defaults filled in.

        The one place where the arguments of `Seq2Seq` are checked: the
        constructor calls it before it makes any layer, and so can code
        that holds the arguments before it builds a model (the examples'
        `ModelConfig`). An argument not given takes its default (from the
        constructor's signature); the vocabulary sizes, which have none,
        are checked only when given (and the range of
        `unattended_source_ids` with `source_vocab_size`).

        Args:
            **arguments: Constructor arguments by name.

        Returns:
            A dict of the arguments given or defaulted, in the order of the
            constructor, as Python values (`int`, `float`, `bool`, `str`,
            a tuple of ints).

        Raises:
            TypeError: for a name that is not an argument of `Seq2Seq`.
            ValueError, ArgumentTypeError: as the constructor
                (`Seq2Seq`'s `Raises:`).
        """
        return arguments_lib.check_arguments(_PARAMETERS, arguments)

    def _make_layers(self) -> tuple:
        """Makes the layers and wires the functional graph: `(inputs,
        outputs)` of the model."""
        rnn_class = LSTM if self.cell == "lstm" else keras.layers.GRU

        def rnn(n: Any, name: str) -> Any:
            return rnn_class(
                n, return_sequences=True, return_state=True, name=name
            )

        decoder_units = self.decoder_units
        # === Layers ===
        self.source_embedding = keras.layers.Embedding(
            self.source_vocab_size,
            self.embedding_dim,
            mask_zero=True,
            name="source_embedding",
        )
        self.target_embedding = keras.layers.Embedding(
            self.target_vocab_size,
            self.embedding_dim,
            mask_zero=True,
            name="target_embedding",
        )
        self.encoder_rnns = []
        for i in range(self.encoder_layers):
            layer = rnn(self.units, f"encoder_rnn_{i}")
            if self.bidirectional:
                layer = keras.layers.Bidirectional(
                    layer, merge_mode="concat", name=f"encoder_birnn_{i}"
                )
            self.encoder_rnns.append(layer)
        self.dropout_layer = keras.layers.Dropout(self.dropout, name="dropout")
        self.attention = layers_lib.make_attention(
            self.score, self.attention_units or decoder_units
        )
        self.output_projection = keras.layers.Dense(
            self.target_vocab_size,
            dtype=self._projection_policy(),
            name="logits",
        )
        if self.model == "luong":
            self.decoder_rnns = [
                rnn(decoder_units, f"decoder_rnn_{i}")
                for i in range(self.decoder_layers)
            ]
            self.attentional_output = AttentionalOutput(
                decoder_units, name="attentional_output"
            )
        else:
            cell_class = (
                keras.layers.LSTMCell
                if self.cell == "lstm"
                else keras.layers.GRUCell
            )
            cells = [
                cell_class(decoder_units, name=f"decoder_cell_{i}")
                for i in range(self.decoder_layers)
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
            self.alignment_head, decoder_units, self.target_vocab_size
        )
        self.bridge_dropout_layer = (
            layers_lib.BridgeDropout(
                self.bridge_dropout, name="bridge_dropout"
            )
            if self.bridge and self.bridge_dropout
            else None
        )

        # === Functional model ===
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        outputs = self._teacher_forced(source_ids, target_in)
        return {"source_ids": source_ids, "target_in": target_in}, outputs

    def __setattr__(self, name: str, value: Any) -> None:
        # The layers are set before `Model.__init__` (the functional model
        # tracks them). On torch a Keras layer is a `torch.nn.Module`,
        # which refuses sub-modules before its `__init__`: set them plainly
        # (as KerasHub's backbones do).
        if keras.config.backend() == "torch" and "_modules" not in vars(self):
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable}
        config.update({name: getattr(self, name) for name in _ARGUMENTS})
        config["unattended_source_ids"] = list(self.unattended_source_ids)
        # Configs saved before this key load under the global policy.
        config["dtype"] = keras.dtype_policies.serialize(self.dtype_policy)
        return config

    def _projection_policy(self) -> Optional[str]:
        """The vocabulary projection's dtype policy (`projection_dtype`):
        `None` for the model's own."""
        if self.projection_dtype == "policy":
            return None
        if self.projection_dtype == "auto":
            compute = keras.config.dtype_policy().compute_dtype
            if compute == "bfloat16":
                return None
        return "float32"

    @classmethod
    def from_config(cls, config: dict) -> Any:
        return cls(**{**arguments_lib.LEGACY_ARGUMENTS, **config})


# The constructor's arguments, in order (`get_config`), and their defaults:
# the signature is the one place they are written.
_PARAMETERS = {
    name: parameter
    for name, parameter in inspect.signature(
        Seq2Seq.__init__
    ).parameters.items()
    if name != "self" and parameter.kind is parameter.POSITIONAL_OR_KEYWORD
}
_ARGUMENTS = tuple(_PARAMETERS)
