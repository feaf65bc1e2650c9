"""`Translator`: a `Seq2Seq` with its tokenizers, text in and text out.

`Translator.from_texts` learns the vocabularies and builds the model;
`fit`, `translate`, `generate`, `align`, `save` and `export` work on
strings. Also importable as `keras_attention.seq2seq.Translator`.
`export_run` exports the translator of a run directory.
"""

from keras_attention.translator.run_export import export_run
from keras_attention.translator.translator import MAX_TOKENS
from keras_attention.translator.translating import TranslationWarning
from keras_attention.translator.translator import Translator

__all__ = ["MAX_TOKENS", "TranslationWarning", "Translator", "export_run"]
