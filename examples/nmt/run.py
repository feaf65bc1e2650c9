"""The run directory: what `train` writes and every other command reads.

    run.json                  data, text, model and training settings
    source_vocab.txt          WordPiece vocabularies learned from the
    target_vocab.txt          training split
    checkpoints/epoch_NN.weights.h5   one per epoch
    backup/                   `keras.callbacks.BackupAndRestore` state: a
                              killed run started again with the same
                              command resumes from the last finished epoch
    logs/                     TensorBoard logs
    model.weights.h5          final weights (best validation loss)
    history.json              per-epoch metrics
    export/                   SavedModel (`export` sub-command)
    metrics.json              test metrics (`demo`)
"""

import json
import os

from examples.nmt import config as config_lib
from examples.nmt import model as model_lib
from examples.nmt import text as text_lib

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


def run_path(run_dir, name):
    """The path of `name` (one of this module's constants) in a run."""
    return os.path.join(run_dir, name)


def save_run_config(run_dir, *configs, sections=config_lib.SECTIONS):
    """Writes the configs (`(data, text, model, train)`) to run.json."""
    os.makedirs(run_dir, exist_ok=True)
    with open(run_path(run_dir, RUN_CONFIG), "w") as f:
        json.dump(config_lib.to_dicts(configs, sections), f, indent=2)


def load_run_config(run_dir, sections=config_lib.SECTIONS):
    """The configs (`(data, text, model, train)` by default) of a run.

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
        return config_lib.from_dicts(json.load(f), sections)


def make_processors(run_dir, text_config):
    """The source and target `text.TextProcessor`s of a run's vocabularies."""
    source = text_lib.TextProcessor(
        run_path(run_dir, SOURCE_VOCAB),
        lower_case=text_config.source_lower_case,
        max_tokens=text_config.max_tokens,
        add_start=False,
        add_end=text_config.source_end_token,
        name="source_text",
    )
    target = text_lib.TextProcessor(
        run_path(run_dir, TARGET_VOCAB),
        lower_case=text_config.target_lower_case,
        max_tokens=text_config.max_tokens,
        add_start=True,
        name="target_text",
    )
    return source, target


def load_trained(run_dir, weights=None):
    """Rebuilds the model of a run and loads its weights.

    Args:
        run_dir: The run directory.
        weights: Optional weights file (e.g. a checkpoint). Defaults to the
            final `model.weights.h5`.

    Returns:
        `(seq2seq, source_processor, target_processor, configs)` with
        `configs` the tuple of `load_run_config`.
    """
    configs = load_run_config(run_dir)
    _, text_config, model_config, _ = configs
    source, target = make_processors(run_dir, text_config)
    seq2seq = model_lib.build_model(model_config)
    seq2seq.weights_model.load_weights(weights or run_path(run_dir, WEIGHTS))
    return seq2seq, source, target, configs
