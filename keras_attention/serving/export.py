"""Saving and loading the string-to-string SavedModel of a `Seq2Seq`.

TensorFlow: `tf.saved_model`. `export_saved_model` saves a
`TranslatorModule` with these signatures (see docs/nmt.md, "Serving"):

- `serving_default`, `greedy` (`text`): greedy decoding;
- `beam` (`text`, `beam_width`): beam search;
- `nbest` (`text`, `k`): the `k` best hypotheses of each sentence;
- `sample` (`text`, `temperature`, `top_k`, `top_p`, `seed`): sampling;
- `complete` (`text`, `prefix`, `beam_width`): translations that start
  with a given target prefix.

The SavedModel loads in a fresh process with only TensorFlow imported (and
`tensorflow_text` where the tokenizers use its ops):

    import tensorflow as tf
    import tensorflow_text  # noqa: F401, registers the ops
    translator = tf.saved_model.load("runs/demo/export")
    out = translator.signatures["serving_default"](
        tf.constant(["vendredi 20 octobre 1933"]))
    out["translation"]  # [b"Friday, October 20, 1933"]
"""

from typing import Any
from typing import List
from typing import Sequence
from typing import Union
from keras_attention.typing import Tensor

import os

import tensorflow as tf

from keras_attention.checks.dependencies import require_text_ops
from keras_attention.training.run_dir import EXPORT

# The signatures of `export_saved_model`: name -> module function.
SIGNATURES = {
    "serving_default": "translate",
    "greedy": "translate",
    "beam": "translate_beam",
    "nbest": "translate_nbest",
    "sample": "translate_sample",
    "complete": "translate_complete",
}


def export_saved_model(module: Any, path: str) -> str:
    """Saves `module` with the signatures of `SIGNATURES`.

    The SavedModel is for inference: the gradient functions of the ops with
    a custom gradient (`keras_attention.LSTM`'s backward pass) are not saved
    (`experimental_custom_gradients=False`), which makes the export about a
    quarter faster; differentiating a loaded signature is not supported.
    """
    tf.saved_model.save(
        module,
        path,
        signatures={
            name: getattr(module, fn) for name, fn in SIGNATURES.items()
        },
        options=tf.saved_model.SaveOptions(
            experimental_custom_gradients=False
        ),
    )
    return path


def load_signatures(path: str, names: Sequence[str]) -> dict:
    """The signatures `names` of the SavedModel at `path`, from one load
    (the dict also keeps the loaded object, under `None`, so that the
    signatures' variables stay alive).

    Raises:
        ImportError: if tensorflow-text (the tokenizers' ops) is missing.
        ValueError: if no SavedModel loads from `path`, or it lacks one of
            the signatures (it was exported by an older version).
    """
    require_text_ops()
    try:
        loaded = tf.saved_model.load(path)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"No SavedModel could be loaded from {path!r}: {err}"
        ) from None
    missing = [name for name in names if name not in loaded.signatures]
    if missing:
        names = ", ".join(f"`{name}`" for name in missing)
        raise ValueError(
            f"The SavedModel at {path!r} has no {names} signature (it was "
            "not written by `export_saved_model`): export the model again. "
            f"Received: signatures={sorted(loaded.signatures)}"
        )
    signatures = {name: loaded.signatures[name] for name in names}
    signatures[None] = loaded
    return signatures


def load_signature(path: str, name: str) -> Any:
    """The signature `name` of the SavedModel at `path`
    (`load_signatures`)."""
    return load_signatures(path, [name])[name]


def load_saved_model(path: str, beam_width: int = None) -> Any:
    """Loads an exported translator.

    Args:
        path: The SavedModel directory.
        beam_width: `None` or `0`: greedy decoding (the `serving_default`
            signature); a positive integer: the `beam` signature with this
            width.

    Returns:
        A function `text (batch,) string tensor -> dict of outputs`.
    """
    if beam_width is not None and (
        isinstance(beam_width, bool)
        or not isinstance(beam_width, int)
        or beam_width < 0
    ):
        raise ValueError(
            "`beam_width` must be None or a non-negative integer (0: greedy). "
            f"Received: beam_width={beam_width!r}"
        )
    if not beam_width:
        return load_signature(path, "serving_default")
    beam = load_signature(path, "beam")
    width = tf.constant(beam_width, tf.int32)

    def translate_fn(text: Tensor) -> Any:
        return beam(text=text, beam_width=width)

    return translate_fn


def resolve_saved_model(path: str) -> str:
    """The SavedModel directory `path`, or `path/export` for a run directory.

    Raises:
        ValueError: if neither holds a SavedModel.
    """
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    candidate = os.path.join(path, EXPORT)
    if os.path.exists(os.path.join(candidate, "saved_model.pb")):
        return candidate
    raise ValueError(
        f"No SavedModel at {path!r} or {candidate!r}: export the model "
        f"first (`Translator.export`, `export_saved_model`). Received: "
        f"path={path!r}"
    )


def _token_str(token: Union[bytes, str]):
    return token.decode("utf-8") if isinstance(token, bytes) else str(token)


def translate_all(
    translate_fn: Any, sources: Sequence[str], batch_size: int = 256
) -> List[dict]:
    """Runs a `serving_default`-like function over a list of strings.

    Returns:
        A list of dicts (one per sentence) of numpy values: `translation`
        (str), `source_tokens`, `target_tokens` (lists of str, unpadded)
        and `attention` `(T, S)`.
    """
    results = []
    for i in range(0, len(sources), batch_size):
        out = translate_fn(tf.constant(sources[i : i + batch_size]))
        out = {k: v.numpy() for k, v in out.items()}
        for j in range(len(out["translation"])):
            src = [_token_str(t) for t in out["source_tokens"][j]]
            src = [t for t in src if t]
            length = int(out["target_lengths"][j])
            tgt = [_token_str(t) for t in out["target_tokens"][j][:length]]
            results.append(
                {
                    "translation": _token_str(out["translation"][j]),
                    "source_tokens": src,
                    "target_tokens": tgt,
                    "attention": out["attention"][j][:length, : len(src)],
                }
            )
    return results
