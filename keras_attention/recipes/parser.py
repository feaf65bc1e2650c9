"""The parser of a recipe's command line and the flags its commands share.

- `add_config_arguments`/`configs_from_args`: argparse groups generated
  from the config dataclasses (`config.option` fields), and back;
- `new_parser` and the sub-commands of a recipe, with the flags
  they share: `add_train_command`, `add_export_command`,
  `add_translate_command`, `add_evaluate_command`, `add_demo_command`,
  `add_serve_command` (each recipe adds its own flags to what they
  return);
- `beam_width_argument`, `read_texts`, `report_metrics`;
- the checks of the commands' flags, run before the command:
  `check_epochs`, `check_at_least_one` (and `decoding.check_beam_width`,
  `decoding.check_decoding_arguments`);
- `run_main`: parse, check, run the command, turn a `ValueError` (bad
  input) into a message and exit status 2.

A recipe's `__main__` sets `keras_attention.cli.launch`'s
`QUIET_START_VARIABLE` before it imports anything: Keras then starts
without TensorFlow's C++ start-up lines, as the library's command line.
"""

from typing import Any
from typing import Callable
from typing import Collection
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

import argparse
import dataclasses
import json
import os
import sys
import warnings

from keras_attention.cli.errors import EXIT_INTERRUPTED
from keras_attention.cli.errors import EXIT_USAGE
from keras_attention.cli.errors import CliError
from keras_attention.cli.errors import one_line
from keras_attention.cli import io as text_io
from keras_attention.recipes import decoding as decoding_cli
from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from keras_attention.serving.limits import MAX_BEAM_WIDTH
from keras_attention.training.splits import SPLIT_NAMES



def _dest(section: str, name: str) -> str:
    return f"{section}.{name}"


def add_config_arguments(
    parser: argparse.ArgumentParser,
    sections: Sequence[Tuple[str, type]],
    settings: Optional[Dict[str, Dict[str, Any]]] = None,
    exclude: Collection[str] = (),
) -> None:
    """Adds one argument group per config section, from the fields.

    Every field declared with `config.option` becomes a flag, except the
    `"section.field"` names of `exclude` (settings that do not apply to an
    recipe); booleans get `--flag/--no-flag`. `settings` (a dict of
    sections, like `DEMO_SETTINGS`) replaces defaults. The values land in
    `args` under `"section.field"`: read them back with
    `configs_from_args`.
    """
    settings = settings or {}
    for section, cls in sections:
        group = parser.add_argument_group(section)
        for field in dataclasses.fields(cls):
            meta = dict(field.metadata)
            if "help" not in meta or _dest(section, field.name) in exclude:
                continue  # not a command-line setting
            default = settings.get(section, {}).get(field.name, field.default)
            kwargs = {"dest": _dest(section, field.name), "default": default}
            flag = meta.pop("flag") or "--" + field.name.replace("_", "-")
            value_type = meta.pop("type") or type(field.default)
            if meta["choices"] is None:
                del meta["choices"]
                if value_type is not bool:
                    kwargs["metavar"] = field.name.upper()
            if value_type is bool:
                kwargs["action"] = argparse.BooleanOptionalAction
            else:
                kwargs["type"] = value_type
            if default is not None and not isinstance(default, bool):
                meta["help"] += " (default: %(default)s)"
            kwargs.update(meta)
            group.add_argument(flag, **kwargs)


def configs_from_args(
    args: argparse.Namespace,
    sections: Sequence[Tuple[str, type]],
    settings: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Tuple[Any, ...]:
    """The configs (one per section) of parsed arguments; a field without
    a flag takes its value from `settings`, else its default."""
    settings = settings or {}
    configs = []
    for section, cls in sections:
        values = dict(settings.get(section, {}))
        for field in dataclasses.fields(cls):
            dest = _dest(section, field.name)
            if hasattr(args, dest):
                value = getattr(args, dest)
                if isinstance(value, list):
                    value = tuple(value)
                values[field.name] = value
        configs.append(cls(**values))
    return tuple(configs)


def check_epochs(args: argparse.Namespace) -> None:
    """Checks `--epochs` (of `train` and `demo`): at least 1."""
    epochs = getattr(args, _dest("train", "epochs"), None)
    if epochs is not None and epochs < 1:
        raise ValueError(
            "--epochs must be at least 1 (the passes over the training "
            f"data). Received: --epochs {epochs}"
        )


def check_at_least_one(flag: str) -> Callable[[argparse.Namespace], None]:
    """The check of an optional count flag (`--max-examples`): absent, or
    at least 1."""
    dest = flag.lstrip("-").replace("-", "_")

    def check(args: argparse.Namespace) -> None:
        value = getattr(args, dest, None)
        if value is not None and value < 1:
            raise ValueError(
                f"{flag} must be at least 1 (default: all). Received: "
                f"{flag} {value}"
            )

    return check


def beam_width_argument(
    parser: argparse.ArgumentParser, default: int, what: str
) -> None:
    parser.add_argument(
        "--beam-width", type=int, default=default,
        help=f"{what} beam search of this width, at most "
        f"{MAX_BEAM_WIDTH} (default %(default)s; 0: greedy only)",
    )


def read_texts(args: argparse.Namespace) -> List[str]:
    """The inputs of a `translate` command: `args.text`, then the lines of
    `args.file`, else the lines of stdin.

    The file and stdin are read as every file of the command line
    (`keras_attention.cli.io`): UTF-8 with or without a byte-order mark,
    LF or CRLF; blank lines skipped.

    Raises:
        CliError: for a missing file, a file without text, or a line that
            is not UTF-8 (naming the line).
    """
    # Arguments in another encoding: U+FFFD for the undecodable bytes.
    texts = [
        t.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        for t in args.text
    ]
    if args.file:
        texts += text_io.read_texts(args.file, "--file")
    if not texts:
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # a text stream put in place of stdin
            texts = [line.strip() for line in sys.stdin if line.strip()]
        else:
            texts = [text for _, text in text_io.iter_stream(stdin)]
    return texts


def report_metrics(
    args: argparse.Namespace,
    metrics: Dict[str, Any],
    format_metrics: Callable[[Dict[str, Any]], str],
    strip_results: Callable[[Dict[str, Any]], Dict[str, Any]],
) -> int:
    """Prints the metrics of `evaluate` (and writes `--json`); status 0.

    `args.label`, when set, names what was scored instead of the split."""
    label = getattr(args, "label", None)
    print(f"{label or f'{args.split} split of {args.run}'}:")
    print(format_metrics(metrics))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(strip_results(metrics), f, indent=2)
    return 0


def _warnings_as_lines(prefix: str) -> None:
    """Shows what a user must know of their texts (`TranslationWarning`:
    an empty text, a text cut) as one line `PREFIX: warning: ...` each, on
    stderr."""
    from keras_attention.translator import TranslationWarning

    def show(message: Warning, category: type, *_: Any, **__: Any) -> None:
        if issubclass(category, TranslationWarning):
            print(f"{prefix}: warning: {one_line(message)}", file=sys.stderr,
                  flush=True)
        else:
            default(message, category, *_, **__)

    default = warnings.showwarning
    warnings.filterwarnings("always", category=TranslationWarning)
    warnings.showwarning = show


def run_main(
    parser: argparse.ArgumentParser,
    argv: Optional[Sequence[str]] = None,
    debug_variable: str = "NMT_DEBUG",
) -> int:
    """Parses `argv`, runs `args.func(args)`; returns the exit status.

    The command's checks (`args.checks`, set by the `add_*_command`
    functions: flags out of range or that do not go together) run first,
    before any file is read or model loaded. A user's error
    (`ValueError`, `CliError`, `OSError`: bad flags, bad data files, run
    directories, settings) is one line `PROG COMMAND: error: ...` and
    status 2, not a traceback (with the environment variable
    `debug_variable` set, the traceback). Ctrl-C is one line and status
    130; `train` says that the run resumes from its last finished epoch
    (`keras.callbacks.BackupAndRestore` wrote it at the epoch's end). A
    `TranslationWarning` (an empty text, a text cut) is one line
    `PROG COMMAND: warning: ...`.
    """
    args = parser.parse_args(argv)
    with warnings.catch_warnings():  # restored on return
        _warnings_as_lines(f"{parser.prog} {args.command}")
        return _run(parser, args, debug_variable)


def _run(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    debug_variable: str,
) -> int:
    """Runs the checks and the command of `run_main`."""
    try:
        for check in getattr(args, "checks", ()):
            check(args)
        return args.func(args)
    except KeyboardInterrupt:
        note = ""
        if args.command == "train":
            note = (
                f": the backup of the last finished epoch is in {args.out}; "
                "the same command resumes from it"
            )
        print(f"{parser.prog} {args.command}: interrupted{note}",
              file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except (ValueError, CliError, OSError) as e:
        if os.environ.get(debug_variable):
            raise
        print(f"{parser.prog} {args.command}: error: {one_line(e)}",
              file=sys.stderr, flush=True)
        return EXIT_USAGE


def add_serve_command(
    sub: Any, func: Callable[[argparse.Namespace], Any], shows: str
) -> argparse.ArgumentParser:
    """`serve --model RUN_OR_SAVED_MODEL [--port N]`: the local web page of
    a run or a SavedModel (`keras_attention.web`); `shows` ends the
    help line (what the page shows), `func` runs the command."""
    p = sub.add_parser("serve", help=f"a web page on 127.0.0.1: {shows}")
    p.add_argument(
        "--model", required=True, help="SavedModel directory or run directory"
    )
    p.add_argument(
        "--port", type=int, default=8000,
        help="port on 127.0.0.1 (default %(default)s; 0: any free port)",
    )
    p.set_defaults(func=func)
    return p


def new_parser(
    prog: str, description: str
) -> Tuple[argparse.ArgumentParser, Any]:
    """A recipe's argument parser and its group of sub-commands:
    `(parser, sub)`."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser, parser.add_subparsers(dest="command", required=True)


def add_train_command(
    sub: Any,
    func: Callable[[argparse.Namespace], Any],
    default_out: str,
    add_configs: Callable[[argparse.ArgumentParser], Any],
) -> argparse.ArgumentParser:
    """`train --out RUN [--overwrite]` and the config flags that
    `add_configs(parser)` adds."""
    p = sub.add_parser("train", help="train a model into a run directory")
    p.add_argument("--out", default=default_out, help="run directory")
    p.add_argument(
        "--overwrite", action="store_true",
        help="train again into a finished run directory (its weights, "
        "checkpoints and export are removed); an interrupted run resumes "
        "without it",
    )
    add_configs(p)
    p.set_defaults(func=func, checks=(check_epochs,))
    return p


def add_export_command(
    sub: Any, func: Callable[[argparse.Namespace], Any]
) -> argparse.ArgumentParser:
    """`export --run RUN [--out DIR]` and the decoding options stored in
    the SavedModel (`decoding_cli.export_option_arguments`)."""
    p = sub.add_parser("export", help="export a trained run as a SavedModel")
    p.add_argument("--run", required=True, help="run directory of `train`")
    p.add_argument(
        "--out", default=None, help="SavedModel directory (default RUN/export)"
    )
    decoding_cli.export_option_arguments(p)
    p.set_defaults(func=func)
    return p


def add_translate_command(
    sub: Any,
    func: Callable[[argparse.Namespace], Any],
    help: str,
    inputs: str,
    verb: str,
    model_help: str = "SavedModel directory or run directory",
) -> argparse.ArgumentParser:
    """`translate --model M [TEXT ...] [--file F] [--attention]`, the beam
    width and the decoding flags (`decoding_cli.decoding_arguments`);
    `inputs` names one input (`"sentence"`), `verb` what is done to it
    (`"translate"`), `model_help` what `--model` takes."""
    p = sub.add_parser("translate", help=help)
    p.add_argument("--model", required=True, help=model_help)
    p.add_argument(
        "text", nargs="*", help=f"{inputs}s (default: --file/stdin)"
    )
    p.add_argument("--file", help=f"file with one {inputs} a line")
    p.add_argument(
        "--attention", action="store_true",
        help="print the attention as a text grid",
    )
    beam_width_argument(p, 0, f"{verb} with")
    decoding_cli.decoding_arguments(p)
    p.set_defaults(
        func=func, checks=(decoding_cli.check_decoding_arguments,)
    )
    return p


def add_evaluate_command(
    sub: Any,
    func: Callable[[argparse.Namespace], Any],
    help: str,
    max_flag: str,
    run_help: str = "run directory of `train`",
) -> argparse.ArgumentParser:
    """`evaluate --run RUN [--split S] [--saved-model DIR] [MAX_FLAG N]
    [--json F] [--beam-width W]`; `max_flag` (`"--max-examples"`) scores
    the first N inputs only, `run_help` says what `--run` takes."""
    p = sub.add_parser("evaluate", help=help)
    p.add_argument("--run", required=True, help=run_help)
    p.add_argument(
        "--split", default="test", choices=SPLIT_NAMES,
        help="validation and test: as the run stored them; train: split "
        "from the run's data again (default: %(default)s)",
    )
    p.add_argument(
        "--saved-model", default=None,
        help="default: RUN/export (exported if missing)",
    )
    p.add_argument(
        max_flag, type=int, default=None, metavar="N",
        help="score the first N only (default: all)",
    )
    p.add_argument("--json", help="also write the metrics to this JSON file")
    beam_width_argument(p, DEFAULT_BEAM_WIDTH, "also evaluate")
    p.set_defaults(
        func=func,
        checks=(decoding_cli.check_beam_width, check_at_least_one(max_flag)),
    )
    return p


def add_demo_command(
    sub: Any,
    func: Callable[[argparse.Namespace], Any],
    help: str,
    default_out: str,
    add_configs: Callable[[argparse.ArgumentParser], Any],
) -> argparse.ArgumentParser:
    """`demo --out RUN [--quick] [--beam-width W]` and the config flags
    that `add_configs(parser)` adds."""
    p = sub.add_parser("demo", help=help)
    p.add_argument("--out", default=default_out, help="run directory")
    p.add_argument(
        "--quick", action="store_true",
        help="tiny smoke run (seconds, poor quality)",
    )
    beam_width_argument(p, DEFAULT_BEAM_WIDTH, "also decode and evaluate with")
    add_configs(p)
    p.set_defaults(
        func=func, checks=(decoding_cli.check_beam_width, check_epochs)
    )
    return p
