"""`export`: `Translator.export`, the string-to-string SavedModel, written
to a temporary directory beside `--out` and renamed onto it."""

from typing import Any

import os

from keras_attention.cli.errors import CliError
from keras_attention.cli.files import check_output
from keras_attention.cli.files import save_directory_atomically
from keras_attention.cli.models import load_translator


def run(args: Any) -> int:
    """Runs `export`."""
    if os.path.isfile(args.out):
        raise CliError(f"--out {args.out}: is a file; give a directory")
    check_output(args.out, "--out", args.overwrite)
    translator = load_translator(args.model)
    options = {} if args.xla is None else {"xla": args.xla}
    save_directory_atomically(
        args.out, lambda path: translator.export(path, **options)
    )
    print(f"exported {args.out}", flush=True)
    return 0
