"""The last two steps of a recipe's demo.

Each demo trains, exports and decodes a few inputs of its own, then
`show_attention` prints the attention of the first ones as text grids and
saves their heatmaps (`RUN/attention.png`), and `evaluate_and_save` scores
the run's test split greedily and with beam search and writes the metrics
with the demo's total time to `RUN/metrics.json`.
"""

from typing import Any
from typing import Callable
from typing import Dict
from typing import Optional
from typing import Sequence
from typing import Tuple

import json
import os
import time

from keras_attention.recipes.decoding import save_heatmaps
from keras_attention.recipes.decoding import text_grid
from keras_attention.training import run_dir as run_lib


def show_attention(
    out: str,
    shown: Sequence[Tuple[str, Dict[str, Any]]],
    axes: str,
    log: Callable[[str], Any] = print,
) -> None:
    """Step 4: the grid of each `(input, result)` of `shown` and their
    heatmaps in `out/attention.png`; `axes` says what the rows and columns
    are."""
    log(f"\n== 4. attention ({axes})")
    for text, r in shown:
        log(f"\n{text}  ->  {r['translation']}")
        log(text_grid(r))
    png = save_heatmaps(shown, os.path.join(out, "attention.png"))
    log(f"\n   heatmaps -> {png}")


def evaluate_and_save(
    out: str,
    saved_model: Optional[str],
    evaluation: Any,
    beam_width: int,
    start: float,
    what: str,
    log: Callable[[str], Any] = print,
) -> Dict[str, Any]:
    """Step 5: the metrics of the run `out` on its test split (with the
    SavedModel `saved_model`), printed and written to `out/metrics.json`
    with the seconds since `start`; returns them (per-input results left
    out).

    `evaluation` is the recipe's evaluate module (`evaluate_run`,
    `format_metrics`, `strip_results`); `what` names the test inputs.
    """
    log(f"\n== 5. evaluate on the held-out test {what}")
    metrics = evaluation.evaluate_run(
        out, "test", saved_model, beam_width=beam_width
    )
    log(evaluation.format_metrics(metrics))
    summary = evaluation.strip_results(metrics)
    summary["total_seconds"] = time.time() - start
    with open(run_lib.run_path(out, run_lib.METRICS), "w") as f:
        json.dump(summary, f, indent=2)
    log(f"\ndone in {summary['total_seconds']:.0f} s")
    return summary
