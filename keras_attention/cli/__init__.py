"""The command line: `python -m keras_attention` and `keras-seq2seq-attention`.

Sub-commands on `keras_attention.translator.Translator`: `train`,
`translate`, `evaluate`, `export`, `serve`, `align` (docs/cli.md). Every
user error is one line `error: ...` on stderr and exit status 2; Ctrl-C
prints one line and exits with 130. A command's module is imported only
when it runs, and TensorFlow only by the commands that need it.
"""

from typing import Optional
from typing import Sequence

import importlib
import logging
import os
import sys
import traceback
import warnings

from keras_attention.cli.errors import EXIT_INTERNAL
from keras_attention.cli.errors import EXIT_INTERRUPTED
from keras_attention.cli.errors import EXIT_OK
from keras_attention.cli.errors import EXIT_USAGE
from keras_attention.cli.errors import CliError
from keras_attention.cli.errors import one_line

# Errors of the library's argument checks (a bad combination of model
# arguments, data a tokenizer cannot learn from) and of files: the user's.
_USER_ERRORS = (CliError, ValueError, TypeError, OSError, ImportError)


def _quiet() -> None:
    """Hides the backend's logs and Python warnings (`--verbose` shows
    them)."""
    # Every warning reaches `_show_warning`, which shows only what the user
    # must know of their own texts (empty, cut): one `warning:` line each.
    # (Filtering by category here would import the translator's modules.)
    warnings.simplefilter("always")
    warnings.showwarning = _show_warning
    for name in ("tensorflow", "absl", "keras", "h5py"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import absl.logging

        absl.logging.set_verbosity(absl.logging.ERROR)
    except ImportError:
        pass


def _show_warning(
    message: Warning,
    category: type,
    filename: str,
    lineno: int,
    file: object = None,
    line: object = None,
) -> None:
    translating = sys.modules.get("keras_attention.translator.translating")
    if translating is None or not issubclass(
        category, translating.TranslationWarning
    ):
        return
    print(f"warning: {one_line(str(message))}", file=sys.stderr, flush=True)


def _fail(message: str, status: int) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line on `argv` (default: `sys.argv[1:]`) and
    returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    if not verbose:
        # Read by TensorFlow when it is first imported: no C++ log line
        # (`--verbose` leaves the variable as the user set it).
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        _quiet()
    try:
        from keras_attention.cli.parser import build_parser
        from keras_attention.cli.parser import command_of

        parser = build_parser(full=[command_of(argv)])
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_usage(sys.stderr)
            return _fail(
                "give a command: train, translate, evaluate, export, serve "
                "or align (see --help)",
                EXIT_USAGE,
            )
        command = importlib.import_module(f"keras_attention.cli.{args.command}")
        status = command.run(args)
        return EXIT_OK if status is None else status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`... | head`): nothing more to say.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except _USER_ERRORS as e:
        if verbose and not isinstance(e, CliError):
            traceback.print_exc()
        message = str(e) if isinstance(e, CliError) else (
            f"{type(e).__name__}: {e}"
        )
        return _fail(message, EXIT_USAGE)
    except Exception as e:  # noqa: BLE001, reported on one line
        if verbose:
            traceback.print_exc()
        return _fail(
            f"internal error, {type(e).__name__}: {e} (run again with "
            "--verbose for the traceback)",
            EXIT_INTERNAL,
        )


__all__ = ["CliError", "main"]
