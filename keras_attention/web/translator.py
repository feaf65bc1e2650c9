"""An exported string SavedModel as JSON answers for the web page.

`SavedModelTranslator` loads a SavedModel whose signatures take a batch of
raw strings (the one `python -m examples.nmt export` and
`python -m examples.g2p export` write):

- `serving_default` (`text`): greedy decoding;
- `beam` (`text`, `beam_width`): beam search;
- `nbest` (`text`, `k`): the `k` best hypotheses, best first;

each returning `translation`, `scores`, `log_probs`, `source_tokens`
(padded with `""`, ending with `[END]`), `target_tokens`,
`target_lengths` and `attention` `(batch, [k,] L, S)`. Loading and calling
it needs TensorFlow (and tensorflow-text, whose ops the examples' graphs
use); the rest of this module is plain Python and numpy.

`hypothesis_json` turns one decoded hypothesis into what the page draws:
the token-level attention (the heatmap) and the word links between the two
sentences, extracted from the weights with
`keras_attention.alignment.word_attention` and `hard_links` (argmax: one
link per target word).
"""

import math
import threading
from typing import Any
from typing import Sequence

import numpy as np

from keras_attention.alignment.links import hard_links
from keras_attention.alignment.subwords import word_attention
from keras_attention.alignment.subwords import word_groups

SIGNATURES = ("serving_default", "beam", "nbest")


def _text(token: Any) -> str:
    if isinstance(token, bytes):
        return token.decode("utf-8", "replace")
    return str(token)


def _words(tokens: Sequence[str]) -> list:
    """The words of WordPiece tokens (`"vend", "##redi"` -> `"vendredi"`)."""
    return [
        "".join(
            tokens[i][2:] if j and tokens[i].startswith("##") else tokens[i]
            for j, i in enumerate(group)
        )
        for group in word_groups(tokens)
    ]


def _number(value: float) -> Any:
    """A JSON number, or `None` for an infinite or NaN score."""
    value = float(value)
    return round(value, 4) if math.isfinite(value) else None


def hypothesis_json(
    translation: Any,
    score: float,
    log_prob: float,
    source_tokens: Sequence,
    target_tokens: Sequence,
    attention: Any,
) -> dict:
    """One hypothesis as the page draws it.

    Args:
        translation: The detokenized output (`str` or UTF-8 `bytes`).
        score: Its ranking score.
        log_prob: Its log-probability.
        source_tokens: The source tokens, without padding.
        target_tokens: The output tokens, without `[END]` and padding.
        attention: `(len(target_tokens), len(source_tokens))` weights.

    Returns:
        A dict: `translation`, `score`, `log_prob` (`None` when not
        finite), `target_tokens`, `target_words`, `attention` (a list of
        rows, 4 decimals) and `links`, `[source_word, target_word]` pairs
        over `target_words` and the source words of `source_tokens`.
    """
    source_tokens = [_text(t) for t in source_tokens]
    target_tokens = [_text(t) for t in target_tokens]
    weights = np.asarray(attention, dtype="float32").reshape(
        len(target_tokens), len(source_tokens)
    )
    links = []
    if target_tokens and source_tokens:
        matrix = word_attention(weights, source_tokens, target_tokens)
        if matrix.size:
            links = sorted([int(s), int(t)] for s, t in hard_links(matrix))
    return {
        "translation": _text(translation),
        "score": _number(score),
        "log_prob": _number(log_prob),
        "target_tokens": target_tokens,
        "target_words": _words(target_tokens),
        "attention": np.round(weights, 4).tolist(),
        "links": links,
    }


class SavedModelTranslator:
    """Greedy, beam and n-best translations of one text, as JSON dicts.

    Calls are serialised by a lock: one request decodes at a time, so
    concurrent requests cannot multiply the memory a decode takes.

    Args:
        path: The SavedModel directory.

    Raises:
        ImportError: if TensorFlow or tensorflow-text is missing.
        ValueError: if `path` holds no SavedModel with the three
            signatures `SIGNATURES`.
    """

    def __init__(self, path: str) -> None:
        import tensorflow as tf

        from keras_attention.serving import load_signatures

        self._tf = tf
        self.path = path
        signatures = load_signatures(path, SIGNATURES)
        self._loaded = signatures.pop(None)  # keeps the variables alive
        self._signatures = signatures
        self._lock = threading.Lock()

    def _call(self, name: str, text: str, **ints: int) -> dict:
        tf = self._tf
        inputs = {k: tf.constant(v, tf.int32) for k, v in ints.items()}
        with self._lock:
            out = self._signatures[name](text=tf.constant([text]), **inputs)
        return {k: v.numpy()[0] for k, v in out.items()}

    @staticmethod
    def _hypothesis(out: dict, source: list, index: Any = None) -> dict:
        def pick(key: str) -> Any:
            return out[key] if index is None else out[key][index]

        length = int(pick("target_lengths"))
        return hypothesis_json(
            pick("translation"), pick("scores"), pick("log_probs"),
            source, pick("target_tokens")[:length],
            pick("attention")[:length, : len(source)],
        )

    def translate(self, text: str, beam_width: int, n_best: int) -> dict:
        """Translates `text` greedily, with beam search and as an n-best list.

        Args:
            text: One input text.
            beam_width: Width of the beam search (at least 1).
            n_best: Number of alternatives (at least 1).

        Returns:
            A dict: `source_tokens`, `source_words`, `greedy` and `beam`
            (`hypothesis_json` dicts) and `nbest` (a list of them, best
            first, hypotheses with an infinite score left out).
        """
        greedy = self._call("serving_default", text)
        source = [_text(t) for t in greedy["source_tokens"] if t]
        beam = self._call("beam", text, beam_width=beam_width)
        nbest = self._call("nbest", text, k=n_best)
        alternatives = [
            self._hypothesis(nbest, source, i)
            for i in range(len(nbest["translation"]))
        ]
        return {
            "source_tokens": source,
            "source_words": _words(source),
            "greedy": self._hypothesis(greedy, source),
            "beam": self._hypothesis(beam, source),
            "nbest": [h for h in alternatives if h["score"] is not None],
        }
