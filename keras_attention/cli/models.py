"""Loading what `--model` names: a `.keras` Translator, a run directory or
a SavedModel.

`load_translator` loads a `.keras` file (after `import keras_attention`,
which registers the classes) and checks it is a `Translator`, or the
translator of a run directory (one with run.json, as a recipe's `train`
writes it: `Translator.from_run`); `load_decoder` also takes an exported
SavedModel directory and returns a `Decoder` either way: `decode(texts)`
-> for each text, its hypotheses `(translation, score)`, best first.
"""

from typing import Any
from typing import List

import os

from keras_attention.cli.decoder import Decoder
from keras_attention.cli.decoder import Hypotheses
from keras_attention.cli.errors import CliError
from keras_attention.cli.errors import one_line



def is_saved_model(path: str) -> bool:
    """Whether `path` is a SavedModel directory."""
    return os.path.isfile(os.path.join(path, "saved_model.pb"))


def is_run_directory(path: str) -> bool:
    """Whether `path` is a run directory (it holds run.json)."""
    from keras_attention.training import run_dir

    return os.path.isfile(os.path.join(path, run_dir.RUN_CONFIG))


def load_translator(path: str, flag: str = "--model") -> Any:
    """The `Translator` of a `.keras` file or of a run directory.

    Raises:
        CliError: for a missing file, a directory that is neither a run
            nor a SavedModel, a file Keras cannot load, a model that is not
            a `Translator`, or a run that does not load (the reason named).
    """
    if not os.path.exists(path):
        raise CliError(f"{flag} {path}: no such file")
    if is_run_directory(path):
        from keras_attention.translator import Translator

        try:
            return Translator.from_run(path)
        except (ValueError, OSError) as e:
            raise CliError(f"{flag} {path}: {one_line(e, 400)}") from None
    if os.path.isdir(path):
        what = "an exported SavedModel" if is_saved_model(path) else (
            "a directory without run.json"
        )
        raise CliError(
            f"{flag} {path}: is {what}; this command needs a .keras "
            "Translator file (written by the train command) or a run "
            "directory"
        )
    import keras

    import keras_attention  # noqa: F401, registers the layers
    from keras_attention.translator import Translator

    try:
        model = keras.models.load_model(path)
    except Exception as e:  # noqa: BLE001, any unreadable file
        raise CliError(
            f"{flag} {path}: not a Keras model file Keras can load "
            f"({type(e).__name__}: {one_line(e, 200)})"
        ) from None
    if not isinstance(model, Translator):
        raise CliError(
            f"{flag} {path}: holds a {type(model).__name__}, not a "
            "keras_attention Translator"
        )
    return model


# Texts this short are never cut (the library's `MAX_INPUT_CHARS` is
# larger: tests/test_cli_speed.py checks it).
NEVER_CUT = 200


def warn_about_texts(texts: List[str]) -> None:
    """The library's warnings about blank and over-long texts
    (`keras_attention.translator.translating.warn_about_texts`), for a
    client that sees only the texts; when every text is short and not
    blank, there is none to give, and the translator's modules are not
    imported."""
    if all(text.strip() and len(text) <= NEVER_CUT for text in texts):
        return
    from keras_attention.translator import translating

    translating.warn_about_texts(texts, stacklevel=3)


class TranslatorDecoder(Decoder):
    """Decodes with a `Translator` (`Translator.generate`)."""

    def __init__(self, translator: Any, strategy: str, options: dict):
        self.translator = translator
        self.strategy = strategy
        self.options = options

    def decode(self, texts: List[str]) -> List[Hypotheses]:
        results = self.translator.generate(
            texts, self.strategy, **self.options
        )
        if self.strategy == "nbest":
            return [list(zip(r["translations"], r["scores"])) for r in results]
        return [[(r["translation"], r["score"])] for r in results]


class SavedModelDecoder(Decoder):
    """Decodes with one signature of an exported SavedModel
    (`keras_attention.serving`), loaded with only what it runs
    (`keras_attention.cli.saved_model.Signature`)."""

    def __init__(self, path: str, strategy: str, options: dict):
        from keras_attention.cli import launch
        from keras_attention.cli.saved_model import Signature
        from keras_attention.cli.saved_model import keep_xla_compilations

        self.strategy = strategy
        if options.get("max_length") is not None:
            raise CliError(
                "--max-length works with .keras models only: a SavedModel's "
                "longest output is fixed when it is exported"
            )
        if strategy in ("beam", "nbest"):
            # Imported for beam search only: the package imports the
            # serving module's layers.
            from keras_attention.serving.limits import MAX_BEAM_WIDTH

            width = options.get("beam_width") or options.get("n_best") or 1
            if width > MAX_BEAM_WIDTH:
                raise CliError(
                    f"a SavedModel decodes with at most {MAX_BEAM_WIDTH} "
                    f"beams; got {width}"
                )
        if strategy == "nbest" and options["beam_width"] != options["n_best"]:
            raise CliError(
                "a SavedModel's n-best list is a beam search of --n-best "
                "beams: leave out --beam-width or make it equal to --n-best"
            )
        name = {"greedy": "serving_default"}.get(strategy, strategy)
        if launch.launched_as_cli():
            # An XLA export compiles once per machine, not once per process.
            keep_xla_compilations()
        self.signature = Signature(path, name)
        if strategy == "beam":
            self.arguments = {"beam_width": options["beam_width"]}
        elif strategy == "nbest":
            self.arguments = {"k": options["n_best"]}
        elif strategy == "sample":
            temperature = options.get("temperature")
            seed = options.get("seed")
            self.arguments = {
                "temperature": 1.0 if temperature is None else temperature,
                "top_k": options.get("top_k") or 0,
                "top_p": 1.0,
                "seed": -1 if seed is None else seed,
            }
        else:
            self.arguments = {}

    def decode(self, texts: List[str]) -> List[Hypotheses]:
        # The SavedModel answers a blank text with "" and cuts a long one:
        # the warnings are `Translator`'s, which the SavedModel cannot give.
        warn_about_texts(texts)
        import numpy as np

        out = self.signature(text=np.asarray(texts, object), **self.arguments)
        translations = out["translation"]
        scores = out["scores"]
        results = []
        for i in range(len(texts)):
            pairs = zip(
                np.asarray(translations[i]).reshape(-1),
                np.asarray(scores[i]).reshape(-1),
            )
            results.append([(t.decode("utf-8"), float(s)) for t, s in pairs])
        return results


def load_decoder(path: str, strategy: str, options: dict) -> Decoder:
    """A `Decoder` of the `.keras` file, the run directory, the
    SavedModel or the LiteRT or ONNX model at `path`."""
    from keras_attention.cli import portable

    if portable.is_portable(path):
        return portable.PortableDecoder(path, strategy, options)
    if os.path.isdir(path) and not is_run_directory(path):
        if not is_saved_model(path):
            raise CliError(
                f"--model {path}: a directory without saved_model.pb or "
                "run.json (neither an exported SavedModel nor a run)"
            )
        return SavedModelDecoder(path, strategy, options)
    translator = load_translator(path)
    options = {k: v for k, v in options.items() if v is not None}
    return TranslatorDecoder(translator, strategy, options)
