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

import json
import time

from keras_attention.recipes import parser as recipe_cli
from keras_attention.recipes import decoding as decoding_cli
from keras_attention.recipes.parser import read_texts
from keras_attention.recipes.parser import report_metrics
from examples.nmt import config as config_lib

from examples.nmt import cli_commands  # noqa: E402



def add_config_arguments(parser, settings=None, sections=None):
    """The config flags of `train` and `demo` (`keras_attention.recipes.parser`), from the
    NMT sections by default."""
    recipe_cli.add_config_arguments(
        parser, sections or config_lib.SECTIONS, settings
    )


def configs_from_args(args, sections=None):
    """The `(data, text, model, train)` configs of parsed arguments."""
    return recipe_cli.configs_from_args(
        args, sections or config_lib.SECTIONS
    )


# ----------------------------------------------------------------------
# Commands.


def cmd_train(args):
    from examples.nmt import train as train_lib

    train_lib.train(args.out, *configs_from_args(args), overwrite=args.overwrite)
    return 0


def cmd_export(args):
    from keras_attention.translator import export_run

    path = export_run(
        args.run, args.out, max_output_tokens=args.max_output_tokens,
        **decoding_cli.export_options(args),
    )
    print(f"exported SavedModel -> {path}")
    return 0


def cmd_translate(args):
    grouped = decoding_cli.translate_texts(args, read_texts(args))
    if args.plot:
        best = [(text, hypotheses[0]) for text, hypotheses in grouped]
        decoding_cli.save_heatmaps(best[:4], args.plot)
        print(f"attention heatmaps -> {args.plot}")
    return 0


def cmd_evaluate(args):
    if args.data:
        return cli_commands.cmd_evaluate_data(args, report_metrics)
    from examples.nmt import evaluate as eval_lib

    metrics = eval_lib.evaluate_run(
        args.run, args.split, args.saved_model, args.max_examples,
        args.beam_width,
    )
    return report_metrics(
        args, metrics, eval_lib.format_metrics, eval_lib.strip_results
    )


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
    from examples.nmt import align_prior
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
    prior = None
    if args.self_prior and args.prior_links:
        raise ValueError(
            "`--self-prior` counts the link rates of the runs' own links: "
            "it does not go with `--prior-links` (a reference aligner's). "
            f"Received: --prior-links {args.prior_links}"
        )
    if args.self_prior:
        prior = self_prior(args, corpus.pairs)
    elif args.prior_links:
        prior = align_prior.corpus_link_rates(
            args.prior_data or args.data, args.prior_links,
            data_format=(
                args.prior_data_format if args.prior_data else args.data_format
            ),
            direction=args.direction,
        )
    elif args.prior_data:
        raise ValueError(
            "`--prior-data` needs `--prior-links` (the links of its pairs) "
            "or `--self-prior`. "
            f"Received: --prior-data {' '.join(args.prior_data)}"
        )
    start = time.perf_counter()
    links = align_lib.align_run(
        args.run, corpus.pairs, reverse_run=args.reverse_run,
        symmetrize=args.symmetrize, batch_size=args.batch_size,
        progress=len(corpus) >= 1000 and not args.quiet,
        shift=args.shift, method=args.links, threshold=args.threshold,
        prior=prior, prior_weight=args.prior_weight,
        cognates=args.cognates, max_tokens=args.max_tokens,
        prior_mix=args.prior_mix, prior_floor=args.prior_floor,
        agreement_threshold=args.agreement_threshold,
        diagonal_tension=args.diagonal_tension,
    )
    seconds = time.perf_counter() - start
    al.write_pharaoh(args.out, links)
    print(f"{len(links)} pairs, {sum(map(len, links))} links -> {args.out} "
          f"in {seconds:.1f} s ({len(links) / max(seconds, 1e-9):.0f} "
          "pairs/s)")
    return 0


def self_prior(args, pairs):
    """The link rates of the runs' own links (`--self-prior`): a first
    pass without a prior over `--prior-data` (default: the pairs being
    aligned), counted by `LinkRates.from_links`."""
    from examples.nmt import align as align_lib
    from examples.nmt import data as data_lib
    from keras_attention import alignment as al

    if args.prior_data:
        corpus = data_lib.load_corpus(
            args.prior_data, data_format=args.prior_data_format,
            direction=args.direction,
        )
        pairs = corpus.pairs
    start = time.perf_counter()
    links = align_lib.align_run(
        args.run, pairs, reverse_run=args.reverse_run,
        symmetrize=args.symmetrize, batch_size=args.batch_size,
        progress=len(pairs) >= 1000 and not args.quiet,
        shift=args.shift, method=args.links, threshold=args.threshold,
        max_tokens=args.max_tokens,
        agreement_threshold=args.agreement_threshold,
        diagonal_tension=args.diagonal_tension,
    )
    print(f"self prior: {len(pairs)} pairs, {sum(map(len, links))} links "
          f"counted in {time.perf_counter() - start:.1f} s")
    return al.LinkRates.from_links(
        [s for s, _ in pairs], [t for _, t in pairs], links
    )


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
        "--symmetrize", default=config_lib.ALIGN_DEFAULTS["symmetrize"],
        metavar="METHOD",
        help="a method of keras_attention.alignment.symmetrize (checked "
        "there): intersection, union or a grow variant, on each "
        "direction's hard links; or 'agreement': the word pairs where the "
        "two directions' soft attention agree, geometric mean >= "
        "--agreement-threshold (keras_attention.alignment.agreement_links; "
        "needs --run and --reverse-run) (default: %(default)s)",
    )
    p.add_argument(
        "--agreement-threshold", type=float,
        default=config_lib.ALIGN_DEFAULTS["agreement_threshold"],
        help="the threshold of --symmetrize agreement, in (0, 1] "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--shift", action="store_true",
        help="Shift-Att: a target word takes the attention of the decoder "
        "step that reads it, not of the step that predicts it",
    )
    p.add_argument(
        "--links", default=config_lib.ALIGN_DEFAULTS["method"],
        choices=("argmax", "threshold"),
        help="hard links of each direction: one per target word (argmax) "
        "or every word pair of attention >= --threshold",
    )
    p.add_argument(
        "--threshold", type=float,
        default=config_lib.ALIGN_DEFAULTS["threshold"],
    )
    p.add_argument(
        "--prior-links", metavar="FILE",
        help="lexical prior: Pharaoh links of a reference aligner (e.g. "
        "reference-align) on --prior-data; their per-word-pair link rates "
        "are mixed into the attention before the links are taken",
    )
    p.add_argument(
        "--prior-data", nargs="+", metavar="FILE",
        help="the pairs of --prior-links or --self-prior, in --direction "
        "(default: --data itself), e.g. the whole corpus when --data holds "
        "some of its pairs",
    )
    p.add_argument(
        "--prior-data-format", default="auto", choices=DATA_FORMATS,
        help="format of --prior-data (default: %(default)s)",
    )
    p.add_argument(
        "--cognates", action="store_true",
        help="add the words' spelling similarity (character bigrams) to "
        "the prior, for cognates, names and numbers; needs no links",
    )
    p.add_argument(
        "--self-prior", action="store_true",
        help="lexical prior without a reference aligner: the link rates of "
        "the runs' own links of --prior-data (default: --data), from a "
        "first pass without a prior",
    )
    p.add_argument(
        "--prior-weight", type=float,
        default=config_lib.ALIGN_DEFAULTS["prior_weight"],
        help="the prior's share of the mixture, in [0, 1] (default: "
        "%(default)s)",
    )
    p.add_argument(
        "--prior-mix", default=config_lib.ALIGN_DEFAULTS["prior_mix"],
        choices=("linear", "product"),
        help="how the prior enters the attention: linear, (1 - "
        "--prior-weight) * attention + --prior-weight * prior; product, "
        "attention * (--prior-floor + prior) renormalized per word (rows "
        "that stay distributions, for --symmetrize agreement) (default: "
        "%(default)s)",
    )
    p.add_argument(
        "--prior-floor", type=float,
        default=config_lib.ALIGN_DEFAULTS["prior_floor"],
        help="with --prior-mix product: how much the attention counts "
        "where the prior is 0, > 0 (default: %(default)s)",
    )
    p.add_argument(
        "--diagonal-tension", type=float, metavar="T",
        default=config_lib.ALIGN_DEFAULTS["diagonal_tension"],
        help="fast_align's distortion prior in each direction's attention: "
        "weights times exp(-T * |i/m - j/n|), renormalized per word "
        "(keras_attention.alignment.favor_diagonal; T >= 0, fast_align "
        "starts at 4) (default: none)",
    )
    p.add_argument(
        "--batch-size", type=int,
        default=config_lib.ALIGN_DEFAULTS["batch_size"],
    )
    p.add_argument(
        "--max-tokens", type=int, default=None,
        help="longest token sequence read (default: the run's training "
        "cut); larger aligns every word of long sentences",
    )
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


def build_parser():
    """The argparse parser of every command."""
    parser, sub = recipe_cli.new_parser(
        "python -m examples.nmt",
        "Neural machine translation with attention: train, export, "
        "translate, evaluate.",
    )
    recipe_cli.add_train_command(
        sub, cmd_train, "runs/nmt", add_config_arguments
    )
    p = recipe_cli.add_export_command(sub, cmd_export)
    p.add_argument("--max-output-tokens", type=int, default=None)
    p = recipe_cli.add_translate_command(
        sub, cmd_translate, "translate with an exported model", "sentence",
        "translate",
    )
    p.add_argument("--plot", help="save attention heatmaps to this PNG")
    p = recipe_cli.add_evaluate_command(
        sub, cmd_evaluate,
        "BLEU, chrF, exact match (and alignment accuracy on dates)",
        "--max-examples",
    )
    cli_commands.add_test_set_arguments(p)
    recipe_cli.add_demo_command(
        sub, cmd_demo,
        "train on the embedded dates, export, translate, show attention, "
        "evaluate",
        "runs/demo",
        lambda p: add_config_arguments(p, config_lib.DEMO_SETTINGS),
    )
    add_alignment_commands(sub)
    cli_commands.add_reference_align_command(sub)
    cli_commands.add_serve_command(sub)
    return parser


def main(argv=None):
    """Runs one command; returns the exit status (2 on bad input;
    NMT_DEBUG=1 shows the traceback)."""
    return recipe_cli.run_main(build_parser(), argv, "NMT_DEBUG")
