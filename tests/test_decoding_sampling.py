"""Tests of sampling decoding, ensembles and unknown-word replacement."""

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import ensemble_state
from keras_attention.decoding import ensemble_step
from keras_attention.decoding import filter_logits
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import replace_unknown
from keras_attention.decoding import sample_decode
from keras_attention.decoding import unknown_source_positions
from tests.test_decoding import END
from tests.test_decoding import START
from tests.test_decoding import ToyModel
from tests.test_decoding import examples
from tests.test_decoding import np_

# One step from any token: end 0.05, then 0.4, 0.3, 0.15, 0.1.
P = np.array([0.05, 0.4, 0.3, 0.15, 0.1])
ROWS = 4000


def fixed_step(tokens, state):
    log_probs = ops.log(ops.convert_to_tensor(P, dtype="float32"))
    log_probs = ops.zeros((ops.shape(tokens)[0], 1)) + log_probs[None]
    return log_probs, state, None


def one_step_counts(**kwargs):
    state = {"x": ops.zeros((ROWS, 1))}
    out = sample_decode(fixed_step, 1, state, 0, 1, **kwargs)
    tokens = np_(out["tokens"])[:, 0]
    np.testing.assert_allclose(
        np_(out["log_probs"]), np.log(P[tokens]), rtol=1e-5
    )
    return np.bincount(tokens, minlength=len(P)) / ROWS


def test_sampling_draws_from_the_model_distribution():
    np.testing.assert_allclose(one_step_counts(seed=1), P, atol=0.03)


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_temperature_reshapes_the_distribution(temperature):
    expected = P ** (1 / temperature)
    expected /= expected.sum()
    np.testing.assert_allclose(
        one_step_counts(temperature=temperature, seed=2), expected, atol=0.03
    )


def test_top_k_and_top_p_keep_only_their_tokens():
    counts = one_step_counts(top_k=2, seed=3)
    assert np.all(counts[[0, 3, 4]] == 0)
    np.testing.assert_allclose(counts[[1, 2]], [4 / 7, 3 / 7], atol=0.03)
    # Nucleus 0.65: 0.4 + 0.3 (0.4 alone is short of it).
    counts = one_step_counts(top_p=0.65, seed=4)
    assert np.all(counts[[0, 3, 4]] == 0)
    np.testing.assert_allclose(counts[[1, 2]], [4 / 7, 3 / 7], atol=0.03)
    counts = one_step_counts(top_p=0.75, seed=5)
    assert np.all(counts[[0, 4]] == 0)
    np.testing.assert_allclose(
        counts[[1, 2, 3]], np.array([0.4, 0.3, 0.15]) / 0.85, atol=0.03
    )
    # Top-p acts on the top-k distribution: 0.4 / 0.85 = 0.47 >= 0.45.
    counts = one_step_counts(top_k=3, top_p=0.45, seed=6)
    assert counts[1] == 1.0


def test_filter_logits_against_numpy():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 9)).astype("float32")
    got = np_(filter_logits(ops.convert_to_tensor(logits), 0.7, 4, 0.6))
    for row, kept in zip(logits / 0.7, got > -1e8):
        order = np.argsort(-row)[:4]
        probs = np.exp(row[order] - row[order].max())
        probs /= probs.sum()
        before = np.cumsum(probs) - probs
        nucleus = set(order[before < 0.6])
        assert set(np.flatnonzero(kept)) == nucleus


@pytest.mark.parametrize("scale", [0.2, 3.0])
def test_top_p_alone_on_a_large_vocabulary_against_numpy(scale):
    # Scale 3: the nucleus lies among the 64 most probable tokens, which
    # are the only ones sorted; scale 0.2: a flat distribution, whose
    # nucleus needs the sort of the whole vocabulary.
    rng = np.random.default_rng(1)
    logits = (scale * rng.normal(size=(5, 500))).astype("float32")
    got = np_(filter_logits(ops.convert_to_tensor(logits), top_p=0.8))
    for row, kept in zip(logits, got > -1e8):
        order = np.argsort(-row)
        probs = np.exp(row[order] - row.max())
        probs /= probs.sum()
        before = np.cumsum(probs) - probs
        assert set(np.flatnonzero(kept)) == set(order[before < 0.8])
    nucleus_size = (got > -1e8).sum(-1).max()
    assert nucleus_size > 64 if scale < 1 else nucleus_size < 64


def rescore(model, b, tokens):
    """The log-probabilities of every step of `tokens` under `model`."""
    state, token, rows = model.np_initial_state(b), START, []
    for v in tokens:
        log_probs, state, _ = model.np_step(token, state)
        rows.append(log_probs)
        token = v
    return np.array(rows)


@settings(max_examples=examples(8), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    top_k=st.integers(1, 4),
    top_p=st.floats(0.05, 1.0),
)
def test_samples_never_leave_top_k_or_the_nucleus(seed, top_k, top_p):
    model = ToyModel(seed, batch_size=3, vocab_size=6, source_length=4)
    for options in ({"top_k": top_k}, {"top_p": top_p}):
        out = sample_decode(model.step, START, model.initial_state(), END,
                            8, seed=seed, **options)
        for b in range(3):
            n = int(np_(out["lengths"])[b])
            tokens = np_(out["tokens"])[b, :n]
            rows = rescore(model, b, tokens)
            np.testing.assert_allclose(
                np_(out["log_probs"])[b],
                rows[np.arange(n), tokens].sum(), rtol=1e-4, atol=1e-4,
            )
            for row, v in zip(rows, tokens):
                order = np.argsort(-row)
                if "top_k" in options:
                    assert row[v] >= row[order[top_k - 1]] - 1e-6
                else:
                    p = np.exp(row[order])
                    before = np.cumsum(p) - p
                    assert v in set(order[before < top_p + 1e-6])


@pytest.mark.parametrize("temperature", [0.0, 1e-4])
def test_zero_temperature_is_greedy(temperature):
    model = ToyModel(12, batch_size=4, vocab_size=6, source_length=4)
    greedy = greedy_decode(model.step, START, model.initial_state(), END, 8)
    sampled = sample_decode(model.step, START, model.initial_state(), END,
                            8, temperature=temperature, seed=0)
    for key in ("tokens", "lengths"):
        np.testing.assert_array_equal(np_(sampled[key]), np_(greedy[key]))
    np.testing.assert_allclose(
        np_(sampled["scores"]), np_(greedy["scores"]), rtol=1e-5
    )


def test_same_seed_same_output():
    model = ToyModel(13, batch_size=64, vocab_size=6, source_length=4)

    def draw(seed):
        return np_(sample_decode(model.step, START, model.initial_state(),
                                 END, 8, seed=seed)["tokens"])

    np.testing.assert_array_equal(draw(7), draw(7))
    assert not np.array_equal(draw(7), draw(8))
    generator = keras.random.SeedGenerator(3)
    first, second = draw(generator), draw(generator)
    assert not np.array_equal(first, second)
    replay = keras.random.SeedGenerator(3)
    np.testing.assert_array_equal(draw(replay), first)


def test_sampling_with_a_prefix_and_bad_arguments():
    model = ToyModel(14, batch_size=2, vocab_size=6, source_length=4)
    state = model.initial_state()
    out = sample_decode(model.step, START, state, END, 6, seed=0,
                        prefix=ops.convert_to_tensor([[4, 3], [2, 2]]),
                        prefix_lengths=ops.convert_to_tensor([2, 1]))
    np.testing.assert_array_equal(np_(out["tokens"])[0, :2], [4, 3])
    assert np_(out["tokens"])[1, 0] == 2
    for bad in ({"temperature": -1.0}, {"top_k": 0}, {"top_p": 0.0},
                {"top_p": 1.5}):
        with pytest.raises(ValueError, match=list(bad)[0]):
            sample_decode(model.step, START, state, END, 6, **bad)


# ----------------------------------------------------------------------
# Ensembles.


def test_ensemble_averages_probabilities():
    models = [ToyModel(s, batch_size=2, vocab_size=5, source_length=3)
              for s in (20, 21, 22)]
    step = ensemble_step([m.step for m in models])
    state = ensemble_state(*[m.initial_state() for m in models])
    tokens = ops.convert_to_tensor([3, 4], dtype="int32")
    log_probs, new_state, attention = step(tokens, state)
    expected = np.log(np.mean(
        [np.exp(np_(m.step(tokens, m.initial_state())[0])) for m in models],
        axis=0,
    ))
    np.testing.assert_allclose(np_(log_probs), expected, rtol=1e-5,
                               atol=1e-6)
    assert isinstance(new_state, tuple) and len(new_state) == 3
    np.testing.assert_allclose(
        np_(attention),
        np.mean([np_(m.step(tokens, m.initial_state())[2])
                 for m in models], axis=0),
        rtol=1e-6,
    )


def np_ensemble_greedy(models, b, limit):
    states = [m.np_initial_state(b) for m in models]
    token, toks, logp = START, [], 0.0
    while len(toks) < limit:
        steps = [m.np_step(token, s) for m, s in zip(models, states)]
        states = [s[1] for s in steps]
        mean = np.log(np.mean([np.exp(s[0]) for s in steps], axis=0))
        token = int(np.argmax(mean))
        toks.append(token)
        logp += mean[token]
        if token == END:
            break
    return toks, logp


def test_ensemble_decodes_like_the_numpy_ensemble():
    models = [ToyModel(s, batch_size=3, vocab_size=6, source_length=4)
              for s in (30, 31)]
    step = ensemble_step([m.step for m in models])
    state = ensemble_state(*[m.initial_state() for m in models])
    out = greedy_decode(step, START, state, END, 7)
    for b in range(3):
        toks, logp = np_ensemble_greedy(models, b, 7)
        n = int(np_(out["lengths"])[b])
        assert list(np_(out["tokens"])[b, :n]) == toks
        np.testing.assert_allclose(np_(out["log_probs"])[b], logp, rtol=1e-5)
    # Beam search re-gathers every member's nested state.
    beam = beam_search_decode(step, START, state, END, 7, beam_width=1,
                              length_penalty=0.0)
    np.testing.assert_array_equal(np_(beam["tokens"]), np_(out["tokens"]))
    assert beam_search_decode(step, START, state, END, 7,
                              beam_width=3)["tokens"] is not None


def test_ensemble_of_logits_and_of_one():
    model = ToyModel(40, batch_size=2, vocab_size=5, source_length=3)
    tokens = ops.convert_to_tensor([0, 2], dtype="int32")
    alone = np_(model.step(tokens, model.initial_state())[0])
    one = ensemble_step([model.step])(tokens, (model.initial_state(),))[0]
    np.testing.assert_allclose(np_(one), alone, rtol=1e-5, atol=1e-6)

    def logits_step(tokens, state):
        log_probs, state, attention = model.step(tokens, state)
        return log_probs + 3.0, state, attention

    shifted = ensemble_step([logits_step], from_logits=True)
    np.testing.assert_allclose(
        np_(shifted(tokens, (model.initial_state(),))[0]), alone, rtol=1e-5,
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="step_fns"):
        ensemble_step([])
    with pytest.raises(ValueError, match="tuple of 1 states"):
        ensemble_step([model.step])(tokens, model.initial_state())


# ----------------------------------------------------------------------
# Unknown-word replacement.

UNK = 3


def test_replace_unknown_copies_the_most_attended_source_token():
    target = ops.convert_to_tensor([[5, UNK, 6, UNK], [UNK, 7, 1, 1]])
    attention = ops.convert_to_tensor([
        [[0.7, 0.2, 0.1], [0.1, 0.2, 0.7], [1, 0, 0], [0.2, 0.6, 0.2]],
        [[0.1, 0.1, 0.8], [1, 0, 0], [0, 0, 0], [0, 0, 0]],
    ])
    source = ops.convert_to_tensor([[10, 11, 12], [20, 21, 22]])
    out = replace_unknown(target, attention, source, UNK)
    np.testing.assert_array_equal(np_(out), [[5, 12, 6, 11], [22, 7, 1, 1]])
    # The padded last source position of sentence 1 is never copied.
    masked = replace_unknown(target, attention, source, UNK,
                             source_mask=ops.convert_to_tensor(
                                 [[True] * 3, [True, True, False]]))
    np.testing.assert_array_equal(np_(masked)[1], [20, 7, 1, 1])


def test_replace_unknown_against_numpy_and_bad_shapes():
    rng = np.random.default_rng(1)
    target = rng.integers(0, 6, size=(4, 7))
    attention = rng.random(size=(4, 7, 5)).astype("float32")
    source = rng.integers(10, 20, size=(4, 5))
    expected = np.where(
        target == UNK,
        np.take_along_axis(source, attention.argmax(-1), axis=1),
        target,
    )
    got = replace_unknown(ops.convert_to_tensor(target),
                          ops.convert_to_tensor(attention),
                          ops.convert_to_tensor(source), UNK)
    np.testing.assert_array_equal(np_(got), expected)
    with pytest.raises(ValueError, match=r"attention.shape=\(4, 7\)"):
        replace_unknown(target, attention[..., 0], source, UNK)
    with pytest.raises(ValueError, match=r"source_tokens.shape=\(4,\)"):
        replace_unknown(target, attention, source[:, 0], UNK)
    positions = unknown_source_positions(ops.convert_to_tensor(target),
                                         ops.convert_to_tensor(attention),
                                         UNK)
    np.testing.assert_array_equal(
        np_(positions), np.where(target == UNK, attention.argmax(-1), -1)
    )

