"""`serve`: the local web page of `keras_attention.web` for a SavedModel,
or for a `.keras` Translator or a run directory exported to a temporary
directory first."""

from typing import Any

import os
import tempfile

from keras_attention.cli.errors import CliError
from keras_attention.cli.models import is_run_directory
from keras_attention.cli.models import is_saved_model
from keras_attention.cli.models import load_translator


def run(args: Any) -> int:
    """Runs `serve` until Ctrl-C."""
    from keras_attention.web import serve

    options = {}
    if hasattr(args, "port"):
        if not 0 <= args.port <= 65535:
            raise CliError(f"--port must be in [0, 65535]; got {args.port}")
        options["port"] = args.port
    title = os.path.basename(os.path.normpath(args.model))
    if os.path.isdir(args.model) and not is_run_directory(args.model):
        if not is_saved_model(args.model):
            raise CliError(
                f"--model {args.model}: a directory without saved_model.pb "
                "or run.json (neither an exported SavedModel nor a run)"
            )
        serve(args.model, title=title, **options)
        return 0
    translator = load_translator(args.model)
    with tempfile.TemporaryDirectory(prefix="keras-seq2seq-serve-") as tmp:
        path = os.path.join(tmp, "export")
        print(
            f"exporting {args.model} to a temporary SavedModel {path} "
            "(removed on exit)",
            flush=True,
        )
        translator.export(path)
        serve(path, title=title, **options)
    return 0
