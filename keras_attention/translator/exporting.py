"""`Translator.export`: the string-to-string SavedModel of a translator.

TensorFlow: `keras_attention.serving.TranslatorModule` over the
model (or an ensemble of models with the same tokenizers) and the framed
tokenizers. On the JAX and PyTorch backends the translator's config and
weights go to a TensorFlow process, which exports it.
"""

from typing import Any
from typing import Optional
from typing import Sequence

import json
import os
import subprocess
import sys
import tempfile

import keras

# The formats of `Translator.export`, and the options of LiteRT's and ONNX's.
FORMATS = ("tf_saved_model", "litert", "onnx")
PORTABLE_OPTIONS = {
    "quantize",
    "max_output_tokens",
    "length_penalty",
    "coverage_penalty",
    "convention",
}
# The model's config (without its compilation) and the `Seq2Seq`'s weights,
# not a `.keras` file: another backend's optimizer state does not load into
# TensorFlow's.
_EXPORT_SCRIPT = """
import json, sys
import keras, keras_attention
with open(sys.argv[1], encoding="utf-8") as f:
    translator = keras.saving.deserialize_keras_object(json.load(f))
translator.seq2seq.load_weights(sys.argv[2])
translator.export(sys.argv[3], **json.loads(sys.argv[4]))
"""


def framing(translator: Any) -> tuple:
    """What ensemble members must share: both tokenizers (vocabularies
    included) and the framing."""
    serialize = keras.saving.serialize_keras_object
    return (
        serialize(translator.source_tokenizer),
        serialize(translator.target_tokenizer),
        translator.max_tokens,
        translator.source_end_token,
    )


def check_ensemble(
    translator: Any,
    ensemble: Sequence[Any],
    names: Optional[Sequence[str]] = None,
) -> None:
    """Raises a `ValueError` naming the members of `ensemble` whose
    tokenizers or framing differ from `translator`'s (their token ids would
    not mean the same words): by their `names` (run directories, say), else
    by their 0-based index."""
    first = framing(translator)
    names = list(names) if names is not None else [
        f"ensemble[{i}]" for i in range(len(ensemble))
    ]
    different = [
        name for name, member in zip(names, ensemble)
        if framing(member) != first
    ]
    if different:
        raise ValueError(
            "An ensemble needs members with the same vocabularies "
            "(tokenizers) and `max_tokens` as the first. Received members "
            f"that differ: {different}"
        )


def check_options(format: str, options: dict) -> None:
    """Raises a `ValueError` naming the `options` that `format` does not
    take (the SavedModel's `xla` for LiteRT, `quantize` for a SavedModel,
    ...)."""
    allowed = PORTABLE_OPTIONS if format in ("litert", "onnx") else None
    if allowed is None:
        wrong = sorted(set(options) & {"quantize"})
    else:
        wrong = sorted(set(options) - allowed)
    if wrong:
        raise ValueError(
            f"The {format} export takes no {wrong} option. Received: "
            f"format={format!r}, options={sorted(options)}"
        )


def export(
    translator: Any,
    path: str,
    ensemble: Sequence[Any] = (),
    format: str = "tf_saved_model",
    **options: Any,
) -> str:
    """Exports `translator` to `path` in `format` (`FORMATS`); returns
    `path`. With `ensemble` (more translators with the same tokenizers),
    the export decodes with all the models, averaging their
    probabilities. `options` go to `TranslatorModule` for a SavedModel,
    to `keras_attention.portable.convert.export_portable` for LiteRT and
    ONNX (`max_output_tokens`, when missing or `None`, is the
    translator's `max_tokens`).

    Raises:
        ValueError: for ensemble members whose tokenizers differ; for an
            ensemble, or options that are not JSON values, on a backend
            other than TensorFlow (the export crosses to a TensorFlow
            process).
        RuntimeError: if that process fails (its error output included).
    """
    ensemble = list(ensemble)
    check_ensemble(translator, ensemble)
    check_options(format, options)
    if options.get("max_output_tokens") is None:
        options["max_output_tokens"] = translator.max_tokens
    if keras.config.backend() == "tensorflow" and format != "tf_saved_model":
        from keras_attention.portable.convert import export_portable

        return export_portable(translator, path, format, ensemble, **options)
    if keras.config.backend() == "tensorflow":
        from keras_attention.serving import TranslatorModule
        from keras_attention.serving import export_saved_model

        source, target = translator.framed_tokenizers
        members = [translator.seq2seq] + [m.seq2seq for m in ensemble]
        module = TranslatorModule(
            members if ensemble else translator.seq2seq,
            source,
            target,
            **options,
        )
        return export_saved_model(module, path)
    if ensemble:
        raise ValueError(
            f"An ensemble exports on the TensorFlow backend only; this is "
            f"{keras.config.backend()}. Save the translators (`save`) and "
            "export them in a process with KERAS_BACKEND=tensorflow. "
            f"Received: {len(ensemble)} ensemble members"
        )
    try:
        encoded = json.dumps(dict(options, format=format))
    except TypeError as e:
        raise ValueError(
            f"On the {keras.config.backend()} backend, `export` options "
            f"must be JSON values (they go to a TensorFlow process): {e}"
        ) from None
    with tempfile.TemporaryDirectory() as tmp:
        config_path = os.path.join(tmp, "translator.json")
        with open(config_path, "w", encoding="utf-8") as f:
            config = keras.saving.serialize_keras_object(translator)
            config.pop("compile_config", None)  # no optimizer to carry
            json.dump(config, f)
        weights = os.path.join(tmp, "seq2seq.weights.h5")
        translator.seq2seq.save_weights(weights)
        env = dict(os.environ, KERAS_BACKEND="tensorflow")
        done = subprocess.run(
            [sys.executable, "-c", _EXPORT_SCRIPT, config_path, weights, path,
             encoded],
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode:
        raise RuntimeError(
            f"Exporting from the {keras.config.backend()} backend runs a "
            "TensorFlow process (KERAS_BACKEND=tensorflow), which failed:\n"
            + done.stderr[-3000:]
        )
    return path

