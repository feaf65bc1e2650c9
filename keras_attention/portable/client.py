"""A translator exported to LiteRT (`.tflite`) or ONNX (`.onnx`), in Python.

A self-contained file, copied beside the model as `translator_client.py`
by `Translator.export(path, format="litert"|"onnx")`: it needs NumPy and
the runtime (`ai-edge-litert` or `onnxruntime`; SentencePiece vocabularies
`sentencepiece`), turns strings into token ids and back as the
SavedModel's tensorflow-text ops do, and runs the model's greedy or beam
search.

    python translator_client.py model.tflite "a sentence" [--beam-width 4]

    from translator_client import load
    translator = load("model.tflite")  # reads model.vocab.json beside it
    translator.translate(["a sentence"], beam_width=4)[0]["translation"]
"""

from typing import Iterator
from typing import Optional
from typing import Sequence
from typing import Union

import base64
import contextlib
import json
import os
import re
import sys
import unicodedata

import numpy as np

FORMAT_NAME = "keras-seq2seq-attention portable translator"
FORMAT_VERSION = 1
CLIENT_FILE = "translator_client.py"
RESERVED_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]")
PAD_ID, UNK_ID, START_ID, END_ID = range(4)
UNK = RESERVED_TOKENS[UNK_ID]
MAX_INPUT_CHARS = 1000
MAX_BYTES_PER_WORD = 100
RUNTIMES = {".tflite": "litert", ".onnx": "onnx"}
# Whether the graph holds greedy search; without it, greedy search is beam
# search of width 1 (tf2onnx cannot convert a loop inside a condition).
GREEDY_IN_GRAPH = {"litert": True, "onnx": False}
# Unicode's White_Space characters (ICU's, which tensorflow-text splits at).
_WHITESPACE = re.compile(
    "[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
)
_CLOSING = re.compile(r" ([.,!?;:%)\]}»])")
_OPENING = re.compile(r"([(\[{¿¡«]) ")
_APOSTROPHE = re.compile(r"([^\W_]) (['’]) ([^\W_])")


def vocabulary_path(model_path: str) -> str:
    """`model.tflite` -> `model.vocab.json`."""
    return os.path.splitext(model_path)[0] + ".vocab.json"


# ----------------------------------------------------------------------
# Text, as the SavedModel's tensorflow-text ops.


# Letters of Unicode 14 that TensorFlow's lower-casing (an older ICU)
# leaves as they are.
_KEPT_CASE = frozenset(
    [0x2C2F, 0xA7C0, 0xA7D0, 0xA7D6, 0xA7D8] + list(range(0x10570, 0x10596))
)


def _lower(text: str) -> str:
    # As `tf.strings.lower(encoding="utf-8")`, which also drops NUL.
    return "".join(
        c if ord(c) in _KEPT_CASE else c.lower() for c in text if c != "\0"
    )


def whitespace_words(text: Union[str, bytes], lower_case: bool) -> list:
    """The normalised whitespace words of one text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = unicodedata.normalize("NFKC", text[:MAX_INPUT_CHARS])
    if lower_case:
        text = _lower(text)
    return [word for word in _WHITESPACE.split(text) if word]


def split_punctuation(word: str) -> list:
    """Runs of other characters and single punctuation marks and symbols
    (Unicode categories P* and S*)."""
    spaced = "".join(
        f" {c} " if unicodedata.category(c)[0] in "PS" else c for c in word
    )
    return [part for part in spaced.split(" ") if part]


def join_words(text: str) -> str:
    """Space-joined tokens made readable, as the SavedModel joins them."""
    text = _CLOSING.sub(r"\1", text)
    text = _OPENING.sub(r"\1", text)
    return _APOSTROPHE.sub(r"\1\2\3", text)


class Tokenizer:
    """One tokenizer of a `.vocab.json`: strings to ids and back."""

    def __init__(self, spec: dict):
        self.kind = spec["kind"]
        self.vocabulary = list(spec["vocabulary"])
        self.lower_case = bool(spec.get("lower_case", False))
        self.split = bool(spec.get("split_punctuation", True))
        self.add_start = bool(spec["add_start"])
        self.add_end = bool(spec["add_end"])
        self.max_tokens = int(spec["max_tokens"])
        self.ids = {token: i for i, token in enumerate(self.vocabulary)}
        self.sentencepiece = None
        if self.kind == "sentencepiece":
            try:
                import sentencepiece
            except ImportError:
                raise ImportError(
                    "This model's tokenizer is a SentencePiece model: pip "
                    "install sentencepiece"
                ) from None
            self.sentencepiece = sentencepiece.SentencePieceProcessor(
                model_proto=base64.b64decode(spec["model"])
            )
        elif self.kind not in ("wordpiece", "whitespace", "character"):
            raise ValueError(
                f"Unknown tokenizer kind {self.kind!r} in the vocabulary "
                "file (written by a newer version?)"
            )

    def _wordpiece(self, part: str) -> list:
        if len(part.encode("utf-8")) > MAX_BYTES_PER_WORD:
            return [UNK_ID]
        pieces, start = [], 0
        while start < len(part):
            end = len(part)
            while end > start:
                piece = part[start:end] if start == 0 else "##" + part[start:end]
                if piece in self.ids:
                    pieces.append(self.ids[piece])
                    break
                end -= 1
            if end == start:
                return [UNK_ID]
            start = end
        return pieces

    def word_ids(self, text: Union[str, bytes]) -> list:
        """The ids of each whitespace word of `text`, unframed."""
        words = whitespace_words(text, self.lower_case)
        if self.kind == "character":
            space = self.ids.get(" ")
            out = []
            for i, word in enumerate(words):
                chars = [self.ids.get(c, UNK_ID) for c in word]
                out.append(([space] if space is not None and i else []) + chars)
            return out
        if self.kind == "sentencepiece":
            return [self.sentencepiece.encode(word) for word in words]
        out = []
        for word in words:
            parts = split_punctuation(word) if (
                self.kind == "wordpiece" or self.split) else [word]
            if self.kind == "wordpiece":
                out.append([i for p in parts for i in self._wordpiece(p)])
            else:
                out.append([self.ids.get(p, UNK_ID) for p in parts])
        return out

    def tokenize(self, text: Union[str, bytes]) -> list:
        """The framed ids of `text`: cut to `max_tokens` with `[START]` and
        `[END]` as the tokenizer adds them."""
        ids = [i for word in self.word_ids(text) for i in word]
        room = self.max_tokens - self.add_start - self.add_end
        ids = ids[:room]
        return [START_ID] * self.add_start + ids + [END_ID] * self.add_end

    def token_string(self, token_id: int) -> str:
        if 0 <= token_id < len(self.vocabulary):
            return self.vocabulary[token_id]
        return UNK

    def detokenize(self, ids: Sequence[int]) -> str:
        """The text of ids: those before the first `[END]`, without
        `[PAD]` and `[START]`."""
        content = []
        for i in ids:
            if i == END_ID:
                break
            if i not in (PAD_ID, START_ID):
                content.append(int(i))
        if self.kind == "sentencepiece":
            return self.sentencepiece.decode(content)
        strings = [self.token_string(i) for i in content]
        if self.kind == "character":
            return "".join(strings)
        text = " ".join(strings)
        if self.kind == "wordpiece":
            return join_words(text.replace(" ##", ""))
        return join_words(text) if self.split else text


# ----------------------------------------------------------------------
# Runtimes.


@contextlib.contextmanager
def _native_stderr_closed() -> Iterator[None]:
    """File descriptor 2 sent to the null device (native code's logs)."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to silence
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class LiteRTRunner:
    """The model's `serving_default` signature in `ai-edge-litert`."""

    def __init__(self, path: str, num_threads: Optional[int] = None):
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError:
            raise ImportError(
                "Running a .tflite translator needs the LiteRT runtime: pip "
                "install ai-edge-litert"
            ) from None
        # LiteRT's native logger prints "INFO: Created TensorFlow Lite
        # XNNPACK delegate for CPU." on stderr: said once, by nobody asked.
        with _native_stderr_closed():
            self.interpreter = Interpreter(
                model_path=path, num_threads=num_threads
            )
            self.runner = self.interpreter.get_signature_runner()
            # The delegate (and its log line) comes at the first call.
            self(np.full((1, 1), END_ID, np.int32), 0)

    def __call__(self, source_ids: np.ndarray, beam_width: int) -> dict:
        return self.runner(
            source_ids=source_ids, beam_width=np.array(beam_width, np.int32)
        )


class ONNXRunner:
    """The model in `onnxruntime` (CPU)."""

    def __init__(self, path: str, num_threads: Optional[int] = None):
        try:
            import onnxruntime
        except ImportError:
            raise ImportError(
                "Running a .onnx translator needs ONNX Runtime: pip install "
                "onnxruntime"
            ) from None
        options = onnxruntime.SessionOptions()
        if num_threads:
            options.intra_op_num_threads = num_threads
        self.session = onnxruntime.InferenceSession(
            path, options, providers=["CPUExecutionProvider"]
        )
        inputs = sorted(i.name for i in self.session.get_inputs())
        if inputs != ["beam_width", "source_ids"]:
            raise ValueError(
                f"The ONNX model {path!r} takes {inputs}, not `source_ids` "
                "and `beam_width`: not written by `Translator.export`?"
            )
        self.outputs = [o.name for o in self.session.get_outputs()]

    def __call__(self, source_ids: np.ndarray, beam_width: int) -> dict:
        feeds = {
            "source_ids": source_ids,
            "beam_width": np.array(beam_width, np.int32),
        }
        return dict(zip(self.outputs, self.session.run(self.outputs, feeds)))


# ----------------------------------------------------------------------
# The translator.


class PortableTranslator:
    """Strings in, translations out, over a LiteRT or ONNX model.

    Args:
        path: The `.tflite` or `.onnx` file; its `.vocab.json` lies beside.
        num_threads: The runtime's CPU threads (`None`: its default).
    """

    def __init__(self, path: str, num_threads: Optional[int] = None):
        suffix = os.path.splitext(path)[1].lower()
        if suffix not in RUNTIMES:
            raise ValueError(
                "A portable translator is a `.tflite` or `.onnx` file. "
                f"Received: path={path!r}"
            )
        if not os.path.isfile(path):
            raise ValueError(f"No model file at {path!r}")
        vocab = vocabulary_path(path)
        try:
            with open(vocab, encoding="utf-8") as f:
                spec = json.load(f)
        except OSError:
            raise ValueError(
                f"No vocabulary file {vocab!r} beside the model {path!r}: "
                "the export writes both; copy them together"
            ) from None
        except ValueError as err:
            raise ValueError(f"{vocab!r} is not valid JSON: {err}") from None
        if spec.get("format") != FORMAT_NAME or spec.get(
            "version", 0
        ) > FORMAT_VERSION:
            raise ValueError(
                f"{vocab!r} is not a vocabulary file of this client's "
                f"version {FORMAT_VERSION}. Received: format="
                f"{spec.get('format')!r}, version={spec.get('version')!r}"
            )
        self.path = path
        self.spec = spec
        self.runtime = RUNTIMES[suffix]
        self.source = Tokenizer(spec["source"])
        self.target = Tokenizer(spec["target"])
        runner = LiteRTRunner if self.runtime == "litert" else ONNXRunner
        self.run = runner(path, num_threads)

    @property
    def max_beam_width(self) -> int:
        """The widest beam the model decodes with."""
        return int(self.spec["max_beam_width"])

    @property
    def room(self) -> int:
        """The most source tokens the model reads (longer texts are cut)."""
        source = self.source
        return source.max_tokens - source.add_start - source.add_end

    def check_beam_width(self, beam_width: int) -> int:
        """Raises a `ValueError` unless `beam_width` is an integer in
        `[0, max_beam_width]` (the graph would clamp it)."""
        if isinstance(beam_width, bool) or not isinstance(
            beam_width, (int, np.integer)
        ) or not 0 <= beam_width <= self.max_beam_width:
            raise ValueError(
                "`beam_width` must be an integer from 0 (greedy search) to "
                f"{self.max_beam_width}. Received: beam_width={beam_width!r}"
            )
        return int(beam_width)

    def token_counts(self, texts: Sequence[str]) -> list:
        """The number of source tokens of each text, before the cut."""
        return [
            sum(len(w) for w in self.source.word_ids(t)) for t in texts
        ]

    def translate_ids(self, source_ids: list, beam_width: int = 0) -> dict:
        """Decodes framed source ids (one list per sentence, at least
        one): the model's raw outputs, NumPy arrays."""
        width = max(len(ids) for ids in source_ids)
        batch = np.zeros((len(source_ids), width), np.int32)
        for row, ids in enumerate(source_ids):
            batch[row, : len(ids)] = ids
        return self.run(batch, int(beam_width))

    def translate(
        self, texts: Sequence[str], beam_width: int = 0, batch_size: int = 64
    ) -> list:
        """Translates strings: greedy search (`beam_width=0`) or beam
        search of that width (at most 16).

        Returns:
            One dict per text, as `keras_attention.serving.translate_all`:
            `translation`, `source_tokens`, `target_tokens`, `attention`
            `(T, S)`, and `score` and `log_prob` (floats).
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError(
                "`texts` must be a list of strings, not one string. "
                f"Received: texts={texts!r:.80}"
            )
        self.check_beam_width(beam_width)
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, (str, bytes)):
                raise TypeError(
                    f"`texts` must hold strings. Received: {text!r:.80} of "
                    f"type {type(text).__name__} at texts[{i}]"
                )
        # Greedy search is beam search of width 1 where the graph has no
        # greedy decoder: the same tokens; its score is the log-prob.
        greedy = beam_width == 0
        if greedy and not GREEDY_IN_GRAPH[self.runtime]:
            beam_width = 1
        results = []
        for i in range(0, len(texts), batch_size):
            chunk = [self.source.tokenize(t) for t in texts[i : i + batch_size]]
            out = self.translate_ids(chunk, beam_width)
            if greedy:
                out = dict(out, scores=out["log_probs"])
            for row, ids in enumerate(chunk):
                results.append(self._result(out, row, ids))
        return results

    def _result(self, out: dict, row: int, source_ids: list) -> dict:
        tokens = [int(t) for t in out["tokens"][row]]
        empty = not any(i not in (PAD_ID, START_ID, END_ID) for i in source_ids)
        length = 0
        if not empty:
            while length < len(tokens) and tokens[length] != END_ID:
                length += 1
        tokens = tokens[:length]
        return {
            "translation": self.target.detokenize(tokens),
            "source_tokens": [self.source.token_string(i) for i in source_ids],
            "target_tokens": [self.target.token_string(i) for i in tokens],
            "attention": np.asarray(
                out["attention"][row][:length, : len(source_ids)], np.float32
            ),
            "score": 0.0 if empty else float(out["scores"][row]),
            "log_prob": 0.0 if empty else float(out["log_probs"][row]),
        }


def load(path: str, num_threads: Optional[int] = None) -> PortableTranslator:
    """The `PortableTranslator` of a `.tflite` or `.onnx` file."""
    return PortableTranslator(path, num_threads)


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the .tflite or .onnx file")
    parser.add_argument("text", nargs="*", help="texts (default: stdin)")
    parser.add_argument("--beam-width", type=int, default=0, help="0: greedy")
    args = parser.parse_args(argv)
    texts = args.text or [line.rstrip("\n") for line in sys.stdin]
    for result in load(args.model).translate(texts, args.beam_width):
        print(result["translation"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
