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

`run_portable` runs before that: `translate` and `evaluate` on a LiteRT
(`.tflite`) or ONNX (`.onnx`) model need neither Keras nor TensorFlow
(`keras_attention.cli.portable`), so the command line runs there, while
the package is being imported, and the process exits with its status
before Keras is imported: one sentence takes a fraction of a second
instead of the seconds TensorFlow takes to import.

A recipe's command line (`python -m examples.nmt`) asks for the same start
by setting `QUIET_START_VARIABLE` to `1` before it imports this package
(the variable is removed then, so child processes start as usual); there a
`TF_CPP_MIN_LOG_LEVEL` of `0` or `1` set by the user shows the logs.
"""

from typing import Iterator

import contextlib
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


# The commands that run a LiteRT or ONNX model without Keras.
PORTABLE_COMMANDS = ("translate", "evaluate")
PORTABLE_SUFFIXES = (".tflite", ".onnx")


def portable_command(argv: list) -> bool:
    """Whether command line arguments `argv` (without the program) run
    `translate` or `evaluate` on a LiteRT or ONNX `--model`."""
    command = next((word for word in argv if not word.startswith("-")), None)
    if command not in PORTABLE_COMMANDS:
        return False
    model = None
    for index, word in enumerate(argv):
        if word == "--model" and index + 1 < len(argv):
            model = argv[index + 1]
        elif word.startswith("--model="):
            model = word[len("--model="):]
    return model is not None and model.lower().endswith(PORTABLE_SUFFIXES)


def run_portable() -> None:
    """Runs the command line and exits when this process is `translate` or
    `evaluate` on a LiteRT or ONNX model; does nothing otherwise."""
    if launched_as_cli() and portable_command(sys.argv[1:]):
        from keras_attention.cli import main

        sys.exit(main())


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
    with stderr_silenced():
        import keras  # noqa: F401


@contextlib.contextmanager
def stderr_silenced() -> Iterator[None]:
    """Sends the process's stderr (file descriptor 2, where TensorFlow's
    C++ start-up lines go) to `/dev/null` inside the block."""
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
