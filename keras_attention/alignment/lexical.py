"""A lexical prior for attention alignment: link rates counted on a corpus.

Attention over the sub-words of a word the model rarely saw has little to
go on, while a count-based aligner (eflomal, fast_align, the IBM models)
links such a word because the rest of its sentence pair is explained. A
neural-plus-count hybrid keeps both: the count aligner's links of the
corpus being aligned become a per-word-pair prior that is mixed into the
attention before hard links are taken.

- `word_key`: the counted form of a whitespace word (lower-cased,
  surrounding punctuation stripped).
- `LinkRates.from_links(source_sentences, target_sentences, links)`: for
  every pair of word types `(s, t)` that the links join at least once,
  the **link rate** `r(s, t) = linked(s, t) / together(s, t)`: how often
  the two are linked over the number of sentence pairs that hold both.
  A word pair seen once, and linked there, has rate 1; `"le"`/`"the"`
  has the share of its co-occurrences the aligner links.
- `LinkRates.matrix(source_words, target_words)`: the `(target_words,
  source_words)` rates of one pair's whitespace words, the layout of
  `keras_attention.alignment.word_attention`.
- `orthographic_similarity(source_words, target_words)`: the Dice
  coefficient of the words' character bigrams, a prior for the cognates,
  names and numbers no count has seen (`parlementaire`/`parliamentary`);
  `np.maximum` of it and the rates is a prior for both.
- `mix_prior(attention, prior, weight)`: `(1 - weight) * attention +
  weight * prior`, then `hard_links` as for attention.
- `reweight_by_prior(attention, prior, floor)`: `attention * (floor +
  prior)`, renormalized per target word: rows that stay distributions,
  for `agreement_links`.

Plain Python and numpy.

Example:

>>> rates = LinkRates.from_links(
...     ["le chat", "le chien"], ["the cat", "the dog"],
...     [{(0, 0), (1, 1)}, {(0, 0)}])
>>> rates.rate("le", "the"), rates.rate("chien", "dog")
(1.0, 0.0)
>>> rates.matrix("le chat".split(), "the cat".split()).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""

import collections
import unicodedata
from typing import Iterable
from typing import Sequence

import numpy as np

from keras_attention.alignment.links import normalize_rows
from keras_attention.checks import check_float
from keras_attention.checks import check_links
from keras_attention.checks import check_positive_int
from keras_attention.checks import check_weight_matrix
from keras_attention.typing import ArrayLike


def word_key(word: str) -> str:
    """The counted form of a whitespace word: lower-cased, surrounding
    punctuation and symbols stripped; a word of punctuation only stays
    itself.

    >>> word_key("Dimanche."), word_key("?"), word_key("«Paris»")
    ('dimanche', '?', 'paris')
    """
    if not isinstance(word, str):
        raise TypeError(
            f"`word` must be a str. Received: {word!r} of type "
            f"{type(word).__name__}"
        )
    word = word.lower()
    start, end = 0, len(word)
    while start < end and unicodedata.category(word[start])[0] in "PS":
        start += 1
    while end > start and unicodedata.category(word[end - 1])[0] in "PS":
        end -= 1
    return word[start:end] or word


def _keys(sentence: str, name: str, line: int) -> list:
    if not isinstance(sentence, str):
        raise TypeError(
            f"Each of `{name}` must be a str. Received: {sentence!r} of "
            f"type {type(sentence).__name__} at line {line}"
        )
    return [word_key(w) for w in sentence.split()]


class LinkRates:
    """Link rates of word-type pairs, counted over a linked corpus.

    Build it with `LinkRates.from_links`; `rate(s, t)` and `matrix(...)`
    read it. `transposed()` gives the rates of the other direction (target
    words as the source), for a model trained target -> source.

    Args:
        rates: A dict from `(source_key, target_key)` to a rate in
            `[0, 1]`; pairs not in it have rate 0.
    """

    def __init__(self, rates: dict):
        if not isinstance(rates, dict):
            raise TypeError(
                "`rates` must be a dict from (source, target) word keys to "
                f"rates. Received: {type(rates).__name__}"
            )
        for key, value in rates.items():
            if (
                not isinstance(key, tuple)
                or len(key) != 2
                or not all(isinstance(k, str) for k in key)
            ):
                raise ValueError(
                    "Each key of `rates` must be a (source, target) pair of "
                    f"str. Received: {key!r}"
                )
            if not 0.0 <= value <= 1.0:
                raise ValueError(
                    "Each rate must be in [0, 1]. Received: "
                    f"{value!r} for {key!r}"
                )
        self._rates = dict(rates)

    @classmethod
    def from_links(
        cls,
        source_sentences: Sequence[str],
        target_sentences: Sequence[str],
        links: Sequence[Iterable],
    ) -> "LinkRates":
        """Counts the link rates of a corpus and its links.

        Args:
            source_sentences: The source sentences (whitespace words).
            target_sentences: The target sentences, line-aligned.
            links: For each pair, its `(source, target)` links over the
                whitespace words (e.g. `read_pharaoh(...)`'s sure links of
                a reference aligner's output); a pair counted twice in a
                sentence pair is counted once.

        Returns:
            A `LinkRates`.
        """
        n = len(source_sentences)
        if len(target_sentences) != n or len(links) != n:
            raise ValueError(
                "`source_sentences`, `target_sentences` and `links` must "
                "have one entry per pair each. Received: "
                f"{n}, {len(target_sentences)} and {len(links)}"
            )
        keyed = []
        linked = collections.Counter()
        for line, (source, target, pair_links) in enumerate(
            zip(source_sentences, target_sentences, links), start=1
        ):
            s_keys = _keys(source, "source_sentences", line)
            t_keys = _keys(target, "target_sentences", line)
            pair_links = check_links(f"links (line {line})", pair_links)
            for i, j in pair_links:
                if i >= len(s_keys) or j >= len(t_keys):
                    raise ValueError(
                        f"Link {i}-{j} of line {line} is out of range: the "
                        f"pair has {len(s_keys)} source and {len(t_keys)} "
                        "target words"
                    )
            keyed.append((s_keys, t_keys))
            linked.update({(s_keys[i], t_keys[j]) for i, j in pair_links})
        # Co-occurrences only of the pairs linked somewhere: the others
        # have rate 0 whatever their count.
        together = collections.Counter()
        for s_keys, t_keys in keyed:
            together.update(
                (s, t) for s in set(s_keys) for t in set(t_keys)
                if (s, t) in linked
            )
        return cls({key: linked[key] / together[key] for key in linked})

    def __len__(self):
        return len(self._rates)

    def rate(self, source_word: str, target_word: str) -> float:
        """The rate of two words (their `word_key`s); 0 if never linked."""
        return self._rates.get((word_key(source_word), word_key(target_word)),
                               0.0)

    def transposed(self) -> "LinkRates":
        """The rates with source and target swapped."""
        return LinkRates({(t, s): r for (s, t), r in self._rates.items()})

    def matrix(
        self, source_words: Sequence[str], target_words: Sequence[str]
    ) -> np.ndarray:
        """The `(len(target_words), len(source_words))` rates of a pair.

        Row `j`, column `i` holds `rate(source_words[i], target_words[j])`:
        the layout of `word_attention`, ready for `mix_prior`.
        """
        s_keys = [word_key(w) for w in source_words]
        t_keys = [word_key(w) for w in target_words]
        get = self._rates.get
        return np.array(
            [[get((s, t), 0.0) for s in s_keys] for t in t_keys],
            dtype="float64",
        ).reshape(len(t_keys), len(s_keys))

    def get_config(self) -> dict:
        """The rates as a JSON-ready dict (`from_config` reads it)."""
        return {"rates": [[s, t, r] for (s, t), r in self._rates.items()]}

    @classmethod
    def from_config(cls, config: dict) -> "LinkRates":
        return cls({(s, t): float(r) for s, t, r in config["rates"]})


def _bigrams(key: str) -> set:
    return {key[i : i + 2] for i in range(len(key) - 1)}


def orthographic_similarity(
    source_words: Sequence[str],
    target_words: Sequence[str],
    min_similarity: float = 0.5,
    min_length: int = 4,
) -> np.ndarray:
    """How alike the spellings of two sentences' words are.

    The Dice coefficient of the character bigrams of the two `word_key`s,
    `2 |B(s) & B(t)| / (|B(s)| + |B(t)|)`: 1 for the same word (a name, a
    number), about 0.7 for `commandements`/`commandments`; values below
    `min_similarity` are 0, and so is every pair with a word shorter than
    `min_length` characters that is not the same word (short words share
    bigrams by chance: `les`/`less`).

    Args:
        source_words: The source sentence's whitespace words.
        target_words: The target sentence's.
        min_similarity: The smallest similarity kept, in `[0, 1]`.
            Defaults to `0.5`.
        min_length: The shortest word (characters of its key) compared by
            its bigrams. Defaults to `4`.

    Returns:
        The `(len(target_words), len(source_words))` similarities, the
        layout of `LinkRates.matrix`.

    >>> orthographic_similarity(["Paris", "les", "1933."],
    ...                         ["paris", "less", "1933"]).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    min_similarity = check_float(
        "min_similarity", min_similarity, low=0.0, high=1.0
    )
    min_length = check_positive_int("min_length", min_length)
    s_keys = [word_key(w) for w in source_words]
    t_keys = [word_key(w) for w in target_words]
    s_grams = [_bigrams(k) for k in s_keys]
    out = np.zeros((len(t_keys), len(s_keys)), dtype="float64")
    for j, t in enumerate(t_keys):
        t_grams = _bigrams(t)
        for i, s in enumerate(s_keys):
            if s == t:
                out[j, i] = 1.0
            elif min(len(s), len(t)) >= min_length:
                both = len(t_grams & s_grams[i])
                value = 2.0 * both / (len(t_grams) + len(s_grams[i]))
                out[j, i] = value if value >= min_similarity else 0.0
    return out


def _matrix_and_prior(attention: ArrayLike, prior: ArrayLike) -> tuple:
    attention = check_weight_matrix("attention", attention)
    prior = check_weight_matrix("prior", prior)
    if prior.shape != attention.shape:
        raise ValueError(
            "`prior` must have the shape of `attention`, (target_words, "
            f"source_words). Received: attention of shape {attention.shape}, "
            f"prior of shape {prior.shape}"
        )
    return attention, prior


def mix_prior(
    attention: ArrayLike, prior: ArrayLike, weight: float
) -> np.ndarray:
    """`(1 - weight) * attention + weight * prior`, same shape.

    Args:
        attention: `(target_words, source_words)` word attention.
        prior: The same shape, values in `[0, 1]` (e.g. `LinkRates.matrix`).
        weight: The prior's share, in `[0, 1]`: 0 is the attention alone,
            1 the prior alone.

    Returns:
        The mixed `float64` matrix; `hard_links` turns it into links (with
        threshold links, a word pair of rate 1 and weight 0.5 is linked
        whatever the attention).

    Raises:
        ValueError: if `weight` is outside `[0, 1]`, or a matrix is not
            2-D, holds a NaN, an infinity or a negative weight, or the two
            shapes differ.
    """
    weight = check_float("weight", weight, low=0.0, high=1.0)
    attention, prior = _matrix_and_prior(attention, prior)
    return (1.0 - weight) * attention + weight * prior


def reweight_by_prior(
    attention: ArrayLike, prior: ArrayLike, floor: float = 0.2
) -> np.ndarray:
    """The attention times the prior, renormalized per target word.

    Row `i` of the result is `attention[i] * (floor + prior[i])`, scaled to
    sum to 1 (a row of zeros stays zeros): a posterior that keeps the
    attention's distribution over the source words and moves its mass
    toward the word pairs the prior favours. Unlike `mix_prior`, the rows
    stay distributions, which `agreement_links` needs; `floor` is how much
    the attention counts where the prior knows nothing (0: only word
    pairs of positive prior keep weight; large: the attention alone).

    Args:
        attention: `(target_words, source_words)` word attention.
        prior: The same shape, values in `[0, 1]` (e.g. `LinkRates.matrix`,
            `orthographic_similarity`, or their `np.maximum`).
        floor: A finite number > 0. Defaults to `0.2`.

    Returns:
        A `float64` matrix of `attention`'s shape whose rows sum to 1 (or
        0).

    Raises:
        ValueError: if `floor` is not a finite number > 0, or a matrix is
            not 2-D, holds a NaN, an infinity or a negative weight, or the
            two shapes differ.

    Example:

    >>> reweight_by_prior([[0.5, 0.5]], [[1.0, 0.0]], floor=1.0).tolist()
    [[0.6666666666666666, 0.3333333333333333]]
    """
    floor = check_float("floor", floor, low=0.0, low_open=True)
    attention, prior = _matrix_and_prior(attention, prior)
    return normalize_rows(attention * (floor + prior))
