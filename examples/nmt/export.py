"""SavedModel export of a trained translation model.

`TranslatorModule` is a `tf.Module` that holds the two `text.TextProcessor`s
(so the vocabulary files are SavedModel assets) and the Keras model (or an
ensemble of models), and whose functions go from a batch of raw strings to
the translations with TensorFlow ops only: tensorflow-text tokenization,
encoder, a decoder of `keras_attention.decoding` (a while loop over
`Seq2Seq.step`), detokenization.

`export_run` exports a trained run (to `RUN/export` by default);
`export_saved_model` saves a module with these signatures (see
docs/nmt.md, "Serving"):

- `serving_default`, `greedy` (`text`): greedy decoding;
- `beam` (`text`, `beam_width`): beam search;
- `nbest` (`text`, `k`): the `k` best hypotheses of each sentence;
- `sample` (`text`, `temperature`, `top_k`, `top_p`, `seed`): sampling;
- `complete` (`text`, `prefix`, `beam_width`): translations that start
  with a given target prefix.

The SavedModel loads in a fresh process with only TensorFlow and
tensorflow-text imported (`import tensorflow_text` registers the
tensorflow-text ops, which the graph uses):

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
from examples.nmt.translator import LENGTH_PENALTY  # noqa: F401
from examples.nmt.translator import MAX_BEAM_WIDTH  # noqa: F401
from examples.nmt.translator import MAX_OUTPUT_TOKENS
from examples.nmt.translator import PREFIX_ROOM  # noqa: F401
from examples.nmt.translator import TranslatorModule

# The signatures of `export_saved_model`: name -> module function.
SIGNATURES = {
    "serving_default": "translate",
    "greedy": "translate",
    "beam": "translate_beam",
    "nbest": "translate_nbest",
    "sample": "translate_sample",
    "complete": "translate_complete",
}


def export_saved_model(module, path):
    """Saves `module` with the signatures of `SIGNATURES`."""
    tf.saved_model.save(
        module,
        path,
        signatures={
            name: getattr(module, fn) for name, fn in SIGNATURES.items()
        },
    )
    return path


def load_signature(path, name):
    """The signature `name` of the SavedModel at `path`.

    Raises:
        ValueError: if the SavedModel has no such signature (it was
            exported by an older version).
    """
    import tensorflow_text  # noqa: F401, registers the tensorflow-text ops

    signatures = tf.saved_model.load(path).signatures
    if name not in signatures:
        raise ValueError(
            f"The SavedModel at {path!r} has no `{name}` signature (it was "
            "not written by `export_saved_model`): export the run again. "
            f"Received: signatures={sorted(signatures)}"
        )
    return signatures[name]


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

    def translate_fn(text):
        return beam(text=text, beam_width=width)

    return translate_fn


def _vocabularies(run_dir):
    """What must agree between ensemble members: the vocabulary files and
    the text settings."""
    text_config = run_lib.load_run_config(run_dir)[1]
    files = []
    for name in (run_lib.SOURCE_VOCAB, run_lib.TARGET_VOCAB):
        with open(run_lib.run_path(run_dir, name), encoding="utf-8") as f:
            files.append(f.read())
    return tuple(files), text_config


def check_same_vocabularies(run_dirs):
    """Raises a `ValueError` naming the runs whose vocabularies (or text
    settings) differ from the first run's."""
    first = _vocabularies(run_dirs[0])
    different = [r for r in run_dirs[1:] if _vocabularies(r) != first]
    if different:
        raise ValueError(
            "An ensemble needs runs with the same vocabularies and text "
            f"settings as the first run {run_dirs[0]!r}. Received runs that "
            f"differ: {different}"
        )


def export_run(
    run_dir,
    out=None,
    max_output_tokens=None,
    ensemble=(),
    coverage_penalty=0.0,
    replace_unknown=False,
    convention="default",
):
    """Exports the trained model of a run as a SavedModel.

    Args:
        run_dir: The run directory of `train`.
        out: SavedModel directory. Defaults to `RUN/export`.
        max_output_tokens: Longest translation in tokens. Defaults to
            `MAX_OUTPUT_TOKENS`.
        ensemble: More run directories, with the same vocabularies: the
            SavedModel decodes with all the models, averaging their
            probabilities. Defaults to `()`.
        coverage_penalty, replace_unknown, convention: Options of
            `TranslatorModule`.

    Returns:
        The SavedModel directory.

    Raises:
        ValueError: on ensemble runs whose vocabularies differ.
    """
    run_dirs = [run_dir] + list(ensemble)
    if len(run_dirs) > 1:
        check_same_vocabularies(run_dirs)
    seq2seq, source, target, _ = run_lib.load_trained(run_dir)
    members = [seq2seq] + [run_lib.load_trained(r)[0] for r in ensemble]
    module = TranslatorModule(
        members if len(members) > 1 else seq2seq, source, target,
        max_output_tokens=max_output_tokens or MAX_OUTPUT_TOKENS,
        coverage_penalty=coverage_penalty, convention=convention,
        replace_unknown=replace_unknown,
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
