"""A quiet and quick start for the command line, before Keras is first
imported.

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

`collect_for_one_command` runs first of all: Python's garbage collector
makes a young collection every 700 objects allocated (net), and each one
that reaches the oldest generation walks every object alive. Importing
TensorFlow leaves about 400,000 objects that live as long as the
process, so the collector walks them again and again (about 0.6 s of a
2.9 s import on 2 cores), and once more at the process's end (0.8 s). In
the command line's process the collector runs every
`PROCESS_GC_THRESHOLD` objects instead (cyclic garbage is still
collected), and at exit every object is frozen (`gc.freeze`) before
Python's last collection: the objects go with the process, after the exit
handlers have run and with files flushed and closed as usual. Measured by
`python -m benchmarks.cli_latency`.
"""

from typing import Iterator

import atexit
import contextlib
import gc
import os
import sys

SCRIPT = "keras-seq2seq-attention"
QUIET_START_VARIABLE = "KERAS_ATTENTION_QUIET_START"
# Objects allocated (net) between two young collections of a command
# line's process (Python's default: 700).
PROCESS_GC_THRESHOLD = 100_000


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


def launched_as_command() -> bool:
    """Whether this process is the package's command line or a recipe's
    (which sets `QUIET_START_VARIABLE` before importing the package)."""
    return launched_as_cli() or os.environ.get(QUIET_START_VARIABLE) == "1"


def collect_for_one_command() -> None:
    """Sets the garbage collector for a process that ends with its
    command, when this process is a command line; does nothing otherwise
    (a notebook, a test, a server that imports the package keep Python's
    settings)."""
    if not launched_as_command():
        return
    gc.set_threshold(PROCESS_GC_THRESHOLD, *gc.get_threshold()[1:])
    # Registered first, so it runs after every later exit handler.
    atexit.register(gc.freeze)


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
