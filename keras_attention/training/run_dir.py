"""The run directory: what training writes and every later command reads.

run.json                  the settings (sections of dicts, see
                          `save_run_config`), the model's included
source_vocab.txt          vocabularies, where the tokenizers learn
target_vocab.txt          them (WordPiece)
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
                          (`save_split`); a recipe's `evaluate` reads
                          them instead of splitting the data again

Writes are transactional: run.json, the final weights and `history.json`
go to a temporary name in the same directory and are renamed
(`os.replace`), so a killed process leaves the old file or the new one,
never half of one. `claim` refuses to train into a finished run unless
asked to overwrite it (then removes what the old run wrote), and
`save_run_config` refuses to describe an interrupted run (one with a
backup) with settings other than its own.
"""

from typing import Any, Iterable, Optional, Sequence
from keras_attention.typing import Tensor

import json
import os
import re
import shutil

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


def temporary_path(path: str) -> str:
    """A temporary name beside `path` with the same ending (Keras needs
    `.weights.h5`), for a write that is then renamed to `path`."""
    folder, name = os.path.split(path)
    stem, dot, ending = name.partition(".")
    return os.path.join(folder, f"{stem}.partial-{os.getpid()}{dot}{ending}")


def write_atomically(path: str, write: Any) -> str:
    """Calls `write(temporary_path)`, then renames that file to `path`
    (the temporary file is removed if `write` fails). Returns `path`."""
    partial = temporary_path(path)
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return path


def _write_json(path: str, value: Any) -> None:
    def write(partial: str) -> None:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)

    write_atomically(path, write)


def _differences(old: Any, new: Any, prefix: str = "") -> list:
    """The `"section.key: old -> new"` lines where two configs differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += _differences(
                old.get(key), new.get(key), f"{prefix}{key}."
            )
        return out
    if old == new:
        return []
    return [f"{prefix[:-1]}: {old!r} -> {new!r}"]


def is_finished(run_dir: str) -> bool:
    """Whether the run has its final weights (training ended)."""
    return os.path.exists(run_path(run_dir, WEIGHTS))


def is_interrupted(run_dir: str) -> bool:
    """Whether the run has a backup to resume from (and no final
    weights)."""
    backup = run_path(run_dir, BACKUP)
    return (
        not is_finished(run_dir)
        and os.path.isdir(backup)
        and bool(os.listdir(backup))
    )


# What a run writes: removed by `claim(run_dir, overwrite=True)`.
_RUN_FILES = (
    RUN_CONFIG, SOURCE_VOCAB, TARGET_VOCAB, CHECKPOINTS, BACKUP, LOGS,
    WEIGHTS, HISTORY, EXPORT, METRICS, *SPLIT_FILES.values(),
)


def claim(run_dir: str, overwrite: bool = False) -> None:
    """Makes `run_dir` ready for training: created if missing; a finished
    run is refused unless `overwrite`, which removes what the old run wrote
    (its weights, checkpoints, backup, export, metrics, vocabularies and
    run.json; other files stay). An interrupted run (a backup) is left to
    resume.

    Raises:
        ValueError: for a finished run without `overwrite`, or a path that
            is a file.
    """
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ValueError(
            f"The run directory {run_dir!r} is a file, not a directory."
        )
    if overwrite:
        for name in _RUN_FILES:
            path = run_path(run_dir, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
    elif is_finished(run_dir):
        raise ValueError(
            f"The run directory {run_dir!r} holds a finished run "
            f"({WEIGHTS}). Train into another directory, or overwrite it "
            "(`overwrite=True`; --overwrite on the command line), which "
            "removes its weights, checkpoints and export."
        )
    os.makedirs(run_dir, exist_ok=True)


def save_run_config(run_dir: str, config: dict) -> None:
    """Writes `config` (a JSON-able dict of sections) to run.json, through
    a temporary file.

    Raises:
        ValueError: if the run was interrupted (it has a backup) and its
            run.json holds other settings: the backup belongs to those, and
            run.json is left as it is.
    """
    os.makedirs(run_dir, exist_ok=True)
    config = json.loads(json.dumps(config))  # tuples as lists, as saved
    path = run_path(run_dir, RUN_CONFIG)
    if is_interrupted(run_dir) and os.path.exists(path):
        differences = _differences(load_run_config(run_dir), config)
        if differences:
            raise ValueError(
                f"The run directory {run_dir!r} holds an interrupted run "
                "whose settings differ from these ("
                + "; ".join(differences[:6])
                + (f"; {len(differences) - 6} more" if len(differences) > 6 else "")
                + "). Resume it with its own settings, or train into another "
                "directory, or overwrite it (`overwrite=True`; --overwrite "
                "on the command line). Its run.json is left unchanged."
            )
    _write_json(path, config)


def save_history(run_dir: str, record: dict) -> None:
    """Writes the per-epoch metrics to `history.json`, through a temporary
    file."""
    _write_json(run_path(run_dir, HISTORY), record)


def load_run_config(run_dir: str) -> dict:
    """The dict of run.json.

    Raises:
        ValueError: if the directory has no run.json, or it is not a JSON
            object (a truncated or edited file: the message names it).
    """
    path = run_path(run_dir, RUN_CONFIG)
    if not os.path.exists(path):
        raise ValueError(
            f"No run.json in the run directory (train first). Received: "
            f"run_dir={run_dir!r}"
        )
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    try:
        config = json.loads(text)
    except ValueError as e:
        raise ValueError(
            f"{path} is not valid JSON ({e}): it was cut short or edited. "
            "Restore it, or train the run again."
        ) from None
    if not isinstance(config, dict):
        raise ValueError(
            f"{path} holds a JSON {type(config).__name__}, not the object "
            "of a run's settings: restore it, or train the run again."
        )
    return config


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


def store_float16(path: str) -> int:
    """Rewrites the float32 arrays of a Keras `.weights.h5` file as float16
    (half the size on disk, for shipping a model); returns how many were
    rewritten. Keras casts them back to each variable's dtype on
    `load_weights`, so the model computes as before with weights rounded to
    float16 (11 significant bits); integer arrays are left as they are.
    Written to a temporary file and renamed, so a failure leaves the file
    whole."""
    import h5py
    import numpy as np

    def copy(source: Any, target: Any) -> int:
        count = 0
        for key, value in source.attrs.items():
            target.attrs[key] = value
        for name, item in source.items():
            if isinstance(item, h5py.Group):
                count += copy(item, target.create_group(name))
                continue
            data = item[()]
            if getattr(data, "dtype", None) == np.float32:
                data = data.astype(np.float16)
                count += 1
            target.create_dataset(name, data=data)
            for key, value in item.attrs.items():
                target[name].attrs[key] = value
        return count

    def write(temporary: str) -> None:
        nonlocal count
        with h5py.File(path, "r") as source, h5py.File(temporary, "w") as target:
            count = copy(source, target)

    count = 0
    write_atomically(path, write)
    return count


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
