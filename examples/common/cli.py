"""What the command lines of both examples share.

- `quiet_tensorflow`: TensorFlow's C++ start-up logs off for the command
  line (`TF_CPP_MIN_LOG_LEVEL=2` unless the user set it);
- `add_config_arguments`/`configs_from_args`: argparse groups generated
  from the config dataclasses (`config.option` fields), and back;
- `new_parser` and the sub-commands both examples have, with the flags
  they share: `add_train_command`, `add_export_command`,
  `add_translate_command`, `add_evaluate_command`, `add_demo_command`,
  `add_serve_command` (each example adds its own flags to what they
  return);
- `beam_width_argument`, `read_texts`, `report_metrics`;
- `run_main`: parse, import TensorFlow quietly, run the command, turn a
  `ValueError` (bad input) into a message and exit status 2.

Plain Python: the parsers are built and `--help` answers before
TensorFlow is imported (each command imports what it needs).
"""

import argparse
import dataclasses
import json
import os
import sys

from examples.common import decoding_cli
from examples.common.splits import SPLIT_NAMES

# Beam width the `evaluate` and `demo` commands also decode with.
DEFAULT_BEAM_WIDTH = 4


def quiet_tensorflow():
    """Silences TensorFlow's C++ start-up logs (oneDNN, CUDA, CPU
    features) unless `TF_CPP_MIN_LOG_LEVEL` is already set: set it (to
    `0`, say) to see them. Call before TensorFlow is imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def import_tensorflow_quietly():
    """Imports TensorFlow and Keras with the process's stderr sent to
    `/dev/null` meanwhile: the lines TensorFlow's C++ code writes before its
    logging starts (`absl::InitializeLog`) ignore `TF_CPP_MIN_LOG_LEVEL`.
    Python errors still raise. Left as it is where the user set
    `TF_CPP_MIN_LOG_LEVEL` to `0` or `1`."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") in ("0", "1"):
        return
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _dest(section, name):
    return f"{section}.{name}"


def add_config_arguments(parser, sections, settings=None, exclude=()):
    """Adds one argument group per config section, from the fields.

    Every field declared with `config.option` becomes a flag, except the
    `"section.field"` names of `exclude` (settings that do not apply to an
    example); booleans get `--flag/--no-flag`. `settings` (a dict of
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


def configs_from_args(args, sections, settings=None):
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


def beam_width_argument(parser, default, what):
    parser.add_argument(
        "--beam-width", type=int, default=default,
        help=f"{what} beam search of this width "
        "(default %(default)s; 0: greedy only)",
    )


def read_texts(args):
    """The inputs of a `translate` command: `args.text`, then the lines of
    `args.file`, else the lines of stdin."""
    # Undecodable bytes (arguments, a file or stdin in another encoding)
    # become U+FFFD instead of stopping the command.
    texts = [
        t.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        for t in args.text
    ]
    if args.file:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            texts += [line.rstrip("\n") for line in f if line.strip()]
    if not texts:
        if hasattr(sys.stdin, "reconfigure"):
            sys.stdin.reconfigure(errors="replace")
        texts = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    return texts


def report_metrics(args, metrics, format_metrics, strip_results):
    """Prints the metrics of `evaluate` (and writes `--json`); status 0.

    `args.label`, when set, names what was scored instead of the split."""
    label = getattr(args, "label", None)
    print(f"{label or f'{args.split} split of {args.run}'}:")
    print(format_metrics(metrics))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(strip_results(metrics), f, indent=2)
    return 0


def run_main(parser, argv=None, debug_variable="NMT_DEBUG"):
    """Parses `argv`, runs `args.func(args)`; returns the exit status.

    A `ValueError` (bad data files, run directories, settings) gets a
    message and status 2, not a traceback; with the environment variable
    `debug_variable` set, the traceback.
    """
    args = parser.parse_args(argv)
    import_tensorflow_quietly()
    try:
        return args.func(args)
    except ValueError as e:
        if os.environ.get(debug_variable):
            raise
        print(f"{parser.prog} {args.command}: error: {e}", file=sys.stderr)
        return 2


def add_serve_command(sub, func, shows):
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


def new_parser(prog, description):
    """An example's argument parser and its group of sub-commands:
    `(parser, sub)`."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser, parser.add_subparsers(dest="command", required=True)


def add_train_command(sub, func, default_out, add_configs):
    """`train --out RUN` and the config flags that `add_configs(parser)`
    adds."""
    p = sub.add_parser("train", help="train a model into a run directory")
    p.add_argument("--out", default=default_out, help="run directory")
    add_configs(p)
    p.set_defaults(func=func)
    return p


def add_export_command(sub, func):
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
    sub, func, help, inputs, verb,
    model_help="SavedModel directory or run directory",
):
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
    p.set_defaults(func=func)
    return p


def add_evaluate_command(
    sub, func, help, max_flag, run_help="run directory of `train`",
):
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
    p.add_argument(max_flag, type=int, default=None)
    p.add_argument("--json", help="also write the metrics to this JSON file")
    beam_width_argument(p, DEFAULT_BEAM_WIDTH, "also evaluate")
    p.set_defaults(func=func)
    return p


def add_demo_command(sub, func, help, default_out, add_configs):
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
    p.set_defaults(func=func)
    return p
