"""SavedModel export of a trained translation model.

`TranslatorModule` is a `tf.Module` that holds the two `text.TextProcessor`s
(so the vocabulary files are SavedModel assets) and the Keras model, and
whose `translate` function goes from a batch of raw strings to the
translations with TensorFlow ops only: tensorflow-text tokenization,
encoder, greedy decoding (`keras_attention.decoding.greedy_decode`, a
while loop over `Seq2Seq.step`), detokenization; `translate_beam` is the
same with beam search (`keras_attention.decoding.beam_search_decode`) of a
width given as an input.

`export_run` exports a trained run (to `RUN/export` by default);
`export_saved_model` saves a module with three signatures: `serving_default` and
`greedy` (both `translate`, input `text`) and `beam` (`translate_beam`,
inputs `text` and `beam_width`). The SavedModel loads in a fresh process
with only TensorFlow and tensorflow-text imported (`import tensorflow_text`
registers the tensorflow-text ops, which the graph uses):

    import tensorflow as tf
    import tensorflow_text  # noqa: F401, registers the ops
    translator = tf.saved_model.load("runs/demo/export")
    out = translator.signatures["serving_default"](
        tf.constant(["vendredi 20 octobre 1933"]))
    out["translation"]  # [b"Friday, October 20, 1933"]
    out = translator.signatures["beam"](
        text=tf.constant(["vendredi 20 octobre 1933"]),
        beam_width=tf.constant(4))
"""

import os

import tensorflow as tf

from examples.nmt import run as run_lib
from examples.nmt import text as text_lib
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import greedy_decode

# Longest translation, in target tokens (`[END]` included). Each sentence is
# also limited to `2 * source_tokens + 10` (both decoders).
MAX_OUTPUT_TOKENS = 64
# Beam widths of the `beam` signature are clamped to [1, MAX_BEAM_WIDTH], so
# one request cannot allocate `batch * width * vocab` scores without bound.
MAX_BEAM_WIDTH = 16
# GNMT length penalty alpha of beam search (`score = log P / lp(|Y|)`).
LENGTH_PENALTY = 0.6


def _strip_after_end(tokens):
    """Mask `(batch, L)`: True before the first `[END]`."""
    is_end = tf.cast(tf.equal(tokens, text_lib.END_ID), tf.int32)
    return tf.equal(tf.cumsum(is_end, axis=1), 0)


class TranslatorModule(tf.Module):
    """Raw strings in, translations, tokens and attention out.

    Args:
        seq2seq: A trained `model.Seq2Seq`.
        source_processor: `text.TextProcessor` of the source side.
        target_processor: `text.TextProcessor` of the target side.
        max_output_tokens: Longest translation in tokens. Defaults to
            `MAX_OUTPUT_TOKENS`.
        length_penalty: GNMT `alpha` of beam search. Defaults to
            `LENGTH_PENALTY`.
    """

    def __init__(
        self,
        seq2seq,
        source_processor,
        target_processor,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        length_penalty=LENGTH_PENALTY,
    ):
        super().__init__(name="translator")
        self.seq2seq = seq2seq
        self.source_processor = source_processor
        self.target_processor = target_processor
        self.max_output_tokens = max_output_tokens
        self.length_penalty = length_penalty
        # Track the model's variables, not the Keras model itself: saving a
        # tracked Keras model also traces and stores the model's own
        # `serving_default`, which the signatures here do not use (and which
        # failed for the step-wise model while `AttentionRNN` could not be
        # traced with unknown lengths).
        self.model_variables = [
            v.value for v in seq2seq.training_model.variables
        ]

    # No autograph: the decoding loop is an explicit while loop and every
    # Python `if` here is on configuration, not on tensors.
    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string, name="text")],
        autograph=False,
    )
    def translate(self, text):
        """Translates a batch of strings.

        Returns:
            A dict: `translation` `(batch,)` string; `source_tokens`
            `(batch, S)` and `target_tokens` `(batch, L)` strings (padded
            with `""`, without `[START]`; the source ends with `[END]`, the
            target stops before it); `attention` `(batch, L, S)` float32,
            row `t` the weights used to emit target token `t`;
            `target_lengths` `(batch,)` int32; `scores` and `log_probs`
            `(batch,)` float32, the log-probability of the translation.
        """
        return self._translate(text, beam_width=None)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text"),
            tf.TensorSpec([], tf.int32, name="beam_width"),
        ],
        autograph=False,
    )
    def translate_beam(self, text, beam_width):
        """Translates a batch of strings with beam search.

        `beam_width` is clamped to `[1, MAX_BEAM_WIDTH]`; width 1 gives the
        greedy translations. Sentences are decoded independently of the
        rest of the batch.

        Returns:
            The outputs of `translate`, for the best hypothesis of each
            sentence; `scores` is its length-normalised score
            `log_probs / ((5 + n) / 6) ** length_penalty` (`n` tokens,
            `[END]` included), by which the beams were ranked.
        """
        width = tf.clip_by_value(beam_width, 1, MAX_BEAM_WIDTH)
        return self._translate(text, beam_width=width)

    def _translate(self, text, beam_width):
        """The body of both signatures; `beam_width=None` decodes greedily."""
        # An empty batch cannot go through the encoder RNN (TensorFlow's
        # loop cannot stack zero rows of an unknown shape): one extra empty
        # string is decoded with the batch and dropped from the results.
        num_texts = tf.shape(text)[0]
        text = tf.concat([text, tf.constant([""])], axis=0)
        source_ids = self.source_processor.tokenize(text)
        source_dense = tf.cast(source_ids.to_tensor(text_lib.PAD_ID), tf.int32)
        state = self.seq2seq.encode(source_dense)
        batch = tf.shape(source_dense)[0]
        start = tf.fill([batch], tf.constant(text_lib.START_ID, tf.int32))
        source_lengths = tf.reduce_sum(
            tf.cast(source_dense != text_lib.PAD_ID, tf.int32), axis=1
        )
        max_length = tf.minimum(2 * source_lengths + 10, self.max_output_tokens)
        if beam_width is None:
            decoded = greedy_decode(
                self.seq2seq.step, start, state, text_lib.END_ID, max_length
            )
        else:
            # The state is not tiled: beam search tiles it itself.
            decoded = beam_search_decode(
                self.seq2seq.step,
                start,
                state,
                text_lib.END_ID,
                max_length,
                beam_width=beam_width,
                length_penalty=self.length_penalty,
            )
        decoded = {k: v[:num_texts] for k, v in decoded.items()}
        source_ids = source_ids[:num_texts]
        tokens = tf.cast(decoded["tokens"], tf.int32)
        keep = _strip_after_end(tokens)
        lengths = tf.reduce_sum(tf.cast(keep, tf.int32), axis=1)
        max_len = tf.reduce_max(tf.concat([lengths, [0]], axis=0))
        tokens = tokens[:, :max_len]
        keep = keep[:, :max_len]
        attention = tf.cast(decoded["attention"][:, :max_len], tf.float32)
        attention = tf.where(keep[:, :, None], attention, 0.0)
        target_strings = tf.where(
            keep, self.target_processor.token_strings(tokens), ""
        )
        source_strings = self.source_processor.token_strings(
            source_ids
        ).to_tensor("")
        attention = attention[:, :, : tf.shape(source_strings)[1]]
        return {
            "translation": self.target_processor.detokenize(tokens),
            "source_tokens": source_strings,
            "target_tokens": target_strings,
            "attention": attention,
            "target_lengths": lengths,
            "scores": tf.cast(decoded["scores"], tf.float32),
            "log_probs": tf.cast(decoded["log_probs"], tf.float32),
        }


def export_saved_model(module, path):
    """Saves `module` with the signatures `serving_default` and `greedy`
    (`translate`) and `beam` (`translate_beam`)."""
    tf.saved_model.save(
        module,
        path,
        signatures={
            "serving_default": module.translate,
            "greedy": module.translate,
            "beam": module.translate_beam,
        },
    )
    return path


def load_saved_model(path, beam_width=None):
    """Loads an exported translator.

    Args:
        path: The SavedModel directory.
        beam_width: `None` or `0`: greedy decoding (the `serving_default`
            signature); a positive integer: the `beam` signature with this
            width.

    Returns:
        A function `text (batch,) string tensor -> dict of outputs`.
    """
    import tensorflow_text  # noqa: F401, registers the tensorflow-text ops

    if beam_width is not None and (
        isinstance(beam_width, bool)
        or not isinstance(beam_width, int)
        or beam_width < 0
    ):
        raise ValueError(
            "`beam_width` must be None or a non-negative integer (0: greedy). "
            f"Received: beam_width={beam_width!r}"
        )
    signatures = tf.saved_model.load(path).signatures
    if not beam_width:
        return signatures["serving_default"]
    if "beam" not in signatures:
        raise ValueError(
            f"The SavedModel at {path!r} has no `beam` signature (it was "
            "not written by `export_saved_model`): export the run again. "
            f"Received: signatures={sorted(signatures)}"
        )
    beam = signatures["beam"]
    width = tf.constant(beam_width, tf.int32)

    def translate_fn(text):
        return beam(text=text, beam_width=width)

    return translate_fn


def export_run(run_dir, out=None, max_output_tokens=None):
    """Exports the trained model of a run as a SavedModel.

    Args:
        run_dir: The run directory of `train`.
        out: SavedModel directory. Defaults to `RUN/export`.
        max_output_tokens: Longest translation in tokens. Defaults to
            `MAX_OUTPUT_TOKENS`.

    Returns:
        The SavedModel directory.
    """
    seq2seq, source, target, _ = run_lib.load_trained(run_dir)
    module = TranslatorModule(
        seq2seq, source, target,
        max_output_tokens=max_output_tokens or MAX_OUTPUT_TOKENS,
    )
    return export_saved_model(
        module, out or run_lib.run_path(run_dir, run_lib.EXPORT)
    )


def resolve_saved_model(path):
    """The SavedModel directory `path`, or `path/export` for a run directory.

    Raises:
        ValueError: if neither holds a SavedModel.
    """
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    candidate = run_lib.run_path(path, run_lib.EXPORT)
    if os.path.exists(os.path.join(candidate, "saved_model.pb")):
        return candidate
    raise ValueError(
        f"No SavedModel at {path!r} or {candidate!r}: run the export "
        f"sub-command first. Received: path={path!r}"
    )
