"""The run directory: what training writes and every later command reads.

run.json                  the settings (sections of dicts, see
                          `save_run_config`), the model's included
source_vocab.txt          vocabularies, where the tokenizers learn
target_vocab.txt          them (the examples' WordPiece)
checkpoints/epoch_NN.weights.h5   one per epoch
backup/                   `keras.callbacks.BackupAndRestore` state: a
                          killed run started again with the same
                          command resumes from the last finished epoch
logs/                     TensorBoard logs
model.weights.h5          final weights (best validation loss)
history.json              per-epoch metrics
export/                   SavedModel (`serving.export_saved_model`)
metrics.json              test metrics
"""

from typing import Any
from keras_attention.typing import Tensor

import json
import os

RUN_CONFIG = "run.json"
SOURCE_VOCAB = "source_vocab.txt"
TARGET_VOCAB = "target_vocab.txt"
CHECKPOINTS = "checkpoints"
CHECKPOINT_PATTERN = "checkpoints/epoch_{epoch:02d}.weights.h5"
BACKUP = "backup"
LOGS = "logs"
WEIGHTS = "model.weights.h5"
HISTORY = "history.json"
EXPORT = "export"
METRICS = "metrics.json"


def run_path(run_dir: str, name: str) -> str:
    """The path of `name` (one of this module's constants) in a run."""
    return os.path.join(run_dir, name)


def save_run_config(run_dir: str, config: dict) -> None:
    """Writes `config` (a JSON-able dict of sections) to run.json."""
    os.makedirs(run_dir, exist_ok=True)
    with open(run_path(run_dir, RUN_CONFIG), "w") as f:
        json.dump(config, f, indent=2)


def load_run_config(run_dir: str) -> dict:
    """The dict of run.json.

    Raises:
        ValueError: if the directory has no run.json.
    """
    path = run_path(run_dir, RUN_CONFIG)
    if not os.path.exists(path):
        raise ValueError(
            f"No run.json in the run directory (train first). Received: "
            f"run_dir={run_dir!r}"
        )
    with open(path) as f:
        return json.load(f)


def load_seq2seq(
    run_dir: str, model_arguments: dict, weights: Tensor = None
) -> Any:
    """A `Seq2Seq` built from `model_arguments` (a dict of its constructor
    arguments) with the run's final weights (or `weights`, e.g. a
    checkpoint)."""
    from keras_attention.seq2seq.seq2seq import Seq2Seq

    seq2seq = Seq2Seq(**model_arguments)
    seq2seq.load_weights(weights or run_path(run_dir, WEIGHTS))
    return seq2seq
