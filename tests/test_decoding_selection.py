"""The chunked top-k of beam search gives exactly `TopKV2`'s result.

`selection.top_k` narrows wide rows to the chunks that can hold their `k`
best scores before the top-k. Its values and indices must be those of a
stable numpy sort (largest first, equal values in index order), whatever
the ties, `-inf` and row widths (padded where the chunk size does not
divide them); and beam search through it must keep matching the
plain-Python reference. The chunked path runs on TensorFlow only.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

pytestmark = pytest.mark.tf_only

tf = pytest.importorskip("tensorflow")

from keras_attention.decoding import selection  # noqa: E402
from tests import test_decoding_beam  # noqa: E402


def _reference(x, k):
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(x, order, 1), order


@pytest.fixture
def chunked_everywhere(monkeypatch):
    """The chunked path for rows of any width (it starts at 4096)."""
    monkeypatch.setattr(selection, "MIN_CHUNKED_WIDTH", 1)




@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 300),
    st.integers(1, 8),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_chunked_top_k_is_the_stable_top_k(rows, width, k, ties, seed):
    k = min(k, width)
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values, the large ones rare: ties at the k-th
        x = rng.choice([3.0, 2.0, 1.0, 0.0, -1e9, -np.inf], (rows, width),
                       p=[0.01, 0.03, 0.08, 0.6, 0.08, 0.2])
    else:
        x = rng.normal(size=(rows, width)) * 10
    x = x.astype("float32")
    original = selection.MIN_CHUNKED_WIDTH
    selection.MIN_CHUNKED_WIDTH = 1
    try:
        values, indices = selection.top_k(tf.constant(x), k)
    finally:
        selection.MIN_CHUNKED_WIDTH = original
    want_values, want_indices = _reference(x, k)
    np.testing.assert_array_equal(values.numpy(), want_values)
    np.testing.assert_array_equal(indices.numpy(), want_indices)
    assert indices.dtype == tf.int32


def test_the_chunked_path_is_taken_on_wide_rows(monkeypatch):
    """The chunk maxima are computed (a `Max` in the graph) on rows from
    `MIN_CHUNKED_WIDTH` on, not below, where one `TopKV2` is cheaper."""
    def ops_of(width):
        fn = tf.function(lambda x: selection.top_k(x, 5))
        graph = fn.get_concrete_function(
            tf.TensorSpec([None, width], tf.float32)).graph
        return {op.type for op in graph.get_operations()}

    assert "Max" in ops_of(selection.MIN_CHUNKED_WIDTH)
    assert "Max" not in ops_of(selection.MIN_CHUNKED_WIDTH - 1)
    x = np.random.default_rng(0).normal(size=(3, 25_000)).astype("float32")
    values, indices = selection.top_k(tf.constant(x), 5)
    want_values, want_indices = _reference(x, 5)
    np.testing.assert_array_equal(indices.numpy(), want_indices)
    np.testing.assert_array_equal(values.numpy(), want_values)


def test_ties_across_chunks_go_to_the_lower_index(chunked_everywhere):
    """The `k`-th value tied in a chunk with a smaller maximum, at a lower
    index, and in one with a larger maximum, at a higher index: the lower
    index wins, as in `TopKV2`."""
    x = np.zeros((1, 64), "float32")
    assert selection.chunk_size(64, 3) == 4
    x[0, 1], x[0, 2] = 1.0, 0.5     # chunk 0: maximum 1.0
    x[0, 40], x[0, 41] = 2.0, 0.5   # a later chunk: maximum 2.0
    _, indices = selection.top_k(tf.constant(x), 3)
    assert indices.numpy().tolist() == [[40, 1, 2]]


@pytest.mark.parametrize("width, k", [(25_000, 5), (5_000, 4), (25_015, 5),
                                      (7, 3), (1, 1)])
def test_chunk_size_divides_the_row_where_it_can(width, k):
    size = selection.chunk_size(width, k)
    ideal = max(1, round((width / k) ** 0.5))
    assert ideal // 2 <= size <= 2 * ideal
    divisible = [c for c in range(max(1, ideal // 2), 2 * ideal + 1)
                 if width % c == 0]
    assert (width % size == 0) == bool(divisible)


@pytest.mark.parametrize("case", [(0, 3, 0.6, 0.5, "default"),
                                  (2, 3, 1.0, 0.0, "tfa"),
                                  (4, 4, 1.5, 1.0, "tfa")])
def test_beam_search_through_the_chunked_top_k_matches_the_reference(
    chunked_everywhere, case
):
    test_decoding_beam.test_penalties_and_conventions_match_reference(*case)
