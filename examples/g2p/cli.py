"""Command line of the G2P example: `python -m examples.g2p COMMAND`.

    python -m examples.g2p demo --out runs/g2p-demo      # the whole story
    python -m examples.g2p train --out runs/g2p
    python -m examples.g2p train --lexicon ../shared/data/cmudict-g2p/train.tsv
    python -m examples.g2p export --run runs/g2p
    python -m examples.g2p translate --model runs/g2p --attention keras
    python -m examples.g2p translate --model runs/g2p --n-best 3 read
    python -m examples.g2p translate --model runs/g2p --prefix "R" read
    python -m examples.g2p evaluate --run runs/g2p       # greedy and beam
    python -m examples.g2p evaluate --run runs/g2p --lexicon test.tsv
    python -m examples.g2p serve --model runs/g2p        # a local web page
    python -m examples.g2p translate --model pretrained read   # shipped model

Argument parsing only. The flags of `train` and `demo` come from the config
dataclasses (`config.py`; the model and training ones are the examples'
shared `ModelConfig` and `TrainConfig`, without the settings that do not
apply to G2P, `config.NOT_FLAGS`), through `keras_attention.recipes.parser`. No
TensorFlow is imported before the arguments are parsed.
"""

import sys

from keras_attention.recipes import parser as recipe_cli
from keras_attention.recipes import decoding as decoding_cli
from examples.g2p import config as config_lib


PROG = "python -m examples.g2p"
TRAIN_SETTINGS = config_lib.G2P_SETTINGS
DEMO_SETTINGS = config_lib.merge(
    config_lib.G2P_SETTINGS, config_lib.DEMO_SETTINGS
)


def _configs(args, settings=TRAIN_SETTINGS):
    return recipe_cli.configs_from_args(args, config_lib.SECTIONS, settings)


def _config_arguments(settings):
    """Adds the G2P config flags (`settings` as the defaults) to a parser."""
    def add(parser):
        recipe_cli.add_config_arguments(
            parser, config_lib.SECTIONS, settings,
            exclude=config_lib.NOT_FLAGS,
        )
    return add


def cmd_train(args):
    import dataclasses

    from examples.g2p import pretrained
    from examples.g2p import train as train_lib

    data, model, train = _configs(args)
    # `--teachers pretrained` names the shipped model's run.
    train = dataclasses.replace(
        train,
        teachers=tuple(pretrained.run_directory(r) for r in train.teachers),
    )
    train_lib.train(args.out, data, model, train, overwrite=args.overwrite)
    return 0


def cmd_export(args):
    from examples.g2p import pretrained
    from examples.g2p import train as train_lib

    if pretrained.is_pretrained(args.run) and not args.out:
        raise ValueError(
            "`export --run pretrained` needs `--out` (the shipped model's "
            "folder stays as shipped). Received: --out None"
        )
    options = decoding_cli.export_options(args)
    options["ensemble"] = [
        pretrained.run_directory(run) for run in options["ensemble"]
    ]
    path = train_lib.export_run(
        pretrained.run_directory(args.run), args.out, **options
    )
    print(f"exported SavedModel -> {path}")
    return 0


def warn_outside_alphabet(words):
    """One `warning:` line on stderr for each word with characters outside
    the alphabet (`text.outside_alphabet`): the model reads them as
    `[UNK]`, so its phones for them are a guess."""
    from examples.g2p import text as text_lib

    for word in words:
        outside = text_lib.outside_alphabet(word)
        if outside:
            print(
                f"{PROG} translate: warning: {word!r} has characters outside "
                f"the alphabet (a-z and '): {outside!r}, read as [UNK]",
                file=sys.stderr, flush=True,
            )


def cmd_translate(args):
    from examples.g2p import pretrained

    args.model = pretrained.model_path(args.model)
    words = recipe_cli.read_texts(args)
    warn_outside_alphabet(words)
    decoding_cli.translate_texts(args, words)
    return 0


def cmd_evaluate(args):
    from examples.g2p import evaluate as eval_lib
    from examples.g2p import pretrained

    if pretrained.is_pretrained(args.run):
        args.saved_model = args.saved_model or pretrained.saved_model()
        args.run = pretrained.DIRECTORY
    if args.lexicon:
        from examples.g2p import evaluate_lexicon

        metrics = evaluate_lexicon.evaluate_lexicon(
            args.run, args.lexicon, args.saved_model, args.max_words,
            args.beam_width,
        )
        greedy = metrics["greedy"]
        skipped = f"{greedy['skipped']} malformed lines skipped"
        if greedy["skipped"]:
            skipped += f": {greedy['skip_report']}"
        args.label = f"{args.lexicon} ({skipped}) with {args.run}"
        return recipe_cli.report_metrics(
            args, metrics, eval_lib.format_metrics, eval_lib.strip_results
        )
    metrics = eval_lib.evaluate_run(
        args.run, args.split, args.saved_model, args.max_words,
        args.beam_width,
    )
    return recipe_cli.report_metrics(
        args, metrics, eval_lib.format_metrics, eval_lib.strip_results
    )


def cmd_serve(args):
    from examples.g2p import pretrained
    from examples.g2p import serve

    serve.serve(pretrained.model_path(args.model), args.port)
    return 0


def cmd_demo(args):
    from examples.g2p import demo

    configs = _configs(args, DEMO_SETTINGS)
    if args.quick:
        configs = config_lib.replace(configs, config_lib.QUICK_DEMO_SETTINGS)
    demo.run_demo(args.out, configs, beam_width=args.beam_width)
    return 0


def build_parser():
    """The argparse parser of every command."""
    parser, sub = recipe_cli.new_parser(
        PROG,
        "Grapheme-to-phoneme conversion with attention: train, export, "
        "pronounce, evaluate.",
    )
    recipe_cli.add_train_command(
        sub, cmd_train, "runs/g2p", _config_arguments(TRAIN_SETTINGS)
    )
    recipe_cli.add_export_command(sub, cmd_export)
    recipe_cli.add_translate_command(
        sub, cmd_translate, "pronounce words (exported model)", "word",
        "pronounce",
        model_help="SavedModel directory, run directory, or 'pretrained' "
        "(the model shipped with the example)",
    )
    p = recipe_cli.add_evaluate_command(
        sub, cmd_evaluate, "WER and PER on a split", "--max-words",
        run_help="run directory of `train`, or 'pretrained' (the shipped "
        "model; with --lexicon)",
    )
    p.add_argument(
        "--lexicon", metavar="FILE", default=None,
        help="score this WORD<TAB>PHONES file instead of --split (a word "
        "on several lines has several references)",
    )
    recipe_cli.add_demo_command(
        sub, cmd_demo, "train on CMUdict, export, pronounce, show, evaluate",
        "runs/g2p-demo", _config_arguments(DEMO_SETTINGS),
    )

    recipe_cli.add_serve_command(
        sub, cmd_serve, "pronunciations, attention heatmap, letter-phone links"
    )
    return parser


def main(argv=None):
    """Runs one command; returns the exit status (2 on bad input;
    G2P_DEBUG=1 shows the traceback)."""
    return recipe_cli.run_main(build_parser(), argv, "G2P_DEBUG")
