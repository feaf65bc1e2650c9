"""`Translator.export`: the string-to-string SavedModel of a translator.

TensorFlow: `keras_attention.serving.TranslatorModule` over the
model and the framed tokenizers. On the JAX and PyTorch backends the
translator's config and weights go to a TensorFlow process, which exports
it.
"""

from typing import Any

import json
import os
import subprocess
import sys
import tempfile

import keras

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


def export(translator: Any, path: str, **options: Any) -> str:
    """Exports `translator` to the SavedModel directory `path`; returns
    `path`. `options` go to `TranslatorModule`.

    Raises:
        ValueError: for options that are not JSON values on a backend other
            than TensorFlow (they cross to a TensorFlow process).
        RuntimeError: if that process fails (its error output included).
    """
    if keras.config.backend() == "tensorflow":
        from keras_attention.serving import TranslatorModule
        from keras_attention.serving import export_saved_model

        source, target = translator.framed_tokenizers
        module = TranslatorModule(
            translator.seq2seq,
            source,
            target,
            max_output_tokens=translator.max_tokens,
            **options,
        )
        return export_saved_model(module, path)
    try:
        encoded = json.dumps(options)
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
