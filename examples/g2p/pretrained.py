"""The pretrained G2P model shipped with the example.

    python -m examples.g2p translate --model pretrained read physics
    python -m examples.g2p evaluate --run pretrained --lexicon test.tsv
    python -m examples.g2p serve --model pretrained

`examples/g2p/pretrained/` is a run directory of `train` (`run.json` and
`model.weights.h5`; the letter and phone vocabularies are the example's
fixed ones, `text.py`), trained on the training half of the standard
CMUdict split (see `docs/g2p_results.md` for its recipe and figures). The
name `pretrained` stands for that directory wherever a command takes a run
or a model. Its SavedModel is exported on first use into a cache directory
(`$XDG_CACHE_HOME` or `~/.cache`, then `keras-seq2seq-attention/`), named
after the weights' digest, so a new model never reuses an old export.
"""

import hashlib
import os
import sys

NAME = "pretrained"
DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), NAME)
WEIGHTS = "model.weights.h5"


def is_pretrained(path):
    """Whether a `--model`/`--run` value names the shipped model."""
    return path == NAME


def run_directory(path):
    """The run directory a `--run` value stands for."""
    return DIRECTORY if is_pretrained(path) else path


def _digest(path, size=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(size), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cache_directory():
    """Where the shipped model's SavedModel is exported on first use."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    weights = os.path.join(DIRECTORY, WEIGHTS)
    if not os.path.exists(weights):
        raise ValueError(
            f"The pretrained model's weights are missing ({weights}): the "
            "checkout is incomplete. Received: --model pretrained"
        )
    return os.path.join(
        base, "keras-seq2seq-attention", f"g2p-pretrained-{_digest(weights)}"
    )


def saved_model():
    """The shipped model's SavedModel directory, exported if missing."""
    path = cache_directory()
    if not os.path.exists(os.path.join(path, "saved_model.pb")):
        from examples.g2p import train as train_lib

        # Exported beside its final place, then renamed: a run stopped
        # half-way leaves no half-written SavedModel to be loaded later.
        partial = f"{path}.partial-{os.getpid()}"
        print(
            f"first use of the pretrained model: exporting it to {path} "
            "(about half a minute, once)",
            file=sys.stderr,
            flush=True,
        )
        train_lib.export_run(DIRECTORY, partial)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.rename(partial, path)
        except OSError:  # another process exported it first
            import shutil

            shutil.rmtree(partial, ignore_errors=True)
    return path


def model_path(path):
    """The SavedModel or run directory a `--model` value stands for."""
    return saved_model() if is_pretrained(path) else path
