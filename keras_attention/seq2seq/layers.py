"""The small layers of `Seq2Seq` and its alignment heads.

`make_attention` (the attention of a score's name), `DropMask` and
`BridgeDropout` serve the encoder-decoder itself; the rest is the
alignment heads (`alignment_head` of `Seq2Seq`).

A second attention that `align` reads, beside the translation attention,
which is left as it is (docs/alignment.md):

- `guided`: trained by `--guided-alignment` alone, row `t` queried by
  `tanh(W [s_t; e(y_{t+1})])`, the decoder state that predicts target
  token `t + 1` and that token's embedding: an alignment knows the word it
  aligns (Zenkel et al., 2019). It serves `align` only, where the target
  is given. (Reading the predicted tokens with a bidirectional RNN over
  the whole target, as Garg et al., 2019, use the full target, gave the
  same AER: 11.7 against 11.8 %, benchmarks/results/2026-12-01-alignment.md.)
- `lexical`, unsupervised: `LexicalAlignment` below.

`make_head_layers` builds a head's layers (named as the weights files know
them), `head_outputs` wires them into the functional graph of `Seq2Seq`.

The lexical head is a neural IBM Model 1 on top of the decoder: at step `t`
an attention
`a_t = softmax_i(score(s_t, h_i))` over the source, queried by the decoder
state `s_t` as the translation attention is, and a lexical table
`p(y | x_i) = softmax(W e(x_i) + b)` from each source token's embedding
alone, give the word the step predicts the probability

    p(y_{t+1}) = sum_i a_ti p(y_{t+1} | x_i)

whose negative log-likelihood is a second training loss, next to the
translation's. The head cannot explain a word by a sentence summary: its
values are single source words, so to predict "coffee" it must attend to
"café" (Zenkel et al., 2019, "Adding Interpretable Attention to Neural
Translation Models Improves Word Alignment", predict the target word from
attended source embeddings; here as a mixture, so that the posterior is
exact). Alignment reads the posterior of the source word given the word
produced,

    P(i | y_{t+1}) = a_ti p(y_{t+1} | x_i) / p(y_{t+1}),

which knows the target word, as an alignment should, and needs no
reference links.
"""

from typing import Any
from typing import Optional
from keras_attention.typing import Shape
from keras_attention.typing import Tensor

import keras
from keras import ops

from keras_attention.layers import AdditiveAttention
from keras_attention.layers import DotAttention
from keras_attention.layers import (
    LocationSensitiveAttention,
)
from keras_attention.layers import BahdanauMonotonicAttention
from keras_attention.layers import MultiplicativeAttention


def make_attention(score: str, units: int) -> Any:
    """The attention layer of `score` (`units`: additive hidden size).

    Raises:
        ValueError: for a score that is not one of `Seq2Seq`'s.
    """
    if score == "dot":
        return DotAttention(name="attention")
    if score == "general":
        return MultiplicativeAttention(name="attention")
    if score == "additive":
        return AdditiveAttention(units=units, name="attention")
    if score == "location":
        return LocationSensitiveAttention(units=units, name="attention")
    if score == "monotonic":
        # The parallel (expected) alignment serves training and decoding:
        # without sigmoid noise in training, hard decoding would not match.
        return BahdanauMonotonicAttention(
            units=units, normalize=True, mode="parallel", name="attention"
        )
    raise ValueError(
        "`score` must be one of ('dot', 'general', 'additive', 'location', "
        f"'monotonic'). Received: score={score!r}"
    )


# Log-probability of a masked source position (finite: no NaN in the
# gradient of a row whose positions are all masked).
_MASKED = -1e9


@keras.saving.register_keras_serializable(package="keras_attention")
class DropMask(keras.layers.Layer):
    """Identity that removes the Keras mask."""

    def __init__(self, **kwargs: Any):
        # No autocast: the float32 logits stay float32 under mixed precision.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs: Tensor) -> Any:
        # A new tensor: the input tensor object itself carries the mask.
        return ops.copy(inputs)

    def compute_mask(self, inputs: Tensor, mask: Tensor = None) -> None:
        return None


@keras.saving.register_keras_serializable(package="keras_attention")
class BridgeDropout(keras.layers.Layer):
    """In training, zeroes the bridge (all its states) of a random share
    `rate` of the sentences: their decoder starts from zeros and can learn
    about the source only through the attention. Identity in inference.
    """

    def __init__(self, rate: float, seed: Optional[int] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, states: Tensor, training: Optional[bool] = False) -> Any:
        if not training:
            return [ops.copy(s) for s in states]
        batch = ops.shape(states[0])[0]
        draw = keras.random.uniform((batch, 1), seed=self.seed_generator)
        keep = ops.cast(ops.greater_equal(draw, self.rate), states[0].dtype)
        return [s * keep for s in states]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed})
        return config


@keras.saving.register_keras_serializable(package="keras_attention")
class LexicalAlignment(keras.layers.Layer):
    """The lexical table and the mixture of the head.

    Args:
        vocab_size: Target vocabulary size.
        uniform: Share of a uniform distribution over the attended source
            positions mixed into the attention (`(1 - u) a + u / S`), so
            that every source word's row of the table keeps learning while
            the attention is still sharp and wrong (IBM Model 1 learns its
            table under a uniform prior). Defaults to `0.5`.

    Call arguments:
        weights: `(batch, T, S)` attention of the head.
        source_embedded: `(batch, S, E)` source embeddings.
        predicted: `(batch, T)` int ids of the word each step predicts.
        source_mask: `(batch, S)` bool, the attended source positions.

    Returns:
        `(nll, posterior)`: `(batch, T)` negative log-likelihood of each
        predicted word under the mixture (float32), and the `(batch, T, S)`
        posterior over source positions (float32, 0 at masked positions).
    """

    def __init__(self, vocab_size: int, uniform: float = 0.5, **kwargs: Any):
        super().__init__(**kwargs)
        if not 0.0 <= uniform <= 1.0:
            raise ValueError(
                f"`uniform` must be in [0, 1]. Received: uniform={uniform}"
            )
        self.vocab_size = vocab_size
        self.uniform = uniform
        self.table = keras.layers.Dense(
            vocab_size, dtype="float32", name="lexical_table"
        )

    def build(
        self,
        weights_shape: Shape,
        source_embedded_shape: Shape,
        predicted_shape: Shape,
        source_mask_shape: Shape,
    ) -> None:
        self.table.build(source_embedded_shape)

    def call(
        self,
        weights: Tensor,
        source_embedded: Tensor,
        predicted: Tensor,
        source_mask: Tensor,
    ) -> Any:
        log_table = ops.log_softmax(
            self.table(ops.cast(source_embedded, "float32")), axis=-1
        )  # (batch, S, V)
        steps = ops.shape(predicted)[1]
        columns = ops.shape(log_table)[1]
        index = ops.broadcast_to(
            ops.expand_dims(ops.cast(predicted, "int32"), 1),
            (ops.shape(predicted)[0], columns, steps),
        )
        log_lexical = ops.transpose(
            ops.take_along_axis(log_table, index, axis=-1), (0, 2, 1)
        )  # (batch, T, S): log p(y_{t+1} | x_i)
        mask = ops.expand_dims(source_mask, 1)
        prior = ops.cast(weights, "float32")
        if self.uniform:
            count = ops.maximum(
                ops.sum(ops.cast(mask, "float32"), axis=-1, keepdims=True), 1.0
            )
            prior = (1.0 - self.uniform) * prior + self.uniform / count
        joint = ops.where(
            mask, ops.log(ops.maximum(prior, 1e-30)) + log_lexical, _MASKED
        )
        nll = -ops.logsumexp(joint, axis=-1)
        posterior = ops.where(mask, ops.softmax(joint, axis=-1), 0.0)
        return nll, posterior

    def compute_output_spec(
        self,
        weights: Tensor,
        source_embedded: Tensor,
        predicted: Tensor,
        source_mask: Tensor,
    ) -> tuple:
        shape = weights.shape
        return (
            keras.KerasTensor(shape[:2], dtype="float32"),
            keras.KerasTensor(shape, dtype="float32"),
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"vocab_size": self.vocab_size, "uniform": self.uniform})
        return config


def next_tokens(target_in: Tensor, end_id: Any) -> Tensor:
    """The token each position of `target_in` predicts (`target_out`),
    rebuilt from `target_in` alone: the row shifted left by one, `end_id`
    after the last token of a row that lost its `[END]` with the last
    column, zeros (padding) elsewhere."""
    shifted = ops.concatenate(
        [target_in[:, 1:], ops.zeros_like(target_in[:, :1])], axis=1
    )
    # The longest rows lost their [END] with the last column; shorter rows
    # keep theirs in `target_in`.
    last = ops.logical_and(
        ops.equal(shifted, 0),
        ops.logical_and(
            ops.not_equal(target_in, 0), ops.not_equal(target_in, end_id)
        ),
    )
    return ops.where(last, ops.cast(end_id, target_in.dtype), shifted)


def make_head_layers(head: str, units: int, target_vocab_size: int) -> dict:
    """The layers of alignment head `head` (`"off"`, `"guided"`,
    `"lexical"`), by name; `units` are the decoder's."""
    if head == "off":
        return {}
    if head not in ("guided", "lexical"):
        raise ValueError(
            "`alignment_head` must be one of ('off', 'guided', 'lexical'). "
            f"Received: alignment_head={head!r}"
        )
    layers = {
        "alignment_attention": MultiplicativeAttention(
            name="alignment_attention"
        )
    }
    if head == "lexical":
        layers["lexical_alignment"] = LexicalAlignment(
            target_vocab_size, name="lexical_alignment"
        )
    else:
        layers["alignment_query"] = keras.layers.Dense(
            units, activation="tanh", name="alignment_query"
        )
    return layers


def head_outputs(
    layers: Any,
    head: str,
    predicted: Tensor,
    decoded: Tensor,
    keys: Tensor,
    source_embedded: Tensor,
    source_mask: Tensor,
    embed: Any,
) -> tuple:
    """The head's `(aligned, nll)` on symbolic tensors.

    Args:
        layers: `make_head_layers`' dict.
        head: `"guided"` or `"lexical"`.
        predicted: `(batch, T)` ids of the token each step predicts
            (`next_tokens`).
        decoded: `(batch, T, D)` decoder states (the translation
            attention's queries).
        keys: `(batch, S, K)` the translation attention's keys.
        source_embedded: `(batch, S, E)` source embeddings.
        source_mask: `(batch, S)` bool, the attended source positions.
        embed: The target embedding (with dropout), ids -> vectors.

    Returns:
        `aligned (batch, T, S)`, the weights `align` reads, and the
        lexical head's `(batch, T)` negative log-likelihood (`None` for
        the guided head).
    """
    attention = layers["alignment_attention"]
    if head == "lexical":
        # Its loss reaches the shared states: detached from them the head
        # aligned worse (49.6 and 55.4 % AER on seeds 1 and 0, against 45.0
        # and 36.9 %), attached it costs translation quality
        # (docs/alignment.md).
        _, weights = attention(decoded, keys, value_mask=source_mask)
        nll, posterior = layers["lexical_alignment"](
            weights, source_embedded, predicted, source_mask
        )
        return posterior, nll
    word = embed(predicted)
    query = layers["alignment_query"](
        ops.concatenate([ops.cast(decoded, word.dtype), word], axis=-1)
    )
    _, weights = attention(query, keys, value_mask=source_mask)
    return weights, None


# The names the first `.keras` files carry (package "nmt"), as aliases, so
# that they load with `safe_mode=True`.
keras.saving.get_custom_objects().update(
    {
        "nmt>_DropMask": DropMask,
        "nmt>BridgeDropout": BridgeDropout,
        "nmt>LexicalAlignment": LexicalAlignment,
    }
)
