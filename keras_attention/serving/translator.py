"""`TranslatorModule`: strings in, strings out, as a SavedModel.

TensorFlow: a `tf.Module` for `tf.saved_model.save`. It holds framed
source and target tokenizers and one trained `Seq2Seq` (or an ensemble),
and each `tf.function` goes from a batch of raw strings to translations
with TensorFlow ops only, through a decoder of `keras_attention.decoding`;
`export.export_saved_model` saves one signature per function.
"""

from typing import Any
from typing import Optional
from keras_attention.typing import Tensor

import keras
import tensorflow as tf

from keras_attention.seq2seq import tokens as text_lib
from keras_attention.serving import compilation
from keras_attention.serving import members as members_lib
from keras_attention.serving import serving_ops
from keras_attention.serving.compilation import XLA_CHOICES  # noqa: F401
from keras_attention.serving.compilation import inference_only
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import filter_logits
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import sample_decode
from keras_attention.serving.limits import LENGTH_PENALTY
from keras_attention.serving.limits import MAX_BEAM_WIDTH
from keras_attention.serving.limits import MAX_OUTPUT_TOKENS
from keras_attention.serving.limits import PREFIX_ROOM

_TEXT = tf.TensorSpec([None], tf.string, name="text")


def _int(name: str):
    return tf.TensorSpec([], tf.int32, name=name)


def _clamp(width: int):
    return tf.clip_by_value(width, 1, MAX_BEAM_WIDTH)


def _check_text(text: Tensor) -> Tensor:
    """`text` at run time of shape `(batch,)`. A loaded signature takes a
    `text` of any rank: the others fail here, at the call, with an error
    that names `text` and the shapes (`EnsureShape`), not deep inside."""
    return tf.ensure_shape(text, [None], name="text")


def _merge_copies(x: Tensor):
    """`(batch, k, ...)` -> `(batch * k, ...)`."""
    return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0))


def _split_copies(x: Tensor, k: int):
    """`(batch * k, ...)` -> `(batch, k, ...)`."""
    return tf.reshape(x, tf.concat([[-1, k], tf.shape(x)[1:]], axis=0))


class TranslatorModule(tf.Module):
    """Raw strings in, translations, tokens and attention out.

    Args:
        seq2seq: A trained `Seq2Seq`, or a sequence of them over the
            same vocabularies: an ensemble, whose step averages the members'
            probabilities (`keras_attention.decoding.ensemble_step`).
        source_processor: The source `Tokenizer`.
        target_processor: The target `Tokenizer`.
        max_output_tokens: Longest translation in tokens. Defaults to
            `MAX_OUTPUT_TOKENS`.
        length_penalty: GNMT `alpha` of beam search. Defaults to
            `LENGTH_PENALTY`.
        coverage_penalty: GNMT `beta` of beam search (`beam`, `nbest`,
            `complete`); `0` disables it. Defaults to `0.0`.
        convention: `"default"` or `"tfa"`: whether beam search counts the
            end token in the length penalty as we do or as TFA's
            `BeamSearchDecoder` (see
            `keras_attention.decoding.beam_search_decode`). Defaults to
            `"default"`.
        replace_unknown: Whether each `[UNK]` of an output is replaced by
            the source word with the highest attention. Defaults to
            `False`.
        xla: Which part of every signature is one XLA-compiled function
            (the SavedModel then needs XLA wherever it is served:
            TensorFlow's CPU and GPU builds have it, and it compiles once
            per input shape it meets). `"auto"`: `"decode"` wherever
            TensorFlow has XLA, the rule of `compilation.resolve_xla`.
            `None` (or `"none"`): none, plain TensorFlow ops. `"step"`: the decoder's step (target embedding, cell,
            attention, vocabulary projection); the loop stays TensorFlow
            ops: faster at small batches, where per-op overhead dominates,
            not at large ones. `"decode"`: everything between the token
            ids (the encoder, the whole decoding loop, at a static width of
            `max_output_tokens` columns); the tokenizers and the output
            formatting stay TensorFlow ops, so the string ops are never
            compiled; its inputs are padded to buckets of batch size and
            source length (`compilation.pad_batch`, `pad_source`), so
            a server compiles it a bounded number of times. The
            translations are those of `None`, to rounding
            (docs/benchmarks.md has the speeds). Defaults to `"auto"`.
    """

    def __init__(
        self,
        seq2seq: Any,
        source_processor: Any,
        target_processor: Any,
        max_output_tokens: int = MAX_OUTPUT_TOKENS,
        length_penalty: float = LENGTH_PENALTY,
        coverage_penalty: float = 0.0,
        convention: str = "default",
        replace_unknown: bool = False,
        xla: Optional[str] = "auto",
    ):
        super().__init__(name="translator")
        members = (
            list(seq2seq) if isinstance(seq2seq, (list, tuple)) else [seq2seq]
        )
        if not members:
            raise ValueError(
                "`seq2seq` must be a model or a non-empty sequence of "
                f"models. Received: seq2seq={seq2seq!r}"
            )
        self.seq2seq = members[0]
        self.members = members
        self.source_processor = source_processor
        self.target_processor = target_processor
        self.max_output_tokens = max_output_tokens
        self.length_penalty = length_penalty
        self.coverage_penalty = float(coverage_penalty)
        self.convention = convention
        self.replace_unknown = bool(replace_unknown)
        # The resolved part: `None`, "step" or "decode".
        self.xla = compilation.resolve_xla(xla)
        # The `sample` signature's random state, re-seeded by `seed >= 0`.
        self.seed_generator = keras.random.SeedGenerator(0)
        # Track the variables, not the Keras objects: saving a tracked Keras
        # model also traces and stores the model's own `serving_default`,
        # which the signatures here do not use (and which failed for the
        # step-wise model while `AttentionRNN` could not be traced with
        # unknown lengths).
        self.model_variables = [v.value for m in members for v in m.variables]
        self.seed_state = [self.seed_generator.state.value]

    def _trackable_children(self, save_type: str = "checkpoint", **kwargs: Any):
        # A SavedModel holds the Keras models' variables (`model_variables`),
        # not the models: Keras would trace and save each model's own
        # `serving_default`, unused here, whose custom-gradient ops make
        # `tf.saved_model.load` warn (checkpoints keep every child).
        children = super()._trackable_children(save_type, **kwargs)
        if save_type == "savedmodel":
            children = {
                name: child for name, child in children.items()
                if name not in ("seq2seq", "members")
            }
        return children

    # No autograph: the decoding loop is an explicit while loop and every
    # Python `if` here is on configuration, not on tensors.
    @tf.function(input_signature=[_TEXT], autograph=False)
    def translate(self, text: Tensor) -> Any:
        """Translates a batch of strings greedily.

        Returns:
            A dict: `translation` `(batch,)` string; `source_tokens`
            `(batch, S)` and `target_tokens` `(batch, L)` strings (padded
            with `""`, without `[START]`; the source ends with `[END]`, the
            target stops before it); `attention` `(batch, L, S)` float32,
            row `t` the weights used to emit target token `t`;
            `target_lengths` `(batch,)` int32; `scores` and `log_probs`
            `(batch,)` float32, the log-probability of the translation.
        """
        return self._run(text, greedy_decode)

    @tf.function(input_signature=[_TEXT, _int("beam_width")], autograph=False)
    def translate_beam(self, text: Tensor, beam_width: int) -> Any:
        """Translates a batch of strings with beam search.

        `beam_width` is clamped to `[1, MAX_BEAM_WIDTH]`; width 1 gives the
        greedy translations. Sentences are decoded independently of the
        rest of the batch.

        Returns:
            The outputs of `translate`, for the best hypothesis of each
            sentence; `scores` is its length-normalised score
            `log_probs / ((5 + n) / 6) ** length_penalty` (`n` tokens,
            `[END]` included), plus the coverage penalty when set, by which
            the beams were ranked.
        """
        return self._run(text, self._beam_decoder(_clamp(beam_width)))

    @tf.function(input_signature=[_TEXT, _int("k")], autograph=False)
    def translate_nbest(self, text: Tensor, k: int) -> Any:
        """The `k` best translations of each string: beam search of width
        `k`, clamped to `[1, MAX_BEAM_WIDTH]`.

        Returns:
            The outputs of `translate_beam` with a `k` axis after the batch
            axis, best first: `translation`, `scores`, `log_probs`,
            `target_lengths` `(batch, k)`, `target_tokens` `(batch, k, L)`,
            `attention` `(batch, k, L, S)`; `source_tokens` `(batch, S)`.
            `[:, 0]` is the `beam` signature's result at width `k`.
        """
        k = _clamp(k)
        options = self._beam_options()

        def decode(*inputs: Any, **more: Any) -> Any:
            return beam_search_nbest(*inputs, n_best=k, **options, **more)

        return self._run(text, decode, copies=k)

    @tf.function(
        input_signature=[
            _TEXT,
            tf.TensorSpec([], tf.float32, name="temperature"),
            _int("top_k"),
            tf.TensorSpec([], tf.float32, name="top_p"),
            tf.TensorSpec([], tf.int64, name="seed"),
        ],
        autograph=False,
    )
    def translate_sample(
        self,
        text: Tensor,
        temperature: float,
        top_k: int,
        top_p: float,
        seed: Optional[int],
    ) -> Any:
        """Draws one translation of each string.

        Every next token is drawn from the model's distribution with the
        logits divided by `temperature` (`<= 0`: greedy decoding), cut to
        the `top_k` most probable tokens (`<= 0`: no limit), then to the
        nucleus of probability `top_p` (`>= 1`: no limit). A `seed >= 0`
        gives the same draws for the same inputs; a negative `seed` a new
        draw at every call (from a random state variable of the module,
        which concurrent calls share).

        Returns:
            The outputs of `translate`; `scores` and `log_probs` are the
            log-probability of the drawn translation under the sampling
            distribution (after temperature and filtering).
        """
        state = self.seed_generator.state
        seeded = tf.cast(tf.stack([seed, tf.zeros_like(seed)]), state.dtype)
        # Runs before the draw: a tf.function orders the ops of one
        # variable as written.
        state.assign(tf.where(seed >= 0, seeded, state.value))

        def decode(step: Any, *inputs: Any, **more: Any) -> Any:
            def filtered(tokens: Tensor, state: Any) -> Any:
                log_probs, state, attention = step(tokens, state)
                logits = filter_logits(log_probs, temperature, top_k, top_p)
                return logits, state, attention

            return sample_decode(
                filtered,
                *inputs,
                seed=self.seed_generator,
                from_logits=True,
                **more,
            )

        return self._run(text, decode)

    @tf.function(
        input_signature=[
            _TEXT,
            tf.TensorSpec([None], tf.string, name="prefix"),
            _int("beam_width"),
        ],
        autograph=False,
    )
    def translate_complete(
        self, text: Tensor, prefix: Tensor, beam_width: int
    ) -> Any:
        """Translations that start with a given target prefix.

        `prefix[b]` is a raw target string, tokenized by the target
        processor (without `[END]`; `""`: no constraint); every hypothesis
        of sentence `b` starts with its tokens. A `prefix` of one string
        applies to every text. Beam search of width
        `beam_width` (clamped to `[1, MAX_BEAM_WIDTH]`; `1` is greedy
        decoding). The length limit leaves `PREFIX_ROOM` tokens after the
        prefix (within `max_output_tokens`).

        Returns:
            The outputs of `translate_beam`.
        """
        # One prefix for the whole batch, or one per text.
        text = _check_text(text)
        prefix = tf.broadcast_to(prefix, tf.shape(text))
        ids = self.target_processor.tokenize(prefix)[:, 1:-1]  # no START/END
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        # One column at least, for a batch of empty prefixes.
        ids = tf.concat(
            [
                tf.cast(ids.to_tensor(text_lib.PAD_ID), tf.int32),
                tf.fill([tf.shape(prefix)[0], 1], text_lib.PAD_ID),
            ],
            axis=1,
        )
        return self._run(
            text,
            self._beam_decoder(_clamp(beam_width)),
            prefix=(ids, lengths),
        )

    # ------------------------------------------------------------------

    def _beam_options(self):
        return {
            "length_penalty": self.length_penalty,
            "coverage_penalty": self.coverage_penalty,
            "convention": self.convention,
        }

    def _beam_decoder(self, width: int):
        options = self._beam_options()

        def decode(*inputs: Any, **more: Any) -> Any:
            return beam_search_decode(
                *inputs, beam_width=width, **options, **more
            )

        return decode

    def _step(self, decode: Any) -> tuple:
        """`members.decoder_step` of `decode`, its step checked to run
        for inference only and compiled alone under `xla="step"`."""
        model_step, options = members_lib.decoder_step(self.members, decode)

        def step(tokens: Tensor, state: Any) -> Any:
            outputs = model_step(tokens, state)
            inference_only()  # in the loop body's graph
            return outputs

        if self.xla == "step":
            step = tf.function(step, jit_compile=True, autograph=False)
        return step, options

    def _decode_ids(
        self, decode: Any, source_dense: Tensor, prefix: Any
    ) -> dict:
        """Token ids to a decoder's dict: encode, then `decode(step_fn,
        start, state, end, max_length, **options)`, where `options` hold
        the prefix and, for `xla="decode"`, the static output width."""
        state = members_lib.encode(self.members, source_dense)
        start = members_lib.start_tokens(source_dense)
        limit = members_lib.length_limits(source_dense)
        step, options = self._step(decode)
        options["forbidden_tokens"] = members_lib.FORBIDDEN_TOKENS
        if prefix is not None:
            ids, lengths = prefix
            limit = tf.maximum(limit, lengths + PREFIX_ROOM)
            options.update({"prefix": ids, "prefix_lengths": lengths})
        if self.xla == "decode":
            options["static_max_length"] = self.max_output_tokens
        max_length = tf.minimum(limit, self.max_output_tokens)
        decoded = decode(
            step, start, state, text_lib.END_ID, max_length,
            **options,
        )
        inference_only()
        return decoded

    def _run(
        self,
        text: Tensor,
        decode: Any,
        copies: int = None,
        prefix: Tensor = None,
    ):
        """The body of every signature: tokenize, encode, `decode(step_fn,
        start, state, end, max_length, **prefix)`, format the outputs.

        `copies` is `None`, or the number of hypotheses per sentence of a
        decoder whose outputs are `(batch, copies, ...)`.
        """
        text = _check_text(text)
        # An empty batch cannot go through the encoder RNN (TensorFlow's
        # loop cannot stack zero rows of an unknown shape): one extra empty
        # string is decoded with the batch and dropped from the results.
        num_texts = tf.shape(text)[0]
        padded_text = tf.concat([text, tf.constant([""])], axis=0)
        if self.xla == "decode":  # to the compiled batch sizes
            padded_text = compilation.pad_batch(text)
        source_ids = self.source_processor.tokenize(padded_text)
        source_dense = tf.cast(source_ids.to_tensor(text_lib.PAD_ID), tf.int32)
        source_length = tf.shape(source_dense)[1]
        if prefix is not None:
            ids, lengths = prefix
            # (`ids[:1]` would have no row for an empty batch.)
            prefix = (
                tf.concat(
                    [ids, tf.zeros([1, tf.shape(ids)[1]], ids.dtype)], axis=0
                ),
                tf.concat([lengths, [0]], axis=0),
            )
        decode_ids = self._decode_ids
        if self.xla == "decode":
            decode_ids = tf.function(
                decode_ids, jit_compile=True, autograph=False
            )
            source_dense = compilation.pad_source(source_dense)
            if prefix is not None:  # the padded batch's rows, too
                rows = tf.shape(source_dense)[0]
                ids, lengths = prefix
                prefix = (
                    compilation.pad_rows(compilation.pad_source(ids), rows),
                    compilation.pad_rows(lengths, rows),
                )
        decoded = decode_ids(decode, source_dense, prefix)
        decoded = {k: v[:num_texts] for k, v in decoded.items()}
        if decoded["attention"] is not None:  # the padded source's columns
            decoded["attention"] = decoded["attention"][..., :source_length]
        if copies is not None:
            decoded = {k: _merge_copies(v) for k, v in decoded.items()}
        outputs = serving_ops.format_outputs(
            decoded,
            text,
            source_ids[:num_texts],
            self.source_processor,
            self.target_processor,
            copies,
            self.replace_unknown,
        )
        if copies is not None:
            outputs = {
                k: v if k == "source_tokens" else _split_copies(v, copies)
                for k, v in outputs.items()
            }
        return outputs
