"""Translators for runtimes other than TensorFlow: LiteRT and ONNX.

`Translator.export(path, format="litert")` (or `"onnx"`) writes a model
whose graph decodes token ids with greedy or beam search
(`graph.PortableModule`, converted by `convert.export_portable`), its
vocabularies beside it, and a dependency-free Python client (`client`,
copied beside the model as `translator_client.py`); `load(path)` reads
one back. The client needs NumPy and the runtime only (`ai-edge-litert`,
`onnxruntime`); exporting needs TensorFlow (and `tf2onnx` for ONNX): the
`[export]` extra brings them all.
"""

from keras_attention.portable.client import PortableTranslator
from keras_attention.portable.client import load

__all__ = ["PortableTranslator", "load"]
