"""keras_attention.alignment: agreement_links, agreement_matrix and
reweight_by_prior.

Pure numpy/Python. The references walk every word pair with explicit
loops and `math`, independently of the library's array expressions.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from keras_attention import alignment as al


def _reference_agreement(forward, reverse, threshold):
    links = set()
    for t, row in enumerate(forward):
        for s, weight in enumerate(row):
            if math.sqrt(weight * reverse[s][t]) >= threshold:
                links.add((s, t))
    return links


def _reference_reweight(attention, prior, floor):
    out = []
    for row, prior_row in zip(attention, prior):
        weighted = [a * (floor + p) for a, p in zip(row, prior_row)]
        total = sum(weighted)
        out.append([w / total if total > 0 else 0.0 for w in weighted])
    return out


def _distributions(rows, cols):
    """Row-stochastic matrices (some rows all zero) of a given shape."""
    return hnp.arrays(
        np.float64, (rows, cols),
        elements=st.floats(0.0, 1.0, allow_subnormal=False),
    ).map(
        lambda m: m / np.where(m.sum(1, keepdims=True) > 0,
                               m.sum(1, keepdims=True), 1.0)
    )


@st.composite
def _pairs(draw):
    t = draw(st.integers(1, 6))
    s = draw(st.integers(1, 6))
    return draw(_distributions(t, s)), draw(_distributions(s, t))


def test_agreement_worked_by_hand():
    # Two target words (rows) over three source words, and back.
    forward = [[0.8, 0.2, 0.0], [0.1, 0.1, 0.8]]
    reverse = [[1.0, 0.0], [0.6, 0.4], [0.0, 1.0]]
    np.testing.assert_allclose(
        al.agreement_matrix(forward, reverse),
        [[math.sqrt(0.8), math.sqrt(0.12), 0.0],
         [0.0, math.sqrt(0.04), math.sqrt(0.8)]],
    )
    # Source word 1 ("du" in "du pain" -> "bread") is pulled toward target
    # 0 by the reverse direction only: sqrt(0.2 * 0.6) = 0.35.
    assert al.agreement_links(forward, reverse, 0.3) == {(0, 0), (1, 0), (2, 1)}
    assert al.agreement_links(forward, reverse, 0.4) == {(0, 0), (2, 1)}
    assert al.agreement_links(forward, reverse) == {(0, 0), (1, 0), (2, 1)}
    # The threshold itself is enough: sqrt(1 * 0.25) = 0.5 exactly.
    assert al.agreement_links([[1.0]], [[0.25]], 0.5) == {(0, 0)}


@settings(max_examples=60, deadline=None)
@given(pair=_pairs(), threshold=st.floats(0.01, 1.0))
def test_agreement_matches_the_reference(pair, threshold):
    forward, reverse = pair
    links = al.agreement_links(forward, reverse, threshold)
    assert links == _reference_agreement(forward, reverse, threshold)
    # Swapping the directions gives the transposed links.
    assert al.agreement_links(reverse, forward, threshold) == (
        al.transpose_links(links)
    )
    # With distributions, a word has at most 1 / threshold**2 links.
    for t in range(forward.shape[0]):
        assert sum(1 for _, j in links if j == t) <= 1 / threshold**2
    # A higher threshold keeps a subset.
    assert al.agreement_links(
        forward, reverse, min(1.0, threshold * 1.5)
    ) <= links


def test_agreement_needs_both_directions():
    # Each direction puts all of a word's mass on word pairs the other
    # gives none: no link, where the union of argmax links has four.
    forward = [[1.0, 0.0], [0.0, 1.0]]
    reverse = [[0.0, 1.0], [1.0, 0.0]]
    assert al.agreement_links(forward, reverse, 0.01) == set()
    union = al.hard_links(forward) | al.transpose_links(al.hard_links(reverse))
    assert len(union) == 4
    assert al.agreement_links(np.zeros((2, 3)), np.zeros((3, 2))) == set()


@settings(max_examples=40, deadline=None)
@given(
    threshold=st.one_of(
        st.floats(max_value=0.0, allow_nan=False),
        st.floats(min_value=1.0 + 1e-9, allow_nan=False),
        st.just(float("nan")),
    )
)
def test_agreement_refuses_thresholds_outside_0_1(threshold):
    with pytest.raises(ValueError, match="threshold"):
        al.agreement_links(np.ones((1, 1)), np.ones((1, 1)), threshold)


def test_agreement_refuses_bad_matrices():
    ones = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"`reverse`.*shape \(3, 2\).*"
                       r"forward of shape \(2, 3\), reverse of shape \(2, 3\)"):
        al.agreement_links(ones, ones)
    with pytest.raises(ValueError, match=r"`forward` must be a 2-D.*\(3,\)"):
        al.agreement_links(np.ones(3), ones)
    bad = ones.T.copy()
    bad[1, 1] = np.inf
    with pytest.raises(ValueError, match="`reverse` must hold finite.*1 NaN"):
        al.agreement_matrix(ones, bad)
    with pytest.raises(ValueError, match="`forward` must hold finite.*min -2"):
        al.agreement_matrix(-2 * ones, ones.T)
    with pytest.raises(ValueError, match="`forward` must be a 2-D"):
        al.agreement_matrix([["a", "b"]], ones.T)
    with pytest.raises(TypeError, match="threshold"):
        al.agreement_links(ones, ones.T, "0.3")


def test_reweight_worked_by_hand():
    attention = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 0.0]]
    prior = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    out = al.reweight_by_prior(attention, prior, floor=0.5)
    # Row 0: 0.5 * 1.5 and 0.5 * 0.5 -> 0.75, 0.25; row 1: no prior, the
    # attention itself; row 2: no attention, zeros.
    np.testing.assert_allclose(
        out, [[0.75, 0.25, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 0.0]]
    )


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    shape=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    floor=st.floats(1e-3, 1e3),
)
def test_reweight_matches_the_reference(data, shape, floor):
    attention = data.draw(_distributions(*shape))
    prior = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(0, 1)))
    out = al.reweight_by_prior(attention, prior, floor)
    np.testing.assert_allclose(
        out, _reference_reweight(attention, prior, floor), rtol=1e-9,
        atol=1e-12,
    )
    sums = out.sum(axis=1)
    np.testing.assert_allclose(
        sums[attention.sum(axis=1) > 0], 1.0, rtol=1e-9
    )
    # A large floor leaves the attention as it is.
    np.testing.assert_allclose(
        al.reweight_by_prior(attention, prior, 1e12), attention, atol=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(
    floor=st.one_of(
        st.floats(max_value=0.0, allow_nan=False),
        st.just(float("nan")),
        st.just(float("inf")),
    )
)
def test_reweight_refuses_floors_that_are_not_positive(floor):
    with pytest.raises(ValueError, match="floor"):
        al.reweight_by_prior(np.ones((1, 1)), np.ones((1, 1)), floor)


def test_reweight_refuses_bad_matrices():
    ones = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"`prior` must have the shape"):
        al.reweight_by_prior(ones, ones.T)
    bad = ones.copy()
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="`prior` must hold finite"):
        al.reweight_by_prior(ones, bad)
    with pytest.raises(ValueError, match="`attention` must hold finite"):
        al.reweight_by_prior(-ones, ones)
