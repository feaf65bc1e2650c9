"""`SentencePieceTokenizer`: a SentencePiece model's pieces.

Running a model needs tensorflow-text only; learning one from texts
(`from_texts`) needs the `sentencepiece` package (the `[sentencepiece]`
extra).
"""

from typing import Any
from typing import List
from typing import Optional

import base64
import io
import os

import keras

from keras_attention.checks import ArgumentTypeError
from keras_attention.seq2seq.tokens import RESERVED_TOKENS
from keras_attention.tokenizers.base import Tokenizer


def _model_bytes(model: Any) -> bytes:
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        if not os.path.isfile(model):
            raise ValueError(
                "`model` must be a SentencePiece model (bytes) or the path "
                f"of a `.model` file. Received: model={model!r} (no such "
                "file)"
            )
        with open(model, "rb") as f:
            return f.read()
    raise ArgumentTypeError(
        "`model` must be a SentencePiece model (bytes) or the path of a "
        f"`.model` file. Received: model of type {type(model).__name__}"
    )


@keras.saving.register_keras_serializable(package="keras_attention")
class SentencePieceTokenizer(Tokenizer):
    """The pieces of a SentencePiece model (tensorflow-text's op).

    A text is normalised (invalid UTF-8 replaced, NFKC, optionally
    lower-cased) and split at whitespace; each whitespace word is cut into
    the model's pieces (a piece that starts with `"▁"` starts a word). The
    model's ids 0 to 3 must be `[PAD] [UNK] [START] [END]`: `from_texts`
    trains one so; for a model of your own, train it with `pad_id=0
    unk_id=1 bos_id=2 eos_id=3` and those pieces.

    Args:
        model: The serialized model proto (bytes) or the path of a
            `.model` file. The configuration holds it (base64), so it
            travels in `.keras` files.
        lower_case: Whether texts are lower-cased. Defaults to `False`.
        name: Optional name.
    """

    kind = "sentencepiece"

    def __init__(
        self, model: Any, lower_case: bool = False, name: Optional[str] = None
    ):
        self.model = _model_bytes(model)
        import tensorflow as tf
        import tensorflow_text as tf_text

        try:
            sp = tf_text.SentencepieceTokenizer(model=self.model)
            size = int(sp.vocab_size())
            pieces = sp.id_to_string(tf.range(size)).numpy()
        except Exception as e:  # the op's own error for a bad proto
            raise ValueError(
                "`model` is not a SentencePiece model proto that "
                f"tensorflow-text can load: {type(e).__name__}: {e}"
            ) from None
        vocabulary = [p.decode("utf-8") for p in pieces]
        if tuple(vocabulary[: len(RESERVED_TOKENS)]) != RESERVED_TOKENS:
            raise ValueError(
                f"The SentencePiece model's ids 0-3 must be "
                f"{list(RESERVED_TOKENS)} (train it with pad_id=0 unk_id=1 "
                "bos_id=2 eos_id=3 and those pieces). Received: "
                f"{vocabulary[:len(RESERVED_TOKENS)]}"
            )
        super().__init__(vocabulary, lower_case, name)

    @classmethod
    def learn(
        cls,
        texts: List[str],
        size: int,
        lower_case: bool = False,
        model_type: str = "unigram",
        **kwargs: Any,
    ) -> dict:
        """Trains a model with the `sentencepiece` package on the
        normalised texts (`model_type` `"unigram"` or `"bpe"`); the
        vocabulary may come out smaller than `size` on little text."""
        try:
            import sentencepiece as spm
        except ImportError:
            raise ImportError(
                "Learning a SentencePiece model needs the `sentencepiece` "
                "package: pip install 'keras-seq2seq-attention"
                "[sentencepiece]'"
            ) from None
        from keras_attention.tokenizers import text_ops

        # The whitespace words of each text, one space apart: the model
        # tokenizes whitespace words, and a line break in a sentence would
        # become a piece of its own.
        normalized = [
            b" ".join(words).decode("utf-8")
            for words in text_ops.whitespace_words(
                texts, bool(lower_case)
            ).to_list()
        ]
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(normalized),
            model_writer=model,
            vocab_size=size,
            model_type=model_type,
            hard_vocab_limit=False,
            character_coverage=1.0,
            pad_id=0,
            unk_id=1,
            bos_id=2,
            eos_id=3,
            pad_piece=RESERVED_TOKENS[0],
            unk_piece=RESERVED_TOKENS[1],
            bos_piece=RESERVED_TOKENS[2],
            eos_piece=RESERVED_TOKENS[3],
            normalization_rule_name="identity",
            minloglevel=2,
        )
        return dict(model=model.getvalue(), lower_case=lower_case, **kwargs)

    def _make_ops(self) -> Any:
        from keras_attention.tokenizers.text_ops import SentencePieceOps

        return SentencePieceOps(self.vocabulary, self.lower_case, self.model)

    def get_config(self) -> dict:
        return {
            "model": base64.b64encode(self.model).decode("ascii"),
            "lower_case": self.lower_case,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config: dict) -> "SentencePieceTokenizer":
        config = dict(config)
        config["model"] = base64.b64decode(config["model"])
        return cls(**config)
