"""`evaluate --lexicon FILE`: a run's WER and PER on any lexicon.

    python -m examples.g2p evaluate --run runs/g2p \\
        --lexicon ../shared/data/cmudict-g2p/test.tsv

The file is read as `train --lexicon` reads one (`data.read_lexicon`:
`WORD<TAB>PHONES` lines, or CMUdict's own `WORD  PHONES`; stress digits
removed; malformed lines skipped and counted, the first of each reason
named by their numbers). A word on several lines has
several references: its hypothesis is scored against the closest one, as
on the run's own splits (`evaluate.evaluate`).
"""

import os

from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from examples.g2p import data as data_lib
from examples.g2p import evaluate as eval_lib
from keras_attention.training import run_dir as run_lib


def evaluate_lexicon(
    run_dir, path, saved_model=None, max_words=None,
    beam_width=DEFAULT_BEAM_WIDTH,
):
    """Scores a run's SavedModel (exported if missing) on a lexicon file.

    Args:
        run_dir: The run directory of `train`.
        path: The lexicon file.
        saved_model: SavedModel directory. Defaults to `RUN/export`.
        max_words: Score only the first words. Defaults to all.
        beam_width: Also score beam search of this width (0: greedy only).

    Returns:
        `{"greedy": metrics}`, plus `"beam"` when `beam_width` is
        positive, as `evaluate.evaluate_run`; each with `skipped` (the
        lines skipped on reading), `skip_reasons` and `skip_report` (the
        reasons with the numbers of the lines, `data.skip_report`).

    Raises:
        ValueError: if `run_dir` holds no run.
        CliError: if the file cannot be read or holds no usable entry
            (`data.read_lexicon`).
    """
    if not os.path.exists(os.path.join(run_dir, run_lib.RUN_CONFIG)):
        raise ValueError(
            f"No run.json in the run directory (train first). Received: "
            f"run_dir={run_dir!r}"
        )
    lexicon = data_lib.read_lexicon(path)
    if max_words is not None:
        lexicon.entries = dict(list(lexicon.entries.items())[:max_words])
    out = eval_lib.score_run(run_dir, lexicon, saved_model, beam_width)
    for metrics in out.values():
        metrics["skipped"] = lexicon.skipped
        metrics["skip_reasons"] = dict(lexicon.reasons)
        metrics["skip_report"] = data_lib.skip_report(lexicon)
    return out
