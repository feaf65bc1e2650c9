"""A quiet start for the command line, before Keras is first imported.

`python -m keras_attention` and the `keras-seq2seq-attention` script
import the package first, and the package imports Keras, which imports
its backend: TensorFlow then writes its C++ start-up lines (oneDNN, CUDA,
CPU features) to stderr before the command line can say otherwise.
`quiet_start` runs at the top of `keras_attention/__init__.py`: when the
process is this package's command line (and not `--verbose`), it sets
`TF_CPP_MIN_LOG_LEVEL=3` (no C++ log line, errors included: `cuInit` on a
machine without a GPU; `--verbose` leaves the variable as it is), and sends stderr to
`/dev/null` while Keras and TensorFlow are imported (the lines written
before TensorFlow's logging starts ignore that variable). Python errors
still raise. Plain Python, no import of its own.

A recipe's command line (`python -m examples.nmt`) asks for the same start
by setting `QUIET_START_VARIABLE` to `1` before it imports this package
(the variable is removed then, so child processes start as usual); there a
`TF_CPP_MIN_LOG_LEVEL` of `0` or `1` set by the user shows the logs.
"""

import os
import sys

SCRIPT = "keras-seq2seq-attention"
QUIET_START_VARIABLE = "KERAS_ATTENTION_QUIET_START"


def launched_as_cli() -> bool:
    """Whether this process is `python -m keras_attention ...` or the
    console script."""
    argv = list(getattr(sys, "orig_argv", []) or [])
    if "-m" in argv[:-1] and argv[argv.index("-m") + 1] == "keras_attention":
        return True
    return bool(sys.argv) and os.path.basename(sys.argv[0]) == SCRIPT


def quiet_start() -> None:
    """Imports Keras (and its backend) quietly when the process is the
    command line without `--verbose`; does nothing otherwise."""
    recipe = os.environ.pop(QUIET_START_VARIABLE, None) == "1"
    if recipe:
        if os.environ.get("TF_CPP_MIN_LOG_LEVEL") in ("0", "1"):
            return
    elif not launched_as_cli() or "--verbose" in sys.argv:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        import keras  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
