"""Tests of beam search's coverage penalty, TFA convention, n-best lists,
prefixes and zero length limits, against plain-Python references."""

import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import greedy_decode
from tests.test_decoding import END
from tests.test_decoding import START
from tests.test_decoding import ToyModel
from tests.test_decoding import np_
from tests.test_decoding import np_beam_search
from tests.test_decoding import np_coverage_penalty


def assert_beams_match(out, ref, b, pad):
    for i, (toks, n, logp, score, attn) in enumerate(ref):
        got = np_(out["tokens"])[b, i]
        np.testing.assert_array_equal(got[: len(toks)], toks)
        assert np.all(got[len(toks) :] == pad)
        assert np_(out["lengths"])[b, i] == n
        np.testing.assert_allclose(
            np_(out["log_probs"])[b, i], logp, rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            np_(out["scores"])[b, i], score, rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            np_(out["attention"])[b, i][:n], attn[:n], atol=1e-5
        )


@pytest.mark.parametrize(
    "seed, beam_width, alpha, beta, convention",
    [
        (0, 3, 0.6, 0.5, "default"),
        (1, 4, 0.0, 2.0, "default"),
        (2, 3, 1.0, 0.0, "tfa"),
        (3, 2, 0.6, 0.7, "tfa"),
        (4, 4, 1.5, 1.0, "tfa"),
    ],
)
def test_penalties_and_conventions_match_reference(
    seed, beam_width, alpha, beta, convention
):
    model = ToyModel(seed, batch_size=2, vocab_size=5, source_length=3)
    limits = [6, 4]
    options = dict(
        n_best=beam_width,
        length_penalty=alpha,
        coverage_penalty=beta,
        convention=convention,
        pad_token=2,
    )
    out = beam_search_nbest(
        model.step, START, model.initial_state(), END,
        ops.convert_to_tensor(limits), **options,
    )
    for b in range(2):
        ref = np_beam_search(
            model, b, START, END, limits[b], beam_width, alpha, 2,
            beta=beta, convention=convention,
        )
        if convention == "tfa":
            # As in TFA, finished hypotheses are re-scored while other
            # sentences of the batch decode on: decode each one alone.
            state = decoding.gather_state(
                model.initial_state(), ops.convert_to_tensor([b])
            )
            alone = beam_search_nbest(
                model.step, START, state, END, limits[b], **options
            )
            assert_beams_match(alone, ref, 0, pad=2)
        else:
            assert_beams_match(out, ref, b, pad=2)


def test_final_scores_hold_the_coverage_penalty_of_each_hypothesis():
    model = ToyModel(5, batch_size=3, vocab_size=6, source_length=4)
    alpha, beta = 0.6, 0.8
    out = beam_search_nbest(
        model.step, START, model.initial_state(), END, 7, n_best=4,
        length_penalty=alpha, coverage_penalty=beta,
    )
    lengths, attention = np_(out["lengths"]), np_(out["attention"])
    for b in range(3):
        for i in range(4):
            n = lengths[b, i]
            cp = np_coverage_penalty(attention[b, i, :n], beta)
            expected = np_(out["log_probs"])[b, i] / (
                ((5.0 + n) / 6.0) ** alpha
            ) + cp
            np.testing.assert_allclose(
                np_(out["scores"])[b, i], expected, rtol=1e-5, atol=1e-5
            )
        assert np.all(np.diff(np_(out["scores"])[b]) <= 1e-6)


# Tokens: 0 start, 1 end, 2 "a", 3 "b"; source length 2.
# From start: end 0.6, a 0.4. After a: end 0.9, b 0.1. After b: end.
# Attention: step 0 [0.9, 0.1], step 1 [0.1, 0.9].
# "end": log 0.6 = -0.51, but it covers the source as [0.9, 0.1]:
#   cp = log 0.9 + log 0.1 = -2.41 per unit of beta.
# "a end": log 0.36 = -1.02, coverage [1.0, 1.0], cp = 0.
def coverage_step(tokens, state):
    p = np.full((4, 4), 1e-6)
    p[0, [1, 2]] = [0.6, 0.4]
    p[2, [1, 3]] = [0.9, 0.1]
    p[3, 1] = p[1, 1] = 1.0
    table = ops.convert_to_tensor(np.log(p / p.sum(1, keepdims=True)))
    attention = ops.convert_to_tensor([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    steps = state["steps"]
    weights = ops.take(attention, ops.minimum(steps, 2), axis=0)
    return ops.take(table, tokens, axis=0), {"steps": steps + 1}, weights


@pytest.mark.parametrize("convention", ["default", "tfa"])
def test_coverage_penalty_changes_the_winner(convention):
    state = {"steps": ops.zeros((1,), dtype="int32")}

    def best(beta):
        out = beam_search_decode(
            coverage_step, START, state, END, 4, beam_width=2,
            length_penalty=0.0, coverage_penalty=beta, convention=convention,
        )
        n = int(np_(out["lengths"])[0])
        return list(np_(out["tokens"])[0, :n]), float(np_(out["scores"])[0])

    tokens, score = best(0.0)
    assert tokens == [END]
    np.testing.assert_allclose(score, np.log(0.6), rtol=1e-4)
    tokens, score = best(1.0)
    assert tokens == [2, END]
    np.testing.assert_allclose(score, np.log(0.36), rtol=1e-4)


def test_coverage_penalty_needs_attention():
    def no_attention(tokens, state):
        log_probs, state, _ = coverage_step(tokens, state)
        return log_probs, state, None

    state = {"steps": ops.zeros((1,), dtype="int32")}
    with pytest.raises(ValueError, match="coverage_penalty=1.0"):
        beam_search_decode(no_attention, START, state, END, 4,
                           coverage_penalty=1.0)
    with pytest.raises(ValueError, match="coverage_penalty"):
        beam_search_decode(coverage_step, START, state, END, 4,
                           coverage_penalty=-1.0)
    with pytest.raises(ValueError, match="convention"):
        beam_search_decode(coverage_step, START, state, END, 4,
                           convention="gnmt")


def test_coverage_penalty_function():
    coverage = ops.convert_to_tensor([[0.5, 2.0, 0.0], [1.0, 0.25, 0.1]])
    np.testing.assert_allclose(
        np_(decoding.coverage_penalty(coverage, 2.0)),
        [2 * np.log(0.5), 2 * (np.log(0.25) + np.log(0.1))],
        rtol=1e-6,
    )


# ----------------------------------------------------------------------
# n-best lists.


@pytest.mark.parametrize("n_best, beam_width", [(1, 3), (2, 3), (3, None)])
def test_nbest_first_is_the_beam_result(n_best, beam_width):
    model = ToyModel(6, batch_size=3, vocab_size=6, source_length=4)
    options = {"length_penalty": 0.6, "coverage_penalty": 0.3}
    width = beam_width or n_best
    beam = beam_search_decode(
        model.step, START, model.initial_state(), END, 7,
        beam_width=width, return_all_beams=True, **options,
    )
    nbest = beam_search_nbest(
        model.step, START, model.initial_state(), END, 7, n_best=n_best,
        beam_width=beam_width, **options,
    )
    assert tuple(np_(nbest["tokens"]).shape[:2]) == (3, n_best)
    assert tuple(np_(nbest["attention"]).shape[:2]) == (3, n_best)
    for key in ("tokens", "lengths", "scores", "log_probs", "attention"):
        np.testing.assert_allclose(np_(nbest[key])[:, 0], np_(beam[key]))
        np.testing.assert_allclose(
            np_(nbest[key]), np_(beam[f"beam_{key}"])[:, :n_best]
        )
    scores = np_(nbest["scores"])
    assert np.all(np.diff(scores, axis=1) <= 1e-6)


def test_nbest_bad_arguments():
    model = ToyModel(0, batch_size=2, vocab_size=4, source_length=3)
    state = model.initial_state()
    with pytest.raises(ValueError, match="n_best=3, beam_width=2"):
        beam_search_nbest(model.step, START, state, END, 5, 3, beam_width=2)
    with pytest.raises(ValueError, match="n_best=0"):
        beam_search_nbest(model.step, START, state, END, 5, 0)
    with pytest.raises(ValueError, match="return_all_beams"):
        beam_search_nbest(model.step, START, state, END, 5, 2,
                          return_all_beams=True)


# ----------------------------------------------------------------------
# Prefix-constrained decoding.


def np_forced_greedy(model, b, prefix, limit):
    """Greedy decoding of sentence `b` that starts with `prefix`."""
    state = model.np_initial_state(b)
    token, toks, logp = START, [], 0.0
    while len(toks) < limit:
        log_probs, state, _ = model.np_step(token, state)
        if len(toks) < len(prefix):
            token = prefix[len(toks)]
        else:
            token = int(np.argmax(log_probs))
        toks.append(token)
        logp += log_probs[token]
        if token == END:
            break
    return toks, logp


def np_rescore(model, b, toks):
    state, token, logp = model.np_initial_state(b), START, 0.0
    for v in toks:
        log_probs, state, _ = model.np_step(token, state)
        logp, token = logp + log_probs[v], v
    return logp


PREFIX = [[3, 4, 2], [5, 0, 0], [0, 0, 0]]
PREFIX_LENGTHS = [3, 1, 0]


def test_greedy_with_prefix_matches_reference():
    model = ToyModel(7, batch_size=3, vocab_size=6, source_length=4)
    out = greedy_decode(
        model.step, START, model.initial_state(), END, 8,
        prefix=ops.convert_to_tensor(PREFIX),
        prefix_lengths=ops.convert_to_tensor(PREFIX_LENGTHS),
    )
    for b in range(3):
        prefix = PREFIX[b][: PREFIX_LENGTHS[b]]
        toks, logp = np_forced_greedy(model, b, prefix, 8)
        n = int(np_(out["lengths"])[b])
        assert list(np_(out["tokens"])[b, :n]) == toks
        np.testing.assert_allclose(np_(out["log_probs"])[b], logp, rtol=1e-5)


def test_beam_with_prefix_starts_every_beam_with_it():
    model = ToyModel(8, batch_size=3, vocab_size=6, source_length=4)
    prefix = ops.convert_to_tensor(PREFIX)
    lengths = ops.convert_to_tensor(PREFIX_LENGTHS)
    out = beam_search_nbest(
        model.step, START, model.initial_state(), END, 8, n_best=3,
        prefix=prefix, prefix_lengths=lengths,
    )
    for b in range(3):
        p = PREFIX[b][: PREFIX_LENGTHS[b]]
        for i in range(3):
            n = int(np_(out["lengths"])[b, i])
            toks = list(np_(out["tokens"])[b, i, :n])
            assert toks[: len(p)] == p
            np.testing.assert_allclose(
                np_(out["log_probs"])[b, i], np_rescore(model, b, toks),
                rtol=1e-5, atol=1e-5,
            )
    greedy = greedy_decode(
        model.step, START, model.initial_state(), END, 8,
        prefix=prefix, prefix_lengths=lengths,
    )
    width_one = beam_search_decode(
        model.step, START, model.initial_state(), END, 8, beam_width=1,
        prefix=prefix, prefix_lengths=lengths,
    )
    np.testing.assert_array_equal(
        np_(width_one["tokens"]), np_(greedy["tokens"])
    )


def test_prefix_is_cut_by_the_length_limit_and_ends_at_the_end_token():
    model = ToyModel(9, batch_size=2, vocab_size=6, source_length=4)
    prefix = ops.convert_to_tensor([[3, 4, 5, 2], [2, END, 4, 4]])
    for decode in (greedy_decode, beam_search_decode):
        out = decode(model.step, START, model.initial_state(), END,
                     ops.convert_to_tensor([2, 6]), prefix=prefix)
        np.testing.assert_array_equal(np_(out["lengths"]), [2, 2])
        np.testing.assert_array_equal(
            np_(out["tokens"])[:, :2], [[3, 4], [2, END]]
        )


def test_prefix_bad_arguments():
    model = ToyModel(0, batch_size=2, vocab_size=4, source_length=3)
    state = model.initial_state()
    with pytest.raises(ValueError, match=r"prefix.shape=\(2,\)"):
        greedy_decode(model.step, START, state, END, 5,
                      prefix=ops.zeros((2,), dtype="int32"))
    with pytest.raises(ValueError, match="prefix.dtype=float32"):
        greedy_decode(model.step, START, state, END, 5,
                      prefix=ops.zeros((2, 2)))
    with pytest.raises(ValueError, match="prefix_lengths"):
        beam_search_decode(model.step, START, state, END, 5,
                           prefix_lengths=ops.zeros((2,), dtype="int32"))


# ----------------------------------------------------------------------
# Length limits of 0.


@pytest.mark.parametrize("decode", [greedy_decode, beam_search_decode])
def test_zero_length_limit_gives_an_empty_hypothesis(decode):
    model = ToyModel(10, batch_size=3, vocab_size=6, source_length=4)
    state = model.initial_state()
    for max_length in (0, ops.convert_to_tensor(0),
                       ops.convert_to_tensor([0, -2, 0])):
        out = decode(model.step, START, state, END, max_length)
        assert tuple(np_(out["tokens"]).shape) == (3, 0)
        assert tuple(np_(out["attention"]).shape)[:2] == (3, 0)
        np.testing.assert_array_equal(np_(out["lengths"]), [0, 0, 0])
        np.testing.assert_array_equal(np_(out["scores"]), [0.0, 0.0, 0.0])
    mixed = decode(model.step, START, state, END,
                   ops.convert_to_tensor([0, 5, 0]))
    alone = decode(model.step, START, state, END, 5)
    assert np_(mixed["lengths"])[[0, 2]].tolist() == [0, 0]
    assert np.all(np_(mixed["tokens"])[[0, 2]] == END)
    n = int(np_(alone["lengths"])[1])
    np.testing.assert_array_equal(
        np_(mixed["tokens"])[1, :n], np_(alone["tokens"])[1, :n]
    )
    np.testing.assert_allclose(
        np_(mixed["scores"])[1], np_(alone["scores"])[1], rtol=1e-6
    )


def test_default_convention_keeps_sentences_independent_with_coverage():
    model = ToyModel(11, batch_size=3, vocab_size=5, source_length=3)
    limits = ops.convert_to_tensor([6, 3, 4])
    options = dict(n_best=3, length_penalty=1.0, coverage_penalty=1.0)
    batch = beam_search_nbest(
        model.step, START, model.initial_state(), END, limits, **options
    )
    for b in range(3):
        index = ops.convert_to_tensor([b])
        alone = beam_search_nbest(
            model.step, START,
            decoding.gather_state(model.initial_state(), index), END,
            ops.take(limits, index), **options,
        )
        n = np_(alone["tokens"]).shape[-1]
        np.testing.assert_array_equal(
            np_(batch["tokens"])[b, :, :n], np_(alone["tokens"])[0]
        )
        np.testing.assert_allclose(
            np_(batch["scores"])[b], np_(alone["scores"])[0], rtol=1e-5
        )
