"""The string-to-string SavedModel of a `Seq2Seq` (TensorFlow).

`TranslatorModule` holds the model and two `Tokenizer`s and decodes raw
strings with greedy, beam, n-best, sampling and prefix signatures;
`export_saved_model` saves it, `load_saved_model` and `load_signature`
load it back.
"""

from keras_attention.serving.export import EXPORT
from keras_attention.serving.export import SIGNATURES
from keras_attention.serving.export import export_saved_model
from keras_attention.serving.export import load_saved_model
from keras_attention.serving.export import load_signature
from keras_attention.serving.export import load_signatures
from keras_attention.serving.export import resolve_saved_model
from keras_attention.serving.export import translate_all
from keras_attention.serving.tokenizer import Tokenizer
from keras_attention.serving.limits import LENGTH_PENALTY
from keras_attention.serving.limits import MAX_BEAM_WIDTH
from keras_attention.serving.limits import MAX_OUTPUT_TOKENS
from keras_attention.serving.limits import PREFIX_ROOM
from keras_attention.serving.translator import TranslatorModule

__all__ = [
    "EXPORT",
    "LENGTH_PENALTY",
    "MAX_BEAM_WIDTH",
    "MAX_OUTPUT_TOKENS",
    "PREFIX_ROOM",
    "SIGNATURES",
    "Tokenizer",
    "TranslatorModule",
    "export_saved_model",
    "load_saved_model",
    "load_signature",
    "load_signatures",
    "resolve_saved_model",
    "translate_all",
]
