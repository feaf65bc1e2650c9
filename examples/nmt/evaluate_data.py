"""`evaluate --data FILE`: a run's metrics on any test set.

    python -m examples.nmt evaluate --run runs/fra --data test.tsv
    python -m examples.nmt evaluate --run runs/fra --data test.fr test.en
    python -m examples.nmt evaluate --run runs/fra --data tatoeba.txt \\
        --direction to-english

The test set is read as `train --data` reads its data (`data.load_corpus`:
an Anki/Tatoeba file, a two-column TSV, two line-aligned files, `.gz`
accepted, a byte-order mark and CRLF read; malformed lines are skipped and
counted, a line that is not UTF-8 is an error naming it), in the run's own
direction unless `--direction` says otherwise, and scored with the metrics
of `evaluate.evaluate` (BLEU, chrF, exact match; greedy and beam search).
No filtering by length: every pair of the file counts.
"""


from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from examples.nmt import data as data_lib
from examples.nmt import evaluate as eval_lib
from examples.nmt import run as run_lib
from examples.nmt.corpus import take


def evaluate_data(
    run_dir,
    paths,
    data_format="auto",
    direction=None,
    saved_model=None,
    max_examples=None,
    beam_width=DEFAULT_BEAM_WIDTH,
):
    """Metrics of a run's SavedModel (exported if missing) on a test set.

    Args:
        run_dir: The run directory of `train`.
        paths: One data file or two line-aligned files `[source, target]`.
        data_format: `"auto"`, `"anki"`, `"tsv"` or `"parallel"`.
        direction: For Anki files; defaults to the run's direction.
        saved_model: SavedModel directory. Defaults to `RUN/export`.
        max_examples: Score only the first pairs. Defaults to all.
        beam_width: Also score beam search of this width (0: greedy only).

    Returns:
        The metrics of `evaluate.evaluate` (greedy), with `beam` as in
        `evaluate.evaluate_run`, plus `skipped` (malformed lines) and
        `skip_reasons`.

    Raises:
        ValueError: if the files hold no usable pair.
        CliError: if a file is missing or a line is not UTF-8 (naming
            the file and the line).
    """
    data_config, text_config, _, _ = run_lib.load_run_config(run_dir)
    corpus = data_lib.load_corpus(
        paths, data_format=data_format,
        direction=direction or data_config.direction,
    )
    if len(corpus) == 0:
        raise ValueError(
            f"No usable sentence pairs in the test set: {corpus.skipped} "
            f"lines skipped ({dict(corpus.reasons)}). Received: "
            f"paths={list(paths) if not isinstance(paths, str) else paths}"
        )
    skipped, reasons = corpus.skipped, dict(corpus.reasons)
    if max_examples is not None:
        corpus = take(corpus, max_examples)
    metrics = eval_lib.score_run(
        run_dir, corpus, text_config, saved_model, beam_width
    )
    metrics["skipped"] = skipped
    metrics["skip_reasons"] = reasons
    return metrics
