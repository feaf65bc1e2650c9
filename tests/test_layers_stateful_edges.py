"""Stateful layers at the edges: non-finite states, empty memories, unbuilt.

- Whatever the alignment state holds at masked source positions (NaN, inf)
  never reaches the weights, the context or the next state.
- A zero-length memory (`S == 0`) gives zero weights of shape
  `(batch_size, 0)` (`(batch_size, T, 0)` in `AttentionRNN`) and a zero
  context, for every layer, kernel size and mode, on every backend.
- `prepare_memory` on an unbuilt layer builds it when the keys fix the
  query size, and otherwise raises a `ValueError` that says to build it.
"""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import tree

import keras_attention as ka
from tests.stateful_helpers import to_np

B, S, D = 3, 5, 4


def stateful_layers():
    return {
        "location": ka.LocationSensitiveAttention(4, filters=2, kernel_size=3),
        "location_k1": ka.LocationSensitiveAttention(
            4, filters=2, kernel_size=1, cumulative=False
        ),
        "bahdanau_parallel": ka.BahdanauMonotonicAttention(
            4, normalize=True
        ),
        "bahdanau_recursive": ka.BahdanauMonotonicAttention(
            4, mode="recursive"
        ),
        "luong_hard": ka.LuongMonotonicAttention(D, mode="hard"),
    }


LAYERS = stateful_layers()
for _layer in LAYERS.values():
    _layer.build((B, D), (B, S, D))

RNG = np.random.default_rng(0)
QUERY = RNG.normal(size=(B, D)).astype("float32")
MEMORY = RNG.normal(size=(B, S, D)).astype("float32")


def finite_state(layer, mask, rng):
    """A plausible state after a few steps: non-negative, finite."""
    state = layer.initial_alignment_state(mask)
    return tree.map_structure(
        lambda t: (
            to_np(t) + rng.uniform(0, 0.4, size=(B, S)) * mask
        ).astype("float32"),
        state,
    )


@settings(max_examples=20, deadline=None)
@given(
    name=st.sampled_from(sorted(LAYERS)),
    lengths=st.lists(st.integers(0, S), min_size=B, max_size=B),
    junk=st.sampled_from([np.nan, np.inf, -np.inf, 1e30]),
    seed=st.integers(0, 2**16),
)
def test_non_finite_state_at_masked_positions_changes_nothing(
    name, lengths, junk, seed
):
    layer = LAYERS[name]
    rng = np.random.default_rng(seed)
    mask = np.arange(S)[None] < np.asarray(lengths)[:, None]
    clean = finite_state(layer, mask, rng)
    dirty = tree.map_structure(lambda x: np.where(mask, x, junk), clean)
    expected = layer(QUERY, MEMORY, value_mask=mask, alignment_state=clean)
    got = layer(QUERY, MEMORY, value_mask=mask, alignment_state=dirty)
    for want, have in zip(tree.flatten(expected), tree.flatten(got)):
        have = to_np(have)
        assert np.isfinite(have).all(), (name, have)
        np.testing.assert_allclose(have, to_np(want), rtol=1e-6, atol=1e-6)
    weights = to_np(got[1])
    assert (weights[~mask] == 0).all()


def test_initial_monotonic_state_starts_at_the_first_kept_position():
    layer = LAYERS["bahdanau_parallel"]
    mask = np.array(
        [[True] * S, [False, False, True, True, False], [False] * S]
    )
    state = to_np(layer.initial_alignment_state(mask))
    expected = np.zeros((B, S), "float32")
    expected[0, 0] = expected[1, 2] = 1.0
    np.testing.assert_array_equal(state, expected)
    # Left padding: the attention still moves over the kept positions.
    _, weights, _ = layer(QUERY, MEMORY, value_mask=mask)
    weights = to_np(weights)
    assert weights[1, 2:4].sum() > 0 and (weights[1, [0, 1, 4]] == 0).all()
    assert (weights[2] == 0).all()


ZERO_LENGTH = {
    **{
        f"location_k{k}": lambda k=k: ka.LocationSensitiveAttention(
            4, filters=2, kernel_size=k
        )
        for k in (1, 3, 31)
    },
    **{
        f"bahdanau_{mode}": lambda mode=mode: ka.BahdanauMonotonicAttention(
            4, mode=mode
        )
        for mode in ("parallel", "recursive", "hard")
    },
    "luong_recursive": lambda: ka.LuongMonotonicAttention(
        D, mode="recursive"
    ),
}


@pytest.mark.parametrize("name", sorted(ZERO_LENGTH))
def test_zero_length_memory_gives_zero_context_and_empty_weights(name):
    layer = ZERO_LENGTH[name]()
    empty = np.zeros((B, 0, D), "float32")
    context, weights, state = layer(QUERY, empty)
    assert to_np(weights).shape == (B, 0)
    np.testing.assert_array_equal(to_np(context), np.zeros((B, D)))
    for tensor in tree.flatten(state):
        assert to_np(tensor).shape == (B, 0)


RNN_ATTENTIONS = {
    "dot": ka.DotAttention,
    "multiplicative": ka.MultiplicativeAttention,
    "additive": lambda: ka.AdditiveAttention(4),
    "location": lambda: ka.LocationSensitiveAttention(
        4, filters=2, kernel_size=3
    ),
    "bahdanau_recursive": lambda: ka.BahdanauMonotonicAttention(
        4, mode="recursive"
    ),
    "luong_parallel": lambda: ka.LuongMonotonicAttention(D),
}


@pytest.mark.parametrize("name", sorted(RNN_ATTENTIONS))
def test_attention_rnn_over_a_zero_length_memory(name):
    targets = RNG.normal(size=(B, 2, D)).astype("float32")
    empty = np.zeros((B, 0, D), "float32")
    rnn = ka.AttentionRNN(
        ka.AttentionWrapper(
            keras.layers.SimpleRNNCell(D),
            RNN_ATTENTIONS[name](),
            output_attention=False,
        )
    )
    outputs, alignments = rnn(targets, empty)
    assert to_np(alignments).shape == (B, 2, 0)
    # The context is zero: the cell sees its inputs and zeros only.
    cell = ka.AttentionRNN(
        ka.AttentionWrapper(
            rnn.wrapper.cell, ka.DotAttention(), output_attention=False
        )
    )
    expected, _ = cell(targets, np.zeros((B, 1, D), "float32"),
                       memory_mask=np.zeros((B, 1), bool))
    np.testing.assert_allclose(to_np(outputs), to_np(expected), atol=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ka.AdditiveAttention(4),
        ka.MultiplicativeAttention,
        lambda: ka.LocationSensitiveAttention(4),
        lambda: ka.BahdanauMonotonicAttention(4),
    ],
)
def test_prepare_memory_of_an_unbuilt_layer_says_to_build_it(make):
    with pytest.raises(ValueError, match=r"is not built.*layer\.build\("):
        make().prepare_memory(MEMORY)


@pytest.mark.parametrize(
    "make", [ka.DotAttention, lambda: ka.LuongMonotonicAttention(D)]
)
def test_prepare_memory_builds_a_layer_whose_keys_fix_the_query(make):
    layer = make()
    prepared = layer.prepare_memory(MEMORY)
    assert layer.built
    reference = make()
    reference.build((B, D), (B, S, D))
    for weight, other in zip(layer.weights, reference.weights):
        other.assign(weight)
    step = {"alignment_state": prepared["alignment_state"]} if (
        layer.stateful
    ) else {}
    got = layer.attend(
        QUERY, prepared["memory"], prepared["keys"],
        value_mask=prepared["memory_mask"], **step,
    )
    want = reference(QUERY, MEMORY)
    for have, expected in zip(tree.flatten(got), tree.flatten(want)):
        np.testing.assert_allclose(to_np(have), to_np(expected), atol=1e-6)
