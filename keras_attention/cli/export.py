"""`export`: `Translator.export`, written to a temporary name beside
`--out` and renamed onto it: the SavedModel directory, or the LiteRT or
ONNX file with its vocabulary file and client."""

from typing import Any

import os
import shutil
import tempfile

from keras_attention.cli.errors import CliError
from keras_attention.cli.files import check_output
from keras_attention.cli.files import save_directory_atomically
from keras_attention.cli.models import load_translator

SUFFIXES = {"litert": ".tflite", "onnx": ".onnx"}


def _check(args: Any) -> None:
    if args.format == "tf_saved_model":
        if args.quantize is not None:
            raise CliError(
                "--quantize is for --format litert or onnx; a SavedModel "
                "keeps the model's weights"
            )
        if os.path.isfile(args.out):
            raise CliError(f"--out {args.out}: is a file; give a directory")
        return
    suffix = SUFFIXES[args.format]
    if not args.out.endswith(suffix):
        raise CliError(
            f"--out {args.out}: a --format {args.format} export is one "
            f"{suffix} file; give a path ending with {suffix}"
        )
    if args.xla is not None:
        raise CliError("--xla is for --format tf_saved_model")
    if args.format == "onnx" and args.quantize == "float16":
        raise CliError("--quantize float16 is for --format litert")


def _export_file(translator: Any, args: Any) -> None:
    """The model, its vocabulary file and client, written in a temporary
    folder beside `--out`, then each moved onto its name."""
    folder = os.path.dirname(os.path.abspath(args.out))
    temp = tempfile.mkdtemp(prefix=".export.", dir=folder)
    try:
        name = os.path.basename(args.out)
        options = {} if args.quantize is None else {"quantize": args.quantize}
        translator.export(
            os.path.join(temp, name), format=args.format, **options
        )
        # The model last: once it is there, its vocabulary is beside it.
        for written in sorted(os.listdir(temp), key=lambda f: f == name):
            os.replace(os.path.join(temp, written), os.path.join(folder, written))
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def run(args: Any) -> int:
    """Runs `export`."""
    _check(args)
    check_output(args.out, "--out", args.overwrite)
    translator = load_translator(args.model)
    if args.format == "tf_saved_model":
        options = {} if args.xla is None else {"xla": args.xla}
        save_directory_atomically(
            args.out, lambda path: translator.export(path, **options)
        )
    else:
        _export_file(translator, args)
    print(f"exported {args.out}", flush=True)
    return 0
