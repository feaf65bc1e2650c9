"""keras_attention.alignment.lexical: link rates and the prior mixture.

Pure numpy/Python. The reference counts below walk the corpus pair by pair
with explicit loops over every word pair, independently of the library's
counters.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_attention import alignment as al


def _reference_rates(sources, targets, links):
    """Link rates by brute force: for each (s, t) linked somewhere, the
    pairs where both occur and the pairs where they are linked."""
    keyed = [
        ([al.word_key(w) for w in s.split()], [al.word_key(w) for w in t.split()])
        for s, t in zip(sources, targets)
    ]
    linked_types = set()
    for (s_keys, t_keys), pair_links in zip(keyed, links):
        for i, j in pair_links:
            linked_types.add((s_keys[i], t_keys[j]))
    rates = {}
    for s, t in linked_types:
        both = linked = 0
        for (s_keys, t_keys), pair_links in zip(keyed, links):
            if s in s_keys and t in t_keys:
                both += 1
                if any(
                    s_keys[i] == s and t_keys[j] == t for i, j in pair_links
                ):
                    linked += 1
        rates[(s, t)] = linked / both
    return rates


def test_rates_worked_by_hand():
    sources = ["le chat dort", "le chien dort", "Le chat, le chien."]
    targets = ["the cat sleeps", "the dog sleeps", "the cat, the dog."]
    links = [
        {(0, 0), (1, 1), (2, 2)},
        {(0, 0), (2, 2)},  # chien-dog left out here
        {(1, 1), (3, 3)},  # le-the left out, "chien."-"dog." linked
    ]
    rates = al.LinkRates.from_links(sources, targets, links)
    # le/the: 3 pairs hold both, 2 link them (the last holds each twice:
    # it counts once).
    assert rates.rate("le", "the") == pytest.approx(2 / 3)
    # chat/cat: 2 of 2 ("Chat," is "chat"); dort/sleeps: 2 of 2.
    assert rates.rate("Chat,", "cat") == 1.0
    assert rates.rate("dort", "sleeps") == 1.0
    # chien/dog: linked in 1 of the 2 pairs that hold both.
    assert rates.rate("chien", "dog") == 0.5
    # Never linked: 0, and not stored.
    assert rates.rate("le", "dog") == 0.0
    assert len(rates) == 4
    matrix = rates.matrix("le chien dort".split(), "the dog sleeps".split())
    np.testing.assert_allclose(
        matrix, [[2 / 3, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]]
    )
    # The other direction reads the same rates with the sides swapped.
    back = rates.transposed()
    np.testing.assert_array_equal(
        back.matrix("the dog sleeps".split(), "le chien dort".split()),
        matrix.T,
    )


def test_word_key_strips_case_and_surrounding_punctuation():
    assert al.word_key("Dimanche.") == "dimanche"
    assert al.word_key("«Aujourd'hui»,") == "aujourd'hui"
    assert al.word_key("?") == "?"
    with pytest.raises(TypeError, match="`word` must be a str"):
        al.word_key(b"chat")


_WORDS = st.sampled_from(["le", "la", "chat", "Chat.", "dort", "x", "?"])
_T_WORDS = st.sampled_from(["the", "cat", "Cat!", "sleeps", "y", "?"])


@st.composite
def _corpus(draw):
    n = draw(st.integers(1, 8))
    sources, targets, links = [], [], []
    for _ in range(n):
        s = draw(st.lists(_WORDS, min_size=1, max_size=5))
        t = draw(st.lists(_T_WORDS, min_size=1, max_size=5))
        pair_links = draw(
            st.sets(
                st.tuples(st.integers(0, len(s) - 1),
                          st.integers(0, len(t) - 1)),
                max_size=6,
            )
        )
        sources.append(" ".join(s))
        targets.append(" ".join(t))
        links.append(pair_links)
    return sources, targets, links


@settings(max_examples=60, deadline=None)
@given(_corpus())
def test_rates_match_the_brute_force_reference(corpus):
    sources, targets, links = corpus
    rates = al.LinkRates.from_links(sources, targets, links)
    expected = _reference_rates(sources, targets, links)
    assert len(rates) == len(expected)
    for (s, t), value in expected.items():
        assert math.isclose(rates.rate(s, t), value), (s, t)
        assert 0.0 < value <= 1.0
    # Each pair's matrix holds the rates of its words, in [0, 1].
    for s, t in zip(sources, targets):
        matrix = rates.matrix(s.split(), t.split())
        assert matrix.shape == (len(t.split()), len(s.split()))
        for j, tw in enumerate(t.split()):
            for i, sw in enumerate(s.split()):
                key = (al.word_key(sw), al.word_key(tw))
                assert matrix[j, i] == expected.get(key, 0.0)
    # The rates survive a JSON round trip.
    config = json.loads(json.dumps(rates.get_config()))
    again = al.LinkRates.from_config(config)
    assert again.get_config() == rates.get_config()


def test_from_links_refuses_bad_input():
    ok = (["a b"], ["x y"], [{(0, 0)}])
    al.LinkRates.from_links(*ok)
    with pytest.raises(ValueError, match="one entry per pair.*1, 2 and 1"):
        al.LinkRates.from_links(["a b"], ["x y", "z"], [{(0, 0)}])
    with pytest.raises(ValueError, match="Link 2-0 of line 1 is out of range"):
        al.LinkRates.from_links(["a b"], ["x y"], [{(2, 0)}])
    with pytest.raises(ValueError, match="Link 0-5 of line 2"):
        al.LinkRates.from_links(["a", "a"], ["x", "x"], [set(), {(0, 5)}])
    with pytest.raises(ValueError, match="links \\(line 1\\)"):
        al.LinkRates.from_links(["a b"], ["x y"], ["0-0"])
    with pytest.raises(ValueError, match="links \\(line 1\\)"):
        al.LinkRates.from_links(["a b"], ["x y"], [{(-1, 0)}])
    with pytest.raises(TypeError, match="`source_sentences`.*line 1"):
        al.LinkRates.from_links([["a", "b"]], ["x y"], [set()])
    with pytest.raises(TypeError, match="`target_sentences`.*NoneType"):
        al.LinkRates.from_links(["a b"], [None], [set()])


def test_rates_constructor_refuses_bad_input():
    with pytest.raises(TypeError, match="`rates` must be a dict"):
        al.LinkRates([("a", "x", 1.0)])
    with pytest.raises(ValueError, match="pair of str"):
        al.LinkRates({"a": 1.0})
    with pytest.raises(ValueError, match=r"in \[0, 1\].*1.5"):
        al.LinkRates({("a", "x"): 1.5})
    with pytest.raises(ValueError, match=r"in \[0, 1\].*nan"):
        al.LinkRates({("a", "x"): float("nan")})


def test_mix_prior_is_the_weighted_sum():
    attention = np.array([[0.7, 0.3], [0.2, 0.8]])
    prior = np.array([[0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(al.mix_prior(attention, prior, 0.0), attention)
    np.testing.assert_array_equal(al.mix_prior(attention, prior, 1), prior)
    mixed = al.mix_prior(attention, prior, 0.5)
    np.testing.assert_allclose(mixed, [[0.35, 0.65], [0.1, 0.4]])
    # The prior moves the first target word's argmax link; the second
    # keeps its attention's.
    assert al.hard_links(mixed) == {(1, 0), (1, 1)}
    assert al.hard_links(attention) == {(0, 0), (1, 1)}


@settings(max_examples=40, deadline=None)
@given(
    weight=st.one_of(
        st.floats(max_value=-1e-9, allow_nan=False),
        st.floats(min_value=1.0 + 1e-9, allow_nan=False),
        st.just(float("nan")),
        st.just(float("inf")),
    )
)
def test_mix_prior_refuses_weights_outside_0_1(weight):
    with pytest.raises(ValueError, match="weight"):
        al.mix_prior(np.ones((1, 1)), np.ones((1, 1)), weight)


def test_mix_prior_refuses_bad_matrices():
    ones = np.ones((2, 3))
    with pytest.raises(TypeError, match="weight"):
        al.mix_prior(ones, ones, "0.5")
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*shape \(3, 2\)"):
        al.mix_prior(ones, ones.T, 0.5)
    with pytest.raises(ValueError, match="shape"):
        al.mix_prior(np.ones(3), np.ones(3), 0.5)
    bad = ones.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="`attention` must hold finite"):
        al.mix_prior(bad, ones, 0.5)
    with pytest.raises(ValueError, match="`prior` must hold finite.*min -1"):
        al.mix_prior(ones, -ones, 0.5)


def _reference_dice(a, b):
    """Dice of character bigrams, by explicit loops over a list."""
    a, b = al.word_key(a), al.word_key(b)
    if a == b:
        return 1.0
    if min(len(a), len(b)) < 4:
        return 0.0
    grams_a = sorted({a[i] + a[i + 1] for i in range(len(a) - 1)})
    grams_b = sorted({b[i] + b[i + 1] for i in range(len(b) - 1)})
    shared = sum(1 for g in grams_a if g in grams_b)
    value = 2 * shared / (len(grams_a) + len(grams_b))
    return value if value >= 0.5 else 0.0


def test_orthographic_similarity_worked_by_hand():
    # commandements / commandments: 12 and 11 bigrams, 11 shared (the
    # "em"/"me" of "-ements" aside): 2 * 10 / 23.
    matrix = al.orthographic_similarity(["commandements"], ["commandments."])
    grams_a = {"co", "om", "mm", "ma", "an", "nd", "de", "em", "me", "en",
               "nt", "ts"}
    grams_b = {"co", "om", "mm", "ma", "an", "nd", "dm", "me", "en", "nt",
               "ts"}
    expected = 2 * len(grams_a & grams_b) / (len(grams_a) + len(grams_b))
    np.testing.assert_allclose(matrix, [[expected]])
    # Short words: only the same word counts; below 0.5 is 0.
    np.testing.assert_array_equal(
        al.orthographic_similarity(["les", "chat", "1933,"],
                                   ["less", "chien", "1933"]),
        [[0, 0, 0], [0, 0, 0], [0, 0, 1]],
    )
    assert al.orthographic_similarity([], ["a"]).shape == (1, 0)


_SPELLINGS = st.text(alphabet="abcdeé.,", min_size=1, max_size=9)


@settings(max_examples=60, deadline=None)
@given(st.lists(_SPELLINGS, max_size=4), st.lists(_SPELLINGS, max_size=4))
def test_orthographic_similarity_matches_the_reference(source, target):
    matrix = al.orthographic_similarity(source, target)
    assert matrix.shape == (len(target), len(source))
    for j, t in enumerate(target):
        for i, s in enumerate(source):
            assert math.isclose(matrix[j, i], _reference_dice(s, t))
    # Symmetric: the other direction is the transpose.
    np.testing.assert_allclose(
        al.orthographic_similarity(target, source), matrix.T
    )


def test_orthographic_similarity_refuses_bad_arguments():
    with pytest.raises(ValueError, match="min_similarity"):
        al.orthographic_similarity(["a"], ["a"], min_similarity=1.5)
    with pytest.raises(ValueError, match="min_length"):
        al.orthographic_similarity(["a"], ["a"], min_length=0)
    with pytest.raises(TypeError, match="`word` must be a str"):
        al.orthographic_similarity([3], ["a"])
