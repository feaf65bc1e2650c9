"""Evaluation of a G2P model: word and phone error rates, monotonicity.

`evaluate` pronounces every word of a lexicon split with a `translate_fn`
(an exported SavedModel's signature, see `keras_attention.serving`) and scores
the first pronunciation against all references of the word (`metrics.py`);
`evaluate_run` does it with a run's SavedModel on the split training
stored in the run directory (`load_split`).
It also reports how monotonic the attention is: the share of phones whose
most attended letter is not left of the previous phone's (a G2P alignment
is nearly monotonic, so a good model's attention is near-diagonal).
"""

import os
import time

import numpy as np

from keras_attention.training import splits as splits_lib
from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from examples.g2p import data as data_lib
from examples.g2p import metrics as metrics_lib
from examples.g2p import train as train_lib
from keras_attention.training import run_dir as run_lib
from keras_attention import serving
from keras_attention.serving import translate_all


def monotonic_rate(results):
    """Share of target steps after the first whose argmax letter does not
    move left. `None` for results without two steps."""
    moves = kept = 0
    for r in results:
        # The last source token is [END]: letters only.
        attention = np.asarray(r["attention"])[:, :-1]
        if attention.shape[0] < 2 or attention.shape[1] == 0:
            continue
        peaks = attention.argmax(axis=1)
        moves += len(peaks) - 1
        kept += int(np.sum(np.diff(peaks) >= 0))
    return kept / moves if moves else None


def evaluate(translate_fn, lexicon, batch_size=256):
    """WER, PER (percent) and the monotonic rate of a lexicon split.

    Returns:
        The dict of `metrics.g2p_scores`, plus `monotonic_rate`,
        `decode_seconds` and `results` (the outputs of `translate_all`, one
        per word, in `lexicon.entries` order).
    """
    words = list(lexicon.entries)
    start = time.perf_counter()
    results = translate_all(translate_fn, words, batch_size)
    seconds = time.perf_counter() - start
    hypotheses = [r["translation"].split() for r in results]
    scores = metrics_lib.g2p_scores(
        hypotheses, [lexicon.entries[w] for w in words]
    )
    scores["monotonic_rate"] = monotonic_rate(results)
    scores["decode_seconds"] = seconds
    scores["results"] = results
    return scores


def evaluate_run(
    run_dir, split="test", saved_model=None, max_words=None,
    beam_width=DEFAULT_BEAM_WIDTH,
):
    """Scores a run's SavedModel (exported if missing) on one split
    (`load_split`).

    Returns:
        `{"greedy": metrics}`, plus `"beam"` when `beam_width` is positive.
    """
    lexicon = load_split(run_dir, split)
    if max_words is not None:
        lexicon.entries = dict(list(lexicon.entries.items())[:max_words])
    return score_run(run_dir, lexicon, saved_model, beam_width)


def load_split(run_dir, split, data_config=None):
    """The `Lexicon` of a run's split (`"train"`, `"validation"`, `"test"`).

    The validation and test splits are read from the files training wrote
    into the run directory (`data.lexicon_from_rows`), so the lexicon need
    not be there any more; the training split, and every split of a run
    written before those files, is made again from the run's data
    (`train.load_splits` of its data config, `data_config` or run.json's).

    Raises:
        ValueError: if the directory has no run.json.
    """
    if data_config is None:
        data_config = train_lib.load_configs(run_dir)[0]
    return splits_lib.load_split(
        run_dir, split, data_lib.lexicon_from_rows,
        lambda: train_lib.load_splits(data_config),
    )


def score_run(run_dir, lexicon, saved_model=None,
              beam_width=DEFAULT_BEAM_WIDTH):
    """Scores a run's SavedModel (`RUN/export`, exported if missing, or
    `saved_model`) on `lexicon`, greedy and, when `beam_width` is positive,
    with beam search: `{"greedy": metrics[, "beam": metrics]}`."""
    path = saved_model or run_lib.run_path(run_dir, run_lib.EXPORT)
    if not os.path.exists(os.path.join(path, "saved_model.pb")):
        path = train_lib.export_run(run_dir, path)
    out = {"greedy": evaluate(serving.load_saved_model(path), lexicon)}
    if beam_width:
        out["beam"] = evaluate(
            serving.load_saved_model(path, beam_width=beam_width), lexicon
        )
        out["beam"]["beam_width"] = beam_width
    return out


def format_metrics(metrics):
    """A small table of the greedy (and beam) figures."""
    lines = []
    for name, m in metrics.items():
        rate = m["monotonic_rate"]
        lines.append(
            f"{name:<7} words {m['words']:>6}  WER {m['wer']:6.2f} %  "
            f"PER {m['per']:5.2f} %  monotonic attention "
            + ("n/a" if rate is None else f"{100 * rate:5.1f} %")
            + f"  ({m['decode_seconds']:.1f} s)"
        )
    return "\n".join(lines)


def strip_results(metrics):
    """The metrics without the per-word results (for JSON)."""
    return {
        name: {k: v for k, v in m.items() if k != "results"}
        for name, m in metrics.items()
    }
