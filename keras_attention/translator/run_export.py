"""`export_run`: the SavedModel of a run directory's translator, alone or
as an ensemble with other runs (`Translator.from_run`, `Translator.export`).
"""

from typing import Any
from typing import Optional
from typing import Sequence

from keras_attention.training import run_dir as run_dir_lib
from keras_attention.translator.exporting import export
from keras_attention.translator.exporting import check_ensemble
from keras_attention.translator.translator import Translator


def export_run(
    run_dir: str,
    path: Optional[str] = None,
    ensemble: Sequence[str] = (),
    **options: Any,
) -> str:
    """Exports the translator of a run directory (`Translator.from_run`)
    to the SavedModel directory `path` (default: the run's `export/`);
    returns `path`.

    Args:
        run_dir: The run directory.
        path: The SavedModel directory. Defaults to `RUN/export`.
        ensemble: More run directories with the same tokenizers, decoded
            together with this one (their probabilities averaged).
        **options: Options of `TranslatorModule` (`max_output_tokens`,
            `coverage_penalty`, `convention`, `replace_unknown`, `xla`).

    Raises:
        ValueError: for a run that cannot be loaded, or ensemble runs whose
            tokenizers differ (the run directories named).
    """
    translator = Translator.from_run(run_dir)
    members = [Translator.from_run(r) for r in ensemble]
    check_ensemble(translator, members, names=ensemble)
    path = path or run_dir_lib.run_path(run_dir, run_dir_lib.EXPORT)
    return export(translator, path, ensemble=members, **options)
