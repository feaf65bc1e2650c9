"""Writing a translator as a LiteRT (`.tflite`) or ONNX (`.onnx`) model.

TensorFlow: the `PortableModule`'s function, traced without TensorList
ops, goes through LiteRT's converter (`tf.lite.TFLiteConverter`, builtin
ops only, so that the `ai-edge-litert` interpreter runs it) or through
`tf2onnx` (ONNX opset `ONNX_OPSET`, run by `onnxruntime`). Beside the
model go `<stem>.vocab.json` (both tokenizers, the framing and the
decoding settings) and `translator_client.py`, the dependency-free Python
client (`keras_attention.portable.client`).
"""

from typing import Any
from typing import Optional
from typing import Sequence

import json
import os
import shutil
import tempfile

from keras_attention.checks import check_choice
from keras_attention.portable import client
from keras_attention.portable.graph import PortableModule
from keras_attention.serving.limits import LENGTH_PENALTY
from keras_attention.serving.limits import MAX_BEAM_WIDTH

FORMATS = {"litert": ".tflite", "onnx": ".onnx"}
# Weight storage of each format: `None` is float32.
QUANTIZATIONS = {"litert": (None, "float16", "int8"), "onnx": (None, "int8")}
ONNX_OPSET = 17


def tokenizer_spec(
    tokenizer: Any, add_start: bool, add_end: bool, max_tokens: int
) -> dict:
    """What the client needs of one tokenizer: its config, vocabulary and
    framing (`[START]`, `[END]`, the length cut)."""
    spec = dict(tokenizer.get_config())
    spec.pop("name", None)
    spec.update(
        kind=tokenizer.kind,
        vocabulary=list(tokenizer.vocabulary),
        add_start=add_start,
        add_end=add_end,
        max_tokens=max_tokens,
    )
    return spec


def describe(translator: Any, module: Any) -> dict:
    """The `<stem>.vocab.json` of an export: what the client needs. The
    same for the LiteRT and the ONNX file of a translator (they may share
    a stem); the decoding settings are the graph's, for the record."""
    return {
        "format": client.FORMAT_NAME,
        "version": client.FORMAT_VERSION,
        "source": tokenizer_spec(
            translator.source_tokenizer,
            False,
            translator.source_end_token,
            translator.max_tokens,
        ),
        "target": tokenizer_spec(
            translator.target_tokenizer, True, True, translator.max_tokens
        ),
        "max_beam_width": MAX_BEAM_WIDTH,
        "max_output_tokens": module.max_output_tokens,
        "length_penalty": module.length_penalty,
        "coverage_penalty": module.coverage_penalty,
        "ensemble_size": len(module.members),
    }


def check_path(path: Any, format: str) -> str:
    """`path` as a string ending with the format's suffix.

    Raises:
        TypeError: if `path` is not a string or path-like.
        ValueError: for another suffix.
    """
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"`path` must be a file path. Received: path={path!r:.80} of "
            f"type {type(path).__name__}"
        ) from None
    suffix = FORMATS[format]
    if not path.endswith(suffix):
        raise ValueError(
            f"A {format} export is one `{suffix}` file: `path` must end "
            f"with {suffix!r}. Received: path={path!r}"
        )
    return path


def _to_litert(function: Any, module: Any, quantize: Optional[str]) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function], module
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantize is not None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def _to_onnx(function: Any, path: str, quantize: Optional[str]) -> None:
    try:
        import tf2onnx
    except ImportError as err:
        raise ImportError(
            "The ONNX export needs tf2onnx and onnx: pip install "
            "'keras-seq2seq-attention[export]'"
        ) from err
    target = path
    if quantize == "int8":
        tmp = tempfile.mkdtemp()
        target = os.path.join(tmp, "float32.onnx")
    try:
        tf2onnx.convert.from_function(
            function,
            input_signature=function.input_signature,
            opset=ONNX_OPSET,
            output_path=target,
        )
        if quantize == "int8":
            from onnxruntime.quantization import QuantType
            from onnxruntime.quantization import quantize_dynamic

            quantize_dynamic(target, path, weight_type=QuantType.QInt8)
    finally:
        if target != path:
            shutil.rmtree(os.path.dirname(target), ignore_errors=True)


def export_portable(
    translator: Any,
    path: Any,
    format: str,
    ensemble: Sequence[Any] = (),
    quantize: Optional[str] = None,
    max_output_tokens: Optional[int] = None,
    length_penalty: float = LENGTH_PENALTY,
    coverage_penalty: float = 0.0,
    convention: str = "default",
) -> str:
    """Writes `translator` (and its `ensemble`) as one `format` model at
    `path`, its vocabularies beside it (`<stem>.vocab.json`) and the
    Python client (`translator_client.py`); returns `path`.

    Args:
        translator: A `Translator` (TensorFlow backend).
        path: The model file: `*.tflite` for `"litert"`, `*.onnx` for
            `"onnx"`.
        format: `"litert"` or `"onnx"`.
        ensemble: More translators with the same tokenizers, decoded with
            `translator` (probabilities averaged).
        quantize: `None` (float32 weights), `"float16"` (LiteRT) or
            `"int8"` (dynamic-range int8 weights: LiteRT's converter or
            onnxruntime's `quantize_dynamic`).
        max_output_tokens: Longest output in tokens. Defaults to the
            translator's `max_tokens`.
        length_penalty, coverage_penalty, convention: Beam search's, as in
            the SavedModel.

    Raises:
        ValueError: for an unknown format or quantization, a path without
            the format's suffix.
        ImportError: if the converter is missing (the `[export]` extra).
    """
    check_choice("format", format, tuple(FORMATS))
    if quantize is not None:
        check_choice("quantize", quantize, QUANTIZATIONS[format][1:])
    path = check_path(path, format)
    from keras_attention.rnn.loops import portable_loops

    members = [translator.seq2seq] + [m.seq2seq for m in ensemble]
    module = PortableModule(
        members,
        max_output_tokens or translator.max_tokens,
        length_penalty,
        coverage_penalty,
        convention,
        greedy=client.GREEDY_IN_GRAPH[format],
    )
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with portable_loops():
        function = module.translate.get_concrete_function()
        if format == "litert":
            model = _to_litert(function, module, quantize)
            with open(path, "wb") as f:
                f.write(model)
        else:
            _to_onnx(module.translate, path, quantize)
    with open(client.vocabulary_path(path), "w", encoding="utf-8") as f:
        json.dump(describe(translator, module), f)
    shutil.copyfile(
        client.__file__, os.path.join(directory, client.CLIENT_FILE)
    )
    return path
