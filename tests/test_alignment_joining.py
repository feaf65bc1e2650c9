"""keras_attention.alignment.concatenate_pairs and join_pairs: joined
pairs whose shifted links point at the words the original links did."""

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_attention.alignment import concatenate_pairs
from keras_attention.alignment import join_pairs
from keras_attention.checks import ArgumentTypeError


def _linked_words(source, target, links):
    src, tgt = source.split(), target.split()
    return {(src[i], tgt[j]) for i, j in links}


def _corpus(shapes, rnd):
    """Pairs of the given word counts, every word unique to its pair, with
    random links."""
    sources, targets, links = [], [], []
    for k, (m, n) in enumerate(shapes):
        sources.append(" ".join(f"s{k}_{i}" for i in range(m)))
        targets.append(" ".join(f"t{k}_{j}" for j in range(n)))
        cells = [(i, j) for i in range(m) for j in range(n)]
        links.append(set(rnd.sample(cells, rnd.randint(0, len(cells)))))
    return sources, targets, links


def test_join_pairs_shifts_each_part_by_the_words_before_it():
    source, target, links = join_pairs([
        ("le chat dort .", "the cat sleeps .", {(0, 0), (1, 1), (2, 2)}),
        ("je vois un chien", "I see a dog", {(0, 0), (1, 1), (3, 3)}),
        ("bonjour !", "hello", {(0, 0), (1, 0)}),
    ])
    assert source == "le chat dort . je vois un chien bonjour !"
    assert target == "the cat sleeps . I see a dog hello"
    # Second part: 4 source and 4 target words before it; third: 8 and 8.
    assert links == {(0, 0), (1, 1), (2, 2), (4, 4), (5, 5), (7, 7),
                     (8, 8), (9, 8)}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)),
                min_size=2, max_size=4), st.randoms(use_true_random=False))
def test_joined_links_point_at_the_same_words(shapes, rnd):
    sources, targets, links = _corpus(shapes, rnd)
    source, target, joined = join_pairs(zip(sources, targets, links))
    assert len(source.split()) == sum(m for m, _ in shapes)
    assert len(target.split()) == sum(n for _, n in shapes)
    assert _linked_words(source, target, joined) == set().union(
        *(_linked_words(*p) for p in zip(sources, targets, links)))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.integers(1, 8)),
                min_size=4, max_size=12), st.randoms(use_true_random=False),
       st.integers(2, 3), st.integers(0, 2), st.integers(0, 10 ** 6))
def test_concatenate_pairs_draws_distinct_short_pairs(
        shapes, rnd, parts, extra, seed):
    sources, targets, links = _corpus(shapes, rnd)
    max_parts, max_words = parts + extra, 24
    try:
        out = concatenate_pairs(sources, targets, links, 15, parts,
                                max_parts, max_words, seed)
    except ValueError as error:
        # Only when too few pairs are short enough for some k.
        assert "Fewer than" in str(error)
        k = int(str(error).split()[2])
        assert sum(max(m, n) <= max_words // k for m, n in shapes) < k
        return
    for source, target, joined in zip(*out):
        # The parts, recovered from the words' pair numbers, are distinct
        # pairs of the corpus, each short enough for their number.
        ks = [int(w[1:].split("_")[0]) for w in source.split()]
        chosen = list(dict.fromkeys(ks))
        assert parts <= len(chosen) <= max_parts
        assert source == " ".join(sources[c] for c in chosen)
        assert target == " ".join(targets[c] for c in chosen)
        assert all(max(shapes[c]) <= max_words // len(chosen)
                   for c in chosen)
        assert _linked_words(source, target, joined) == set().union(
            *(_linked_words(sources[c], targets[c], links[c])
              for c in chosen))
    # Seeded: the same draws again.
    assert concatenate_pairs(sources, targets, links, 15, parts, max_parts,
                             max_words, seed) == out


def test_concatenate_pairs_draws_every_number_of_parts():
    sources = [f"s{k}" for k in range(20)]
    targets = [f"t{k}" for k in range(20)]
    links = [{(0, 0)}] * 20
    out = concatenate_pairs(sources, targets, links, 200, 2, 4, seed=3)
    assert {len(s.split()) for s in out[0]} == {2, 3, 4}
    assert concatenate_pairs(sources, targets, links, 0) == ([], [], [])
    other = concatenate_pairs(sources, targets, links, 200, 2, 4, seed=4)
    assert other != out


@pytest.mark.parametrize("kwargs, error, match", [
    ({"count": -1}, ValueError, "`count` must be a non-negative integer"),
    ({"count": 1.5}, ArgumentTypeError, "`count`"),
    ({"count": 1, "parts": 1}, ValueError, "`parts` must be an integer >= 2"),
    ({"count": 1, "parts": True}, ArgumentTypeError, "`parts`"),
    ({"count": 1, "parts": 3, "max_parts": 2}, ValueError,
     "`max_parts` must be an integer >= 3"),
    ({"count": 1, "max_words": 0}, ValueError, "`max_words`"),
    ({"count": 1, "max_words": 3}, ValueError,
     "Fewer than 2 pairs have at most 1 words"),
])
def test_concatenate_pairs_refuses_arguments_outside_their_domain(
        kwargs, error, match):
    with pytest.raises(error, match=match):
        concatenate_pairs(["a b", "c d", "e"], ["x y", "z w", "v"],
                          [{(0, 0)}, {(1, 1)}, {(0, 0)}], **kwargs)


def test_concatenate_pairs_refuses_mismatched_corpora_and_links():
    with pytest.raises(ValueError, match="one entry per pair"):
        concatenate_pairs(["a", "b"], ["x"], [set(), set()], 1)
    with pytest.raises(ValueError, match=r"`links\[1\]` holds \(1, 0\)"):
        concatenate_pairs(["a", "b"], ["x", "y"], [{(0, 0)}, {(1, 0)}], 1)
    with pytest.raises(ValueError, match="one alignment"):
        concatenate_pairs(["a"], ["x"], {(0, 0)}, 1)
