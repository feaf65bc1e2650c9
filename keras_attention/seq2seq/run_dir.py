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
model.weights.h5          final weights (best validation loss;
                          `average_checkpoints` averages several)
history.json              per-epoch metrics
export/                   SavedModel (`serving.export_saved_model`)
metrics.json              test metrics
validation.tsv            the held-out splits the run was trained
test.tsv                  with, one row a line of tab-separated columns
                          (`save_split`); the examples' `evaluate` reads
                          them instead of splitting the data again
"""

from typing import Any, Iterable, Optional, Sequence
from keras_attention.typing import Tensor

import json
import os
import re

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
# The held-out splits a run was trained with, by split name.
SPLIT_FILES = {"validation": "validation.tsv", "test": "test.tsv"}

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {v[1]: k for k, v in _ESCAPES.items()}
_ESCAPED = re.compile(r"[\\\t\n\r]")
_UNESCAPED = re.compile(r"\\(.)")


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


def average_checkpoints(model: Any, paths: Sequence[str]) -> Any:
    """Loads the mean of the weights files `paths` (e.g. the checkpoints of
    the last epochs) into `model`, and returns it.

    Floating-point variables are averaged (in float64, then cast back);
    any other variable (an integer counter, a seed state) keeps its value
    of the last file. Any backend.

    Raises:
        ValueError: if `paths` is empty or a string.
    """
    import numpy as np

    if isinstance(paths, str) or not paths:
        raise ValueError(
            "`paths` must be a non-empty sequence of weights files. "
            f"Received: paths={paths!r}"
        )
    total = None
    for path in paths:
        model.load_weights(path)
        values = model.get_weights()
        if total is None:
            total = [np.zeros(v.shape, np.float64) for v in values]
        for sum_, value in zip(total, values):
            if np.issubdtype(value.dtype, np.floating):
                sum_ += value
    model.set_weights([
        (sum_ / len(paths)).astype(value.dtype)
        if np.issubdtype(value.dtype, np.floating) else value
        for sum_, value in zip(total, values)
    ])
    return model


def _escape(text: str) -> str:
    return _ESCAPED.sub(lambda m: _ESCAPES[m.group(0)], text)


def _unescape(text: str) -> str:
    return _UNESCAPED.sub(
        lambda m: _UNESCAPES.get(m.group(1), m.group(0)), text
    )


def save_split(run_dir: str, split: str, rows: Iterable) -> str:
    """Writes the rows (tuples of strings) of a held-out split to its file
    of `SPLIT_FILES` in the run; returns its path.

    One row a line (UTF-8, `\\n` line ends), the columns separated by tabs;
    a backslash, tab, newline or carriage return inside a column is written
    `\\\\`, `\\t`, `\\n`, `\\r`, so any text comes back as it was
    (`load_split`). The file is written whole, then renamed into place: a
    killed run leaves the old file or the new one, never half of one.

    Raises:
        ValueError: for a split without a file (`"train"`).
    """
    if split not in SPLIT_FILES:
        raise ValueError(
            f"`split` must be one of {sorted(SPLIT_FILES)}. "
            f"Received: split={split!r}"
        )
    os.makedirs(run_dir, exist_ok=True)
    path = run_path(run_dir, SPLIT_FILES[split])
    with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write("\t".join(_escape(column) for column in row) + "\n")
    os.replace(path + ".tmp", path)
    return path


def load_split(run_dir: str, split: str) -> Optional[list]:
    """The rows (tuples of strings) of `save_split`, or `None` when the run
    has no file for `split` (the training split, or a run written before
    the split files)."""
    path = run_path(run_dir, SPLIT_FILES.get(split, ""))
    if split not in SPLIT_FILES or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", newline="\n") as f:
        return [
            tuple(_unescape(c) for c in line.rstrip("\n").split("\t"))
            for line in f
        ]
