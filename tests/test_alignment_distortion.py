"""keras_attention.alignment: diagonal_prior and favor_diagonal.

Pure numpy/Python. The references walk every word pair with explicit
loops and `math`, from fast_align's formula (positions from 1).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from keras_attention import alignment as al


def _reference_prior(m, n, tension):
    return [
        [math.exp(-tension * abs(i / m - j / n)) for j in range(1, n + 1)]
        for i in range(1, m + 1)
    ]


def _reference_favor(attention, tension):
    m, n = len(attention), len(attention[0])
    prior = _reference_prior(m, n, tension)
    out = []
    for row, prior_row in zip(attention, prior):
        weighted = [a * p for a, p in zip(row, prior_row)]
        total = sum(weighted)
        out.append([w / total if total > 0 else 0.0 for w in weighted])
    return out


@st.composite
def _attention(draw):
    rows = draw(st.integers(1, 7))
    cols = draw(st.integers(1, 7))
    matrix = draw(hnp.arrays(
        np.float64, (rows, cols),
        elements=st.floats(0.0, 1.0, allow_subnormal=False),
    ))
    total = matrix.sum(1, keepdims=True)
    return matrix / np.where(total > 0, total, 1.0)


def test_diagonal_prior_worked_by_hand():
    # Two target words over four source words: target word 1 of 2 sits at
    # 0.5, source words at 0.25, 0.5, 0.75, 1.0.
    np.testing.assert_allclose(
        al.diagonal_prior(2, 4, tension=2.0),
        [[math.exp(-0.5), 1.0, math.exp(-0.5), math.exp(-1.0)],
         [math.exp(-1.5), math.exp(-1.0), math.exp(-0.5), 1.0]],
    )
    # The last words of both sentences always meet on the diagonal.
    assert al.diagonal_prior(3, 7)[-1, -1] == 1.0
    np.testing.assert_array_equal(al.diagonal_prior(3, 5, tension=0.0),
                                  np.ones((3, 5)))


def test_favor_diagonal_moves_a_far_link_to_the_near_one():
    # The first target word's attention is split between the first and
    # the last of five source words; the prior keeps the near one.
    attention = [[0.5, 0.0, 0.0, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0, 1.0]]
    favored = al.favor_diagonal(attention, tension=4.0)
    # Row 0 (i/m = 0.5): source 1 at 0.2, source 5 at 1.0.
    near, far = math.exp(-4 * 0.3), math.exp(-4 * 0.5)
    np.testing.assert_allclose(
        favored[0], [near / (near + far), 0, 0, 0, far / (near + far)]
    )
    np.testing.assert_allclose(favored[1], [0, 0, 0, 0, 1.0])
    assert al.hard_links(favored) == {(0, 0), (4, 1)}
    # The far word a little ahead in the attention: the prior decides.
    close_call = np.array([[0.49, 0, 0, 0, 0.51], [0, 0, 0, 0, 1.0]])
    assert al.hard_links(close_call) == {(4, 0), (4, 1)}
    assert al.hard_links(al.favor_diagonal(close_call, 4.0)) == {
        (0, 0), (4, 1)}
    # One target word sits at the end of its sentence (fast_align counts
    # positions from 1: i / m = 1).
    assert al.hard_links(al.favor_diagonal(
        [[0.51, 0, 0, 0, 0.49]], tension=4.0)) == {(4, 0)}


@settings(max_examples=60, deadline=None)
@given(attention=_attention(), tension=st.floats(0.0, 50.0))
def test_favor_diagonal_matches_the_reference(attention, tension):
    favored = al.favor_diagonal(attention, tension)
    np.testing.assert_allclose(
        favored, _reference_favor(attention.tolist(), tension),
        rtol=1e-9, atol=1e-12,
    )
    totals = favored.sum(1)
    live = attention.sum(1) > 0
    np.testing.assert_allclose(totals[live], 1.0)
    np.testing.assert_array_equal(totals[~live], 0.0)
    # A weight of zero stays zero: the prior moves mass, never creates it.
    assert np.all(favored[attention == 0] == 0)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 30), n=st.integers(1, 30),
       tension=st.floats(0.0, 100.0))
def test_diagonal_prior_properties(m, n, tension):
    prior = al.diagonal_prior(m, n, tension)
    assert prior.shape == (m, n)
    assert np.all(prior > 0) or tension > 0
    assert np.all(prior <= 1.0) and np.all(prior >= 0.0)
    # Reading the pair the other way round transposes the prior.
    np.testing.assert_allclose(al.diagonal_prior(n, m, tension), prior.T)
    # A larger tension never raises an entry.
    assert np.all(al.diagonal_prior(m, n, tension + 1.0) <= prior)


def test_tension_zero_keeps_the_attention():
    attention = np.array([[0.2, 0.3, 0.5], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(al.favor_diagonal(attention, 0.0), attention)


def test_empty_attention_is_returned_empty():
    assert al.favor_diagonal(np.zeros((0, 3))).shape == (0, 3)
    assert al.favor_diagonal(np.zeros((2, 0))).shape == (2, 0)


@settings(max_examples=30, deadline=None)
@given(tension=st.one_of(
    st.floats(max_value=-1e-6), st.just(float("nan")),
    st.just(float("inf")),
))
def test_tension_outside_its_domain_is_refused(tension):
    with pytest.raises(ValueError, match="tension"):
        al.favor_diagonal([[1.0]], tension)
    with pytest.raises(ValueError, match="tension"):
        al.diagonal_prior(2, 2, tension)


@pytest.mark.parametrize("length", [0, -1, 1.5, True])
def test_bad_lengths_are_refused(length):
    with pytest.raises((ValueError, TypeError), match="target_words"):
        al.diagonal_prior(length, 3)
    with pytest.raises((ValueError, TypeError), match="source_words"):
        al.diagonal_prior(3, length)


@pytest.mark.parametrize("matrix", [
    [[0.5, float("nan")]], [[0.5, float("inf")]], [[-0.1, 1.1]],
    [0.5, 0.5], [[[1.0]]], "weights",
])
def test_bad_attention_is_refused(matrix):
    with pytest.raises(ValueError, match="attention"):
        al.favor_diagonal(matrix)


def test_tension_is_not_a_string():
    with pytest.raises((TypeError, ValueError), match="tension"):
        al.favor_diagonal([[1.0]], "4")


def _draw_links(tension, pairs, seed):
    """Links drawn from the normalized diagonal prior: one per target
    word, lengths 3-12."""
    rng = np.random.default_rng(seed)
    links, sources, targets = [], [], []
    for _ in range(pairs):
        n, m = rng.integers(3, 13, size=2)
        prior = al.diagonal_prior(m, n, tension)
        prior /= prior.sum(1, keepdims=True)
        links.append({(int(rng.choice(n, p=row)), i)
                      for i, row in enumerate(prior)})
        sources.append(int(n))
        targets.append(int(m))
    return links, sources, targets


def _reference_log_likelihood(tension, links, sources, targets):
    total = 0.0
    for pair, n, m in zip(links, sources, targets):
        for j, i in pair:
            row = _reference_prior(m, n, tension)[i]
            total += math.log(row[j] / sum(row))
    return total


@pytest.mark.parametrize("tension", [1.0, 4.0, 9.0])
def test_estimate_tension_recovers_the_tension_links_were_drawn_with(
    tension
):
    links, sources, targets = _draw_links(tension, 1500, seed=int(tension))
    estimate = al.estimate_tension(links, sources, targets)
    assert abs(estimate - tension) < 0.15 * tension + 0.3
    # The maximum of the likelihood: both neighbours score lower.
    best = _reference_log_likelihood(estimate, links, sources, targets)
    for other in (estimate * 0.9, estimate * 1.1):
        assert _reference_log_likelihood(
            other, links, sources, targets) < best


def test_estimate_tension_at_its_bounds():
    # Links as far from the diagonal as they can be: no tension.
    assert al.estimate_tension([{(0, 1), (1, 0)}] * 5, [2] * 5, [2] * 5) == 0.0
    # Every link on the diagonal: the largest tension allowed.
    assert al.estimate_tension(
        [{(0, 0), (1, 1), (2, 2)}] * 3, [3] * 3, [3] * 3, max_tension=30.0
    ) == 30.0
    # Links drawn at random (tension 0) fit a tension near 0.
    links, sources, targets = _draw_links(0.0, 1500, seed=7)
    assert al.estimate_tension(links, sources, targets) < 0.5


def test_estimate_tension_refuses_bad_input():
    with pytest.raises(ValueError, match="source_lengths"):
        al.estimate_tension([{(0, 0)}], [1, 2], [1])
    with pytest.raises(ValueError, match="target_lengths"):
        al.estimate_tension([{(0, 0)}], [1], [0])
    with pytest.raises(ValueError, match="inside its 2 source"):
        al.estimate_tension([{(2, 0)}], [2], [3])
    with pytest.raises(ValueError, match="no link"):
        al.estimate_tension([set(), set()], [2, 2], [2, 2])
    with pytest.raises(ValueError, match="max_tension"):
        al.estimate_tension([{(0, 0)}], [1], [1], max_tension=0.0)
    with pytest.raises(ValueError, match="links"):
        al.estimate_tension({(0, 0)}, [1], [1])
