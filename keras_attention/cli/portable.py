"""`--model` as a LiteRT (`.tflite`) or ONNX (`.onnx`) translator.

`PortableDecoder` runs the model through `keras_attention.portable` (its
vocabularies beside it, `<stem>.vocab.json`): greedy search and beam
search, the decoders its graph holds. It needs the runtime only
(`ai-edge-litert` or `onnxruntime`), not TensorFlow.
"""

from typing import List

from keras_attention.cli.errors import CliError
from keras_attention.cli.errors import one_line
from keras_attention.cli.decoder import Decoder
from keras_attention.cli.decoder import Hypotheses

SUFFIXES = (".tflite", ".onnx")


def is_portable(path: str) -> bool:
    """Whether `path` names a LiteRT or ONNX model file."""
    return path.lower().endswith(SUFFIXES)


class PortableDecoder(Decoder):
    """Decodes with a LiteRT or ONNX translator."""

    def __init__(self, path: str, strategy: str, options: dict):
        kind = "a LiteRT" if path.lower().endswith(".tflite") else "an ONNX"
        if strategy not in ("greedy", "beam"):
            raise CliError(
                f"{kind} model decodes with greedy or beam search only; "
                f"--{'n-best' if strategy == 'nbest' else 'sample'} needs a "
                ".keras model, a run directory or a SavedModel"
            )
        if options.get("max_length") is not None:
            raise CliError(
                f"--max-length works with .keras models only: {kind} "
                "model's longest output is fixed when it is exported"
            )
        from keras_attention.portable import load

        try:
            self.translator = load(path)
        except (ValueError, ImportError, RuntimeError) as e:
            raise CliError(f"--model {path}: {one_line(e, 400)}") from None
        width = options.get("beam_width") or 0 if strategy == "beam" else 0
        try:
            self.beam_width = self.translator.check_beam_width(width)
        except ValueError:
            raise CliError(
                f"{kind} model decodes with at most "
                f"{self.translator.max_beam_width} beams; got {width}"
            ) from None

    def decode(self, texts: List[str]) -> List[Hypotheses]:
        self._warn_about_texts(texts)
        results = self.translator.translate(texts, beam_width=self.beam_width)
        return [[(r["translation"], r["score"])] for r in results]

    def _warn_about_texts(self, texts: List[str]) -> None:
        """The library's warnings about blank and over-long texts, from
        the client's token counts; the translator's modules (and Keras)
        are imported only when there is one to give."""
        from keras_attention.portable.client import MAX_INPUT_CHARS

        counts = self.translator.token_counts(texts)
        room = self.translator.room
        if all(
            0 < n <= room and len(text) <= MAX_INPUT_CHARS
            for n, text in zip(counts, texts)
        ):
            return
        from keras_attention.cli.launch import stderr_silenced

        # Keras is first imported here when the command line runs without
        # it (`launch.run_portable`): as quietly as at a usual start.
        with stderr_silenced():
            from keras_attention.translator import translating

        translating.warn_about_texts(texts, counts, room, stacklevel=4)
