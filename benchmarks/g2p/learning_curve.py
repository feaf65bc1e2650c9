"""WER and PER on the dev split after each epoch of a G2P run.

    python benchmarks/g2p/learning_curve.py runs/g2p-bench/additive

Exports each `checkpoints/epoch_NN.weights.h5` of the run to a temporary
SavedModel and decodes the run's `test` split (the benchmark's dev split,
as the run stored it) greedily. Prints one line per epoch with the cumulative training time
(from the run's train log, `epoch_seconds`, when there is one).
"""

import glob
import os
import re
import sys
import tempfile

from examples.g2p import evaluate as eval_lib
from examples.g2p import text as text_lib
from examples.g2p import train as train_lib
from keras_attention import serving as serving


def epoch_seconds(run_dir):
    """Seconds of each finished epoch, from `RUN.train.log` if present."""
    path = run_dir.rstrip("/") + ".train.log"
    if not os.path.exists(path):
        return []
    with open(path) as f:
        found = re.findall(r"epoch_seconds: ([\d.]+)", f.read())
    return [float(s) for s in found]


def main(run_dir):
    seconds = epoch_seconds(run_dir)
    checkpoints = sorted(
        glob.glob(os.path.join(run_dir, "checkpoints", "*.h5"))
    )
    lexicon = eval_lib.load_split(run_dir, "test")
    print(f"{run_dir}: dev split ({len(lexicon)} words), greedy")
    for i, path in enumerate(checkpoints):
        seq2seq, source, target, _ = train_lib.load_trained(run_dir, path)
        module = serving.TranslatorModule(
            seq2seq, source, target, max_output_tokens=text_lib.MAX_TOKENS
        )
        with tempfile.TemporaryDirectory() as tmp:
            saved = serving.export_saved_model(module, tmp)
            m = eval_lib.evaluate(serving.load_saved_model(saved), lexicon)
        spent = (
            f"{sum(seconds[: i + 1]):6.0f} s" if len(seconds) > i else "n/a"
        )
        print(
            f"epoch {i + 1}  train {spent}  WER {m['wer']:6.2f} %  "
            f"PER {m['per']:5.2f} %"
        )


if __name__ == "__main__":
    main(sys.argv[1])
