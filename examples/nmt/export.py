"""SavedModel export of a trained NMT run.

`export_run` exports a run (to `RUN/export` by default) as the
string-to-string SavedModel of `keras_attention.serving`
(`TranslatorModule`, `export_saved_model`: the signatures are listed
there and in docs/nmt.md, "Serving").
"""

from examples.nmt import run as run_lib
from keras_attention.serving import MAX_OUTPUT_TOKENS
from keras_attention.serving import TranslatorModule
from keras_attention.serving import export_saved_model


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
    xla=None,
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
        coverage_penalty, replace_unknown, convention, xla: Options
            of `TranslatorModule`.

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
        replace_unknown=replace_unknown, xla=xla,
    )
    return export_saved_model(
        module, out or run_lib.run_path(run_dir, run_lib.EXPORT)
    )
