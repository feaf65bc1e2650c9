"""The `serve` and `reference-align` commands and `evaluate --data`.

Their argument parsers and the functions that call the modules doing the
work (`serve.py`, `reference_align.py`, `evaluate_data.py`); `cli.py` adds
them to its parser.
"""


def cmd_evaluate_data(args, report_metrics):
    from examples.nmt import evaluate as eval_lib
    from examples.nmt import evaluate_data

    metrics = evaluate_data.evaluate_data(
        args.run, args.data, args.data_format, args.direction,
        args.saved_model, args.max_examples, args.beam_width,
    )
    args.label = (
        f"{' '.join(args.data)} ({metrics['examples']} pairs, "
        f"{metrics['skipped']} malformed lines skipped) with {args.run}"
    )
    return report_metrics(
        args, metrics, eval_lib.format_metrics, eval_lib.strip_results
    )


def cmd_reference_align(args):
    import time

    from examples.nmt import reference_align

    start = time.perf_counter()
    try:
        links = reference_align.reference_align(
            args.data, args.out, args.data_format, args.direction,
            args.symmetrize,
        )
    except ImportError as e:  # eflomal missing: a message, not a traceback
        raise ValueError(str(e)) from None
    print(
        f"{len(links)} pairs, {sum(map(len, links))} {args.symmetrize} links "
        f"-> {args.out} (+ .fwd, .rev) in {time.perf_counter() - start:.1f} s"
    )
    return 0


def cmd_serve(args):
    from examples.nmt import serve

    serve.serve(args.model, args.port)
    return 0


def add_test_set_arguments(p):
    """`evaluate --data`: score a test set of one's own instead of --split."""
    from examples.nmt.data import DATA_FORMATS
    from examples.nmt.readers import DIRECTIONS

    p.add_argument(
        "--data", nargs="+", metavar="FILE", default=None,
        help="test set instead of --split: an Anki/TSV file or two "
        "line-aligned files (source, target)",
    )
    p.add_argument(
        "--data-format", default="auto", choices=DATA_FORMATS,
        help="format of --data (default: %(default)s)",
    )
    p.add_argument(
        "--direction", default=None, choices=DIRECTIONS,
        help="direction of an Anki --data file (default: the run's)",
    )


def add_serve_command(sub):
    """`serve`: the local web page of a run or SavedModel."""
    from keras_attention.recipes.parser import add_serve_command as add_serve

    add_serve(sub, cmd_serve, "translations, attention heatmap, word links")


def add_reference_align_command(sub):
    """`reference-align`: eflomal links for `train --guided-alignment`."""
    from examples.nmt.data import DATA_FORMATS
    from examples.nmt.readers import DIRECTIONS

    p = sub.add_parser(
        "reference-align",
        help="eflomal reference links of a corpus for --guided-alignment "
        "(needs the align extra)",
    )
    p.add_argument(
        "--data", required=True, nargs="+",
        help="the corpus, as train --data: Anki, TSV or two files",
    )
    p.add_argument("--data-format", default="auto", choices=DATA_FORMATS)
    p.add_argument(
        "--direction", default="to-english", choices=DIRECTIONS,
        help="the direction of the model to train (default %(default)s)",
    )
    p.add_argument(
        "--symmetrize", default="grow-diag-final-and",
        help="how the two directions combine: a method of "
        "keras_attention.alignment.symmetrize, checked before aligning "
        "(default %(default)s)",
    )
    p.add_argument(
        "--out", required=True,
        help="Pharaoh file of the symmetrized links (also OUT.fwd, OUT.rev)",
    )
    p.set_defaults(func=cmd_reference_align)
