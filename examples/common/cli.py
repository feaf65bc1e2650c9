"""What the command lines of both examples share.

- `quiet_tensorflow`: TensorFlow's C++ start-up logs off for the command
  line (`TF_CPP_MIN_LOG_LEVEL=2` unless the user set it);
- `add_config_arguments`/`configs_from_args`: argparse groups generated
  from the config dataclasses (`config.option` fields), and back;
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
    a run or a SavedModel (`keras_attention.seq2seq.web`); `shows` ends the
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
