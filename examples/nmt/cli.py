"""Command line of the NMT example: `python -m examples.nmt COMMAND`.

    python -m examples.nmt demo --out runs/demo      # the whole story
    python -m examples.nmt train --out runs/dates
    python -m examples.nmt export --run runs/dates
    python -m examples.nmt translate --model runs/dates/export "3. März 1999"
    python -m examples.nmt translate --model runs/dates --beam-width 4 "..."
    python -m examples.nmt translate --model runs/dates --n-best 5 "..."
    python -m examples.nmt translate --model runs/dates --sample --seed 1 "."
    python -m examples.nmt translate --model runs/dates --prefix "Friday" .
    python -m examples.nmt export --run runs/a --ensemble runs/b --out ens
    python -m examples.nmt evaluate --run runs/dates   # greedy and beam
    python -m examples.nmt evaluate --run runs/fra --data test.tsv
    python -m examples.nmt serve --model runs/dates    # a local web page
    python -m examples.nmt reference-align --data fra.txt --out fra.align
    python -m examples.nmt train --data /path/fra.txt --out runs/fra
    python -m examples.nmt align --run runs/fra --data pairs.tsv --out a.txt
    python -m examples.nmt score-alignment --gold gold.txt --hyp a.txt

Argument parsing only: each command calls the module that does the work.
The flags of `train` and `demo` are generated from the fields of the
config dataclasses (`config.py`), with their defaults, types, choices and
help; `demo` starts from `config.DEMO_SETTINGS` instead.
"""

import argparse
import dataclasses
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from examples.nmt import cli_commands  # noqa: E402
from examples.nmt import config as config_lib  # noqa: E402
from examples.nmt import decoding_cli  # noqa: E402
from examples.nmt import evaluate as eval_lib  # noqa: E402


def _dest(section, name):
    return f"{section}.{name}"


def add_config_arguments(parser, settings=None, sections=None):
    """Adds one argument group per config section, from the fields.

    Every field declared with `config.option` becomes a flag; booleans get
    `--flag/--no-flag`. `settings` (like `config.DEMO_SETTINGS`) replaces
    defaults. The values land in `args` under `"section.field"`: read them
    back with `configs_from_args`. `sections` defaults to
    `config.SECTIONS`.
    """
    settings = settings or {}
    for section, cls in sections or config_lib.SECTIONS:
        group = parser.add_argument_group(section)
        for field in dataclasses.fields(cls):
            meta = dict(field.metadata)
            if "help" not in meta:
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


def configs_from_args(args, sections=None):
    """The configs (`(data, text, model, train)` by default) of parsed
    arguments."""
    configs = []
    for section, cls in sections or config_lib.SECTIONS:
        values = {}
        for field in dataclasses.fields(cls):
            dest = _dest(section, field.name)
            if hasattr(args, dest):
                value = getattr(args, dest)
                if isinstance(value, list):
                    value = tuple(value)
                values[field.name] = value
        configs.append(cls(**values))
    return tuple(configs)


# ----------------------------------------------------------------------
# Commands.


def cmd_train(args):
    from examples.nmt import train as train_lib

    train_lib.train(args.out, *configs_from_args(args))
    return 0


def cmd_export(args):
    from examples.nmt import export as export_lib

    path = export_lib.export_run(
        args.run, args.out, args.max_output_tokens,
        ensemble=args.ensemble or (),
        coverage_penalty=args.coverage_penalty,
        replace_unknown=args.replace_unknown,
        convention="tfa" if args.tfa_convention else "default",
    )
    print(f"exported SavedModel -> {path}")
    return 0


def read_texts(args):
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


def cmd_translate(args):
    from examples.nmt import demo

    grouped = decoding_cli.translate_texts(args, read_texts(args))
    if args.plot:
        best = [(text, hypotheses[0]) for text, hypotheses in grouped]
        demo.save_heatmaps(best[:4], args.plot)
        print(f"attention heatmaps -> {args.plot}")
    return 0


def cmd_evaluate(args):
    if args.data:
        return cli_commands.cmd_evaluate_data(args, report_metrics)
    metrics = eval_lib.evaluate_run(
        args.run, args.split, args.saved_model, args.max_examples,
        args.beam_width,
    )
    return report_metrics(
        args, metrics, eval_lib.format_metrics, eval_lib.strip_results
    )


def report_metrics(args, metrics, format_metrics, strip_results):
    """Prints the metrics of `evaluate` (and writes `--json`); status 0.

    Shared with the G2P example, whose metrics have their own format."""
    label = getattr(args, "label", None)
    print(f"{label or f'{args.split} split of {args.run}'}:")
    print(format_metrics(metrics))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(strip_results(metrics), f, indent=2)
    return 0


def cmd_demo(args):
    from examples.nmt import demo

    configs = configs_from_args(args)
    if args.quick:
        configs = config_lib.replace(configs, config_lib.QUICK_DEMO_SETTINGS)
    configs = config_lib.replace(configs, {"data": {"paths": ("dates",)}})
    demo.run_demo(args.out, configs, beam_width=args.beam_width)
    return 0


def cmd_align(args):
    from examples.nmt import align as align_lib
    from examples.nmt import data as data_lib
    from keras_attention import alignment as al

    corpus = data_lib.load_corpus(
        args.data, data_format=args.data_format, direction=args.direction
    )
    if corpus.skipped:
        raise ValueError(
            "Every line of the pairs file must be a pair (the links are "
            f"written one line per pair). Received: {corpus.skipped} "
            f"malformed lines ({dict(corpus.reasons)}) in {args.data}"
        )
    links = align_lib.align_run(
        args.run, corpus.pairs, reverse_run=args.reverse_run,
        symmetrize=args.symmetrize, batch_size=args.batch_size,
        progress=len(corpus) >= 1000 and not args.quiet,
        shift=args.shift, method=args.links, threshold=args.threshold,
    )
    al.write_pharaoh(args.out, links)
    print(f"{len(links)} pairs, {sum(map(len, links))} links -> {args.out}")
    return 0


def cmd_score_alignment(args):
    from keras_attention import alignment as al

    gold = al.read_pharaoh(args.gold, one_based=args.one_based)
    hyp = al.read_pharaoh(args.hyp, one_based=args.hyp_one_based)
    if len(gold) != len(hyp):
        raise ValueError(
            "The gold and hypothesis files must have one line per pair "
            f"each. Received: {len(gold)} lines in {args.gold}, "
            f"{len(hyp)} in {args.hyp}"
        )
    scores = al.alignment_scores(
        [set(s) | set(p) for s, p in hyp],
        [s for s, _ in gold], [p for _, p in gold],
    )
    for name in ("aer", "precision", "recall"):
        print(f"{name:<10}{100 * scores[name]:6.2f} %")
    print(f"({scores['sentences']} pairs, {scores['hypothesis']} links, "
          f"{scores['sure']} sure, {scores['possible']} possible)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(scores, f, indent=2)
    return 0


def add_alignment_commands(sub):
    """The `align` and `score-alignment` sub-commands."""
    from examples.nmt.data import DATA_FORMATS
    from examples.nmt.readers import DIRECTIONS
    from keras_attention.alignment.symmetrization import METHODS

    p = sub.add_parser(
        "align",
        help="Pharaoh word links of a trained run's teacher-forced "
        "attention on sentence pairs",
    )
    p.add_argument(
        "--run", help="run directory of `train` (source -> target)"
    )
    p.add_argument(
        "--data", required=True, nargs="+",
        help="the pairs: 'source<TAB>target' TSV, Anki or two files",
    )
    p.add_argument("--data-format", default="auto", choices=DATA_FORMATS)
    p.add_argument("--direction", default="to-english", choices=DIRECTIONS)
    p.add_argument(
        "--reverse-run",
        help="run trained target -> source: its links are transposed and "
        "symmetrized with the forward ones",
    )
    p.add_argument(
        "--symmetrize", default="grow-diag-final-and", choices=METHODS
    )
    p.add_argument(
        "--shift", action="store_true",
        help="Shift-Att: a target word takes the attention of the decoder "
        "step that reads it, not of the step that predicts it",
    )
    p.add_argument(
        "--links", default="argmax", choices=("argmax", "threshold"),
        help="hard links of each direction: one per target word (argmax) "
        "or every word pair of attention >= --threshold",
    )
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--out", required=True,
        help="Pharaoh file: one line per pair, 0-based, source word first",
    )
    p.set_defaults(func=cmd_align)

    p = sub.add_parser(
        "score-alignment",
        help="alignment error rate, precision and recall against a gold",
    )
    p.add_argument("--gold", required=True, help="gold Pharaoh file")
    p.add_argument("--hyp", required=True, help="hypothesis Pharaoh file")
    p.add_argument(
        "--one-based", action="store_true", help="the gold counts from 1"
    )
    p.add_argument(
        "--hyp-one-based", action="store_true",
        help="the hypothesis counts from 1",
    )
    p.add_argument("--json", help="also write the scores to this JSON file")
    p.set_defaults(func=cmd_score_alignment)


def beam_width_argument(parser, default, what):
    parser.add_argument(
        "--beam-width", type=int, default=default,
        help=f"{what} beam search of this width "
        "(default %(default)s; 0: greedy only)",
    )


def build_parser():
    """The argparse parser of every command."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.nmt",
        description="Neural machine translation with attention: train, "
        "export, translate, evaluate.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a model into a run directory")
    p.add_argument("--out", default="runs/nmt", help="run directory")
    add_config_arguments(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("export", help="export a trained run as a SavedModel")
    p.add_argument("--run", required=True, help="run directory of `train`")
    p.add_argument(
        "--out", default=None, help="SavedModel directory (default RUN/export)"
    )
    p.add_argument("--max-output-tokens", type=int, default=None)
    decoding_cli.export_option_arguments(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("translate", help="translate with an exported model")
    p.add_argument(
        "--model", required=True, help="SavedModel directory or run directory"
    )
    p.add_argument("text", nargs="*", help="sentences (default: --file/stdin)")
    p.add_argument("--file", help="file with one sentence a line")
    p.add_argument(
        "--attention", action="store_true",
        help="print the attention as a text grid",
    )
    p.add_argument("--plot", help="save attention heatmaps to this PNG")
    beam_width_argument(p, 0, "translate with")
    decoding_cli.decoding_arguments(p)
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser(
        "evaluate",
        help="BLEU, chrF, exact match (and alignment accuracy on dates)",
    )
    p.add_argument("--run", required=True, help="run directory of `train`")
    p.add_argument(
        "--split", default="test", choices=["train", "validation", "test"]
    )
    p.add_argument(
        "--saved-model", default=None,
        help="default: RUN/export (exported if missing)",
    )
    p.add_argument("--max-examples", type=int, default=None)
    p.add_argument("--json", help="also write the metrics to this JSON file")
    beam_width_argument(p, eval_lib.DEFAULT_BEAM_WIDTH, "also evaluate")
    cli_commands.add_test_set_arguments(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "demo",
        help="train on the embedded dates, export, translate, show "
        "attention, evaluate",
    )
    p.add_argument("--out", default="runs/demo", help="run directory")
    p.add_argument(
        "--quick", action="store_true",
        help="tiny smoke run (seconds, poor quality)",
    )
    beam_width_argument(
        p, eval_lib.DEFAULT_BEAM_WIDTH, "also translate and evaluate with"
    )
    add_config_arguments(p, config_lib.DEMO_SETTINGS)
    p.set_defaults(func=cmd_demo)
    add_alignment_commands(sub)
    cli_commands.add_reference_align_command(sub)
    cli_commands.add_serve_command(sub)
    return parser


def main(argv=None):
    """Runs one command; returns the exit status (2 on bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as e:
        # Bad input (data files, run directories, settings) gets a message
        # and exit status 2, not a traceback; NMT_DEBUG=1 shows the traceback.
        if os.environ.get("NMT_DEBUG"):
            raise
        print(f"{parser.prog} {args.command}: error: {e}", file=sys.stderr)
        return 2
