"""`align`: word links of sentence pairs (`Translator.align`) as Pharaoh
lines, `i-j` source-target, 0-based, one line per pair."""

from typing import Any

import sys

from keras_attention.alignment.agreement import AGREEMENT
from keras_attention.cli.errors import CliError
from keras_attention.cli.files import check_output
from keras_attention.cli.files import save_atomically
from keras_attention.cli.io import read_pairs
from keras_attention.cli.models import load_translator


def run(args: Any) -> int:
    """Runs `align`."""
    options = {}
    method = getattr(args, "method", None)
    if method is not None:
        options["method"] = method
    if hasattr(args, "threshold"):
        if method != "threshold":
            raise CliError("--threshold goes with --method threshold")
        if not 0.0 <= args.threshold <= 1.0:
            raise CliError(
                f"--threshold must be in [0, 1]; got {args.threshold}"
            )
        options["threshold"] = args.threshold
    if hasattr(args, "symmetrize"):
        if args.reverse is None:
            raise CliError(
                "--symmetrize goes with --reverse (a model of the other "
                "direction)"
            )
        options["symmetrize"] = args.symmetrize
    if hasattr(args, "agreement_threshold"):
        if getattr(args, "symmetrize", None) != AGREEMENT:
            raise CliError(
                "--agreement-threshold goes with --symmetrize agreement"
            )
        if not 0.0 < args.agreement_threshold <= 1.0:
            raise CliError(
                "--agreement-threshold must be in (0, 1]; got "
                f"{args.agreement_threshold}"
            )
        options["agreement_threshold"] = args.agreement_threshold
    if hasattr(args, "diagonal_tension"):
        if not 0.0 <= args.diagonal_tension < float("inf"):
            raise CliError(
                "--diagonal-tension must be a finite number >= 0; got "
                f"{args.diagonal_tension}"
            )
        options["diagonal_tension"] = args.diagonal_tension
    if args.out is not None:
        check_output(args.out, "--out", overwrite=True)
    sources, targets = read_pairs(args.data, args.data_format, args.target_file)
    translator = load_translator(args.model)
    if args.reverse is not None:
        options["reverse"] = load_translator(args.reverse, "--reverse")

    from keras_attention.alignment import format_pharaoh

    links = translator.align(sources, targets, **options)
    lines = "".join(format_pharaoh(pair) + "\n" for pair in links)
    if args.out is None:
        sys.stdout.write(lines)
        sys.stdout.flush()
        return 0

    def write(path: str) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(lines)

    save_atomically(args.out, write)
    print(f"wrote {len(links)} lines to {args.out}", file=sys.stderr)
    return 0
