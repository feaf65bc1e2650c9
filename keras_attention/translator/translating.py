"""`Translator`'s decoding and alignment on strings.

A mixin of `Translator` (not a model of its own): `generate` and
`translate` tokenize the texts (TensorFlow ops), decode with
`Seq2Seq.generate` on the process's backend and detokenize; `align` links
whitespace words from the teacher-forced weights (`word_links`).
"""

from typing import Any
from typing import List
from typing import Optional
from typing import Sequence

import warnings

import keras
import numpy as np

from keras_attention.alignment.agreement import AGREEMENT
from keras_attention.checks import check_choice
from keras_attention.checks import check_positive_int
from keras_attention.seq2seq.generation import SOURCE_LENGTH_LIMIT
from keras_attention.seq2seq.tokens import MAX_INPUT_CHARS
from keras_attention.tokenizers.base import check_pairs
from keras_attention.tokenizers.base import check_texts
from keras_attention.translator import word_links

LINK_METHODS = ("argmax", "threshold")


class TranslationWarning(UserWarning):
    """A text was translated otherwise than as given: it was empty (its
    translation is `""`) or longer than the model reads (cut)."""


def warn_about_texts(
    texts: Sequence[str],
    counts: Optional[Sequence[int]] = None,
    room: Optional[int] = None,
    stacklevel: int = 2,
) -> None:
    """Warns (`TranslationWarning`, one warning each) about the texts
    without a token, which translate to `""`, and the texts longer than a
    model reads, which translate cut: more than `MAX_INPUT_CHARS`
    characters or, where `counts` (tokens per text) and `room` (the tokens
    the model reads) are known, more than `room` tokens. Without `counts`
    (a SavedModel's client), a blank text is one without a token."""
    if counts is None:
        counts = [1 if text.strip() else 0 for text in texts]
    empty = [i for i, n in enumerate(counts) if n == 0]
    cut = [
        i
        for i, (n, text) in enumerate(zip(counts, texts))
        if (room is not None and n > room) or len(text) > MAX_INPUT_CHARS
    ]
    if empty:
        warnings.warn(
            f"{len(empty)} of {len(texts)} texts have no token (empty or "
            f"blank; the first is texts[{empty[0]}]): their translation "
            'is "".',
            TranslationWarning,
            stacklevel=stacklevel,
        )
    if cut:
        limits = f"{MAX_INPUT_CHARS} characters"
        if room is not None:
            limits = f"{room} tokens, " + limits
        warnings.warn(
            f"{len(cut)} of {len(texts)} texts are longer than the model "
            f"reads ({limits}; the first is texts[{cut[0]}]): they are "
            "translated cut there.",
            TranslationWarning,
            stacklevel=stacklevel,
        )


def _empty_result(strategy: str) -> dict:
    """The result of a text without a token: no decoding."""
    result = {
        "translation": "",
        "score": 0.0,
        "source_tokens": [],
        "target_tokens": [],
        "attention": np.zeros((0, 0), np.float32),
    }
    if strategy == "nbest":
        result.update(translations=[], scores=[])
    return result


class TranslatorDecoding:
    """Decoding and alignment on strings (mixin of `Translator`)."""


    # ------------------------------------------------------------------
    # Decoding.
    def generate(
        self,
        texts: Sequence[str],
        strategy: str = "greedy",
        max_length: Optional[int] = None,
        batch_size: int = 64,
        **options: Any,
    ) -> List[dict]:
        """Translates texts and returns, for each, a dict: `translation`
        (str; with `strategy="nbest"` a list of the `n_best`
        `translations` and their `scores`), `score` (the decoder's score:
        the sum of log-probabilities, length-normalised for beam search),
        `source_tokens` and `target_tokens` (the token strings, `[END]`
        included) and `attention` `(target_tokens, source_tokens)`.

        Args:
            texts: The source texts (a list of strings).
            strategy: `"greedy"`, `"beam"`, `"nbest"` or `"sample"`
                (`Seq2Seq.generate`). Defaults to `"greedy"`.
            max_length: Longest translation in tokens. Defaults to
                `max_tokens`. Each sentence also stops at `2 * source_tokens
                + 10` tokens, as in the exported SavedModel (give
                `max_length_scale` and `max_length_margin` to change it).
            batch_size: Texts decoded at once. Defaults to `64`.
            **options: The decoder's options (`beam_width`, `n_best`,
                `temperature`, `top_k`, `top_p`, `seed`, ...).
        """
        texts = check_texts("texts", texts)
        batch_size = check_positive_int("batch_size", batch_size)
        max_length = check_positive_int(
            "max_length", self.max_tokens if max_length is None else max_length
        )
        todo = self._check_inputs(texts)
        results = [_empty_result(strategy) for _ in texts]
        for start in range(0, len(todo), batch_size):
            rows = todo[start : start + batch_size]
            batch = self._generate_batch(
                [texts[i] for i in rows], strategy, max_length, options
            )
            for row, result in zip(rows, batch):
                results[row] = result
        return results

    def _check_inputs(self, texts: List[str]) -> List[int]:
        """The indices of the texts to decode (those with a token); warns
        (`TranslationWarning`) about empty texts, which translate to `""`,
        and texts cut to `MAX_INPUT_CHARS` characters or `max_tokens`."""
        if not texts:
            return []
        counts = self.source_tokenizer.tokenize(texts).row_lengths().numpy()
        room = self.max_tokens - int(self.source_end_token)
        warn_about_texts(texts, counts, room, stacklevel=4)
        return [i for i, n in enumerate(counts) if n > 0]

    def _generate_batch(
        self, batch: List[str], strategy: str, max_length: int, options: dict
    ) -> List[dict]:
        source_tokenizer, target_tokenizer = self.framed_tokenizers
        ids = self.source_ids(batch)
        options = dict(options)
        options.setdefault("max_length_scale", SOURCE_LENGTH_LIMIT[0])
        options.setdefault("max_length_margin", SOURCE_LENGTH_LIMIT[1])
        out = self.seq2seq.generate(
            ids, max_length=max_length, strategy=strategy, **options
        )
        out = {
            k: keras.ops.convert_to_numpy(v)
            for k, v in out.items()
            if v is not None
        }
        source_strings = source_tokenizer.token_strings(ids).numpy()
        lengths = (ids != 0).sum(axis=1)
        tokens = out["tokens"]
        flat = tokens.reshape((-1, tokens.shape[-1]))
        translations = target_tokenizer.detokenize(flat).numpy()
        strings = target_tokenizer.token_strings(flat).numpy()
        per_row = flat.shape[0] // len(batch)
        hyp_lengths = out["lengths"].reshape(-1)
        scores = out["scores"].reshape(-1)
        attention = out.get("attention")
        if attention is not None:
            attention = attention.reshape((-1,) + attention.shape[-2:])
        results = []
        for i in range(len(batch)):
            source = [s.decode("utf-8") for s in source_strings[i, : lengths[i]]]
            hyps = []
            for j in range(i * per_row, (i + 1) * per_row):
                n = int(hyp_lengths[j])
                hyps.append(
                    {
                        "translation": translations[j].decode("utf-8"),
                        "score": float(scores[j]),
                        "source_tokens": source,
                        "target_tokens": [
                            s.decode("utf-8") for s in strings[j, :n]
                        ],
                        "attention": None
                        if attention is None
                        else attention[j, :n, : lengths[i]],
                    }
                )
            result = dict(hyps[0])
            if strategy == "nbest":
                result["translations"] = [h["translation"] for h in hyps]
                result["scores"] = [h["score"] for h in hyps]
            results.append(result)
        return results

    def translate(
        self, texts: Any, strategy: str = "greedy", **options: Any
    ) -> Any:
        """The translations of texts: a list of strings (one string for one
        string; with `strategy="nbest"`, a list of the `n_best` strings per
        text). The arguments are those of `generate`."""
        if isinstance(texts, str):
            return self.translate([texts], strategy, **options)[0]
        key = "translations" if strategy == "nbest" else "translation"
        return [r[key] for r in self.generate(texts, strategy, **options)]

    # ------------------------------------------------------------------
    # Alignment.
    def word_attention(
        self,
        sources: Sequence[str],
        targets: Sequence[str],
        batch_size: int = 64,
    ) -> List[np.ndarray]:
        """The teacher-forced weights of sentence pairs over their words.

        For each pair a `(target_words, source_words)` numpy matrix over
        the whitespace words of the texts (`text.split()`): the weight of
        a target word on a source word is the mean over the target word's
        pieces of the summed weights on the source word's pieces
        (`keras_attention.alignment.group_attention`); each row sums to 1
        over the source words when no piece is cut off by `max_tokens`
        (the source `[END]` aside). Words cut off have zero weights.

        Args:
            sources: The source texts.
            targets: Their translations.
            batch_size: Pairs per batch. Defaults to `64`.

        Returns:
            One matrix per pair.
        """
        sources, targets = check_pairs(sources, targets)
        batch_size = check_positive_int("batch_size", batch_size)
        matrices = []
        room = self.max_tokens - int(self.source_end_token)
        for start in range(0, len(sources), batch_size):
            s_batch = sources[start : start + batch_size]
            t_batch = targets[start : start + batch_size]
            s_groups = word_links.word_positions(
                self.source_tokenizer, s_batch, 0, room
            )
            t_groups = word_links.word_positions(
                self.target_tokenizer, t_batch, 1, self.max_tokens - 2
            )
            weights = self.teacher_forced_weights(s_batch, t_batch)
            for i in range(len(s_batch)):
                matrices.append(
                    word_links.word_matrix(
                        weights[i], s_groups[i], t_groups[i]
                    )
                )
        return matrices

    def align(
        self,
        sources: Sequence[str],
        targets: Sequence[str],
        method: str = "argmax",
        threshold: float = 0.5,
        reverse: Optional[Any] = None,
        symmetrize: str = "grow-diag-final-and",
        batch_size: int = 64,
        agreement_threshold: float = 0.3,
        diagonal_tension: Optional[float] = None,
    ) -> List[set]:
        """Word links of sentence pairs from the model's teacher-forced
        weights (the alignment head's, or the attention's).

        A link is `(source_word, target_word)`, indices of the whitespace
        words of the texts (`text.split()`); words cut off by `max_tokens`
        get none.

        Args:
            sources: The source texts.
            targets: Their translations.
            method: `"argmax"` (each target word to its most attended
                source word) or `"threshold"` (every word pair of weight
                `>= threshold`), over `word_attention`. Defaults to
                `"argmax"`.
            threshold: See `method`. Defaults to `0.5`.
            reverse: A `Translator` of the other direction (targets to
                sources): its links are symmetrized with these.
            symmetrize: The symmetrization with `reverse`: a method of
                `keras_attention.alignment.symmetrize` on both directions'
                hard links, or `"agreement"`: the word pairs where the two
                directions' `word_attention` agree
                (`keras_attention.alignment.agreement_links` at
                `agreement_threshold`; `method` and `threshold` play no
                part). Defaults to `"grow-diag-final-and"`.
            batch_size: Pairs per batch. Defaults to `64`.
            agreement_threshold: The threshold of `symmetrize="agreement"`,
                in `(0, 1]`. Defaults to `0.3`.
            diagonal_tension: Optional `tension` (a number >= 0) of
                `keras_attention.alignment.favor_diagonal`, fast_align's
                distortion prior multiplied into each direction's
                `word_attention` before any link is taken. Defaults to
                `None`: the weights as they are.

        Returns:
            One set of links per pair.
        """
        from keras_attention import alignment

        check_choice("method", method, LINK_METHODS)
        agree = symmetrize == AGREEMENT
        if reverse is not None:
            if not isinstance(reverse, TranslatorDecoding):
                raise TypeError(
                    "`reverse` must be a `Translator` (targets to sources). "
                    f"Received: reverse of type {type(reverse).__name__}"
                )
            if agree:
                alignment.agreement_links(
                    np.ones((1, 1)), np.ones((1, 1)), agreement_threshold
                )
            else:
                alignment.symmetrize(set(), set(), symmetrize)
        elif agree:
            raise ValueError(
                f"`symmetrize={AGREEMENT!r}` reads the weights of both "
                "directions: give `reverse`, a `Translator` of targets to "
                "sources. Received: reverse=None"
            )
        alignment.hard_links(np.zeros((1, 1)), method, threshold)

        def favored(matrices: List[np.ndarray]) -> List[np.ndarray]:
            if diagonal_tension is None:
                return matrices
            return [
                alignment.favor_diagonal(m, diagonal_tension)
                for m in matrices
            ]

        if diagonal_tension is not None:
            favored([np.ones((1, 1))])  # checks the tension
        matrices = favored(self.word_attention(sources, targets, batch_size))
        if agree:
            backward = favored(
                reverse.word_attention(targets, sources, batch_size)
            )
            return [
                alignment.agreement_links(f, b, agreement_threshold)
                for f, b in zip(matrices, backward)
            ]
        links = [
            alignment.hard_links(m, method, threshold) for m in matrices
        ]
        if reverse is None:
            return links
        backward = reverse.align(
            targets, sources, method, threshold, batch_size=batch_size,
            diagonal_tension=diagonal_tension,
        )
        return [
            alignment.symmetrize(f, alignment.transpose_links(b), symmetrize)
            for f, b in zip(links, backward)
        ]

    def teacher_forced_weights(
        self, sources: Sequence[str], targets: Sequence[str]
    ) -> np.ndarray:
        """The `(batch, T, S)` weights `Seq2Seq.align` reads for pairs,
        teacher-forced (row `t` predicts target token `t + 1`)."""
        import tensorflow as tf

        source_ids = self.source_ids(sources)
        target = self.framed_tokenizers[1].tokenize(tf.constant(targets))
        target_in = target.to_tensor().numpy().astype("int32")[:, :-1]
        weights = self.seq2seq.align(source_ids, target_in)
        return keras.ops.convert_to_numpy(weights)

    # ------------------------------------------------------------------
    # Saving and exporting.
