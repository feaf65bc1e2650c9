"""`PortableModule`: token ids in, decoded ids out, for LiteRT and ONNX.

TensorFlow: a `tf.Module` whose one function, `translate(source_ids,
beam_width)`, encodes a padded batch of source ids and decodes it with
greedy search (`beam_width <= 0`) or beam search (`beam_width >= 1`,
clamped to `MAX_BEAM_WIDTH`), both loops in the graph. The strings stay
outside: LiteRT's and ONNX's runtimes have no tensorflow-text ops, so
the export writes the vocabularies beside the model, and
`keras_attention.portable.client` turns strings into ids and back as the
SavedModel does. Traced inside `keras_attention.rnn.loops.portable_loops`,
the graph holds no TensorList ops, which LiteRT's converter cannot lower
for an unknown batch size.
"""

from typing import Any
from typing import Sequence
from keras_attention.typing import Tensor

import tensorflow as tf

from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import greedy_decode
from keras_attention.seq2seq import tokens as text_lib
from keras_attention.serving import members as members_lib
from keras_attention.serving.limits import MAX_BEAM_WIDTH

# The decoded outputs, each `(batch, ...)`, in the order of the graph.
OUTPUTS = ("tokens", "lengths", "scores", "log_probs", "attention")


class PortableModule(tf.Module):
    """Padded source ids in, greedy or beam-search outputs out.

    Args:
        members: The trained `Seq2Seq` models: one, or an ensemble over the
            same vocabularies (probabilities averaged,
            `keras_attention.decoding.ensemble_step`).
        max_output_tokens: Longest output in tokens; each sentence's limit
            is also `2 * source_length + 10` (`SOURCE_LENGTH_LIMIT`), as
            in the SavedModel.
        length_penalty: GNMT `alpha` of beam search.
        coverage_penalty: GNMT `beta` of beam search (`0`: none).
        convention: `"default"` or `"tfa"`, see `beam_search_decode`.
        greedy: Whether the graph holds the greedy decoder too
            (`beam_width <= 0`). Without it (ONNX: tf2onnx cannot convert
            a loop inside a condition), every `beam_width` runs beam search
            of width `max(beam_width, 1)`: width 1 gives the greedy
            tokens, attention and log-probabilities (with no coverage
            penalty), at a little more cost.
    """

    def __init__(
        self,
        members: Sequence[Any],
        max_output_tokens: int,
        length_penalty: float,
        coverage_penalty: float = 0.0,
        convention: str = "default",
        greedy: bool = True,
    ):
        super().__init__(name="portable_translator")
        self.greedy = bool(greedy)
        self.members = list(members)
        self.max_output_tokens = int(max_output_tokens)
        self.length_penalty = float(length_penalty)
        self.coverage_penalty = float(coverage_penalty)
        self.convention = convention
        self.model_variables = [
            v.value for m in self.members for v in m.variables
        ]

    def _trackable_children(self, save_type: str = "checkpoint", **kwargs):
        # The variables travel (`model_variables`), not the Keras models.
        children = super()._trackable_children(save_type, **kwargs)
        return {k: v for k, v in children.items() if k != "members"}

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="source_ids"),
            tf.TensorSpec([], tf.int32, name="beam_width"),
        ],
        autograph=False,
    )
    def translate(self, source_ids: Tensor, beam_width: Tensor) -> dict:
        """Decodes `source_ids` `(batch, S)` (framed by the source
        tokenizer, padded with `0`; at least one row).

        Returns:
            A dict: `tokens` `(batch, L)` int32 (after the end token: the
            end token), `lengths` `(batch,)` int32, `scores` and
            `log_probs` `(batch,)` float32, `attention` `(batch, L, S)`
            float32; see `keras_attention.decoding`.
        """
        source_ids = tf.ensure_shape(source_ids, [None, None])

        def greedy() -> tuple:
            return self._decode(source_ids, greedy_decode)

        def beam() -> tuple:
            width = tf.clip_by_value(beam_width, 1, MAX_BEAM_WIDTH)

            def decode(*inputs: Any, **options: Any) -> dict:
                return beam_search_decode(
                    *inputs,
                    beam_width=width,
                    length_penalty=self.length_penalty,
                    coverage_penalty=self.coverage_penalty,
                    convention=self.convention,
                    **options,
                )

            return self._decode(source_ids, decode)

        if self.greedy:
            outputs = tf.cond(beam_width <= 0, greedy, beam)
        else:
            outputs = beam()
        return dict(zip(OUTPUTS, outputs))

    def _decode(self, source_ids: Tensor, decode: Any) -> tuple:
        max_length = tf.minimum(
            members_lib.length_limits(source_ids), self.max_output_tokens
        )
        step, options = members_lib.decoder_step(self.members, decode)
        decoded = decode(
            step,
            members_lib.start_tokens(source_ids),
            members_lib.encode(self.members, source_ids),
            text_lib.END_ID,
            max_length,
            forbidden_tokens=members_lib.FORBIDDEN_TOKENS,
            **options,
        )
        return (
            tf.cast(decoded["tokens"], tf.int32),
            tf.cast(decoded["lengths"], tf.int32),
            tf.cast(decoded["scores"], tf.float32),
            tf.cast(decoded["log_probs"], tf.float32),
            tf.cast(decoded["attention"], tf.float32),
        )
