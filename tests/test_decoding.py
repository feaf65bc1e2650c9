"""Tests of the greedy and beam search decoders.

The step functions are toy models with hand-set or random transition tables
written with `keras.ops`, and a numpy twin of each, so every decode is
checked against an independent, plain-Python search.
"""

import math

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import tile_state


def np_(x):
    return None if x is None else ops.convert_to_numpy(x)


def np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ----------------------------------------------------------------------
# A toy model with history: the next-token distribution depends on the
# previous token (a per-sentence table) and on a decaying history of all
# tokens so far, and so does the attention. A decoder that fed a beam the
# state of another beam would get different tokens and weights.


class ToyModel:
    def __init__(self, seed, batch_size, vocab_size, source_length):
        rng = np.random.default_rng(seed)
        self.vocab_size = vocab_size
        self.source_length = source_length
        self.table = np_log_softmax(
            2.0 * rng.normal(size=(batch_size, vocab_size, vocab_size))
        ).astype("float32")
        self.mix = rng.normal(size=(source_length, vocab_size)).astype(
            "float32"
        )
        self.memory = rng.normal(size=(batch_size, source_length)).astype(
            "float32"
        )

    def initial_state(self):
        batch_size = self.table.shape[0]
        return {
            "table": ops.convert_to_tensor(self.table),
            "inner": (
                ops.zeros((batch_size, self.source_length)),
                ops.convert_to_tensor(self.memory),
            ),
        }

    def step(self, tokens, state):
        table = state["table"]
        history, memory = state["inner"]
        index = ops.reshape(tokens, (-1, 1, 1)) * ops.ones(
            (1, 1, self.vocab_size), dtype="int32"
        )
        row = ops.take_along_axis(table, index, axis=1)[:, 0]
        logits = row + ops.matmul(history, ops.convert_to_tensor(self.mix))
        history = 0.5 * history + ops.one_hot(
            tokens % self.source_length, self.source_length
        )
        attention = ops.softmax(history * memory, axis=-1)
        new_state = {"table": table, "inner": (history, memory)}
        return ops.log_softmax(logits, axis=-1), new_state, attention

    # numpy twin for one sentence: state = (b, history)
    def np_initial_state(self, b):
        return (b, np.zeros(self.source_length))

    def np_step(self, token, state):
        b, history = state
        logits = self.table[b, token] + history @ self.mix
        history = (
            0.5 * history
            + np.eye(self.source_length)[token % self.source_length]
        )
        attention = np_softmax(history * self.memory[b])
        return np_log_softmax(logits), (b, history), attention


def np_coverage_penalty(attentions, beta):
    """GNMT's cp from a hypothesis' attention rows (exact zeros: covered)."""
    coverage = np.sum(attentions, axis=0)
    coverage = np.where(coverage == 0.0, 1.0, coverage)
    return beta * np.sum(np.log(np.minimum(coverage, 1.0)))


def np_beam_search(
    model, b, start, end, limit, beam_width, alpha, pad, beta=0.0,
    convention="default",
):
    """Plain-Python beam search over one sentence (the reference).

    Ranks by `log P / lp(n) + cp`; `"default"`: `n` counts the end token,
    `cp` is added to complete hypotheses (ended now or before, or at the
    limit); `"tfa"`: the end token counts from the step after it, `cp` is
    added to hypotheses finished before this step.
    """

    def lp(n):
        return ((5.0 + n) / 6.0) ** alpha

    # hypothesis: (tokens, log_prob, state, finished, attentions, score)
    beams = [([], 0.0, model.np_initial_state(b), False, [], 0.0)]
    last = [start]
    while True:
        candidates = []
        for i, (toks, logp, state, done, attn, _) in enumerate(beams):
            if done:
                zero = np.zeros(model.source_length)
                n = toks.index(end) + 1 if end in toks else len(toks)
                score = logp / lp(n)
                if beta:
                    score += np_coverage_penalty(attn, beta)
                candidates.append(
                    (
                        (i, pad),
                        toks + [pad],
                        logp,
                        state,
                        True,
                        attn + [zero],
                        score,
                    )
                )
                continue
            log_probs, new_state, weights = model.np_step(last[i], state)
            for v in range(model.vocab_size):
                n = len(toks) + 1
                complete = v == end or n >= limit
                score_n = n - 1 if convention == "tfa" and v == end else n
                score = (logp + log_probs[v]) / lp(score_n)
                if beta and convention == "default" and complete:
                    score += np_coverage_penalty(attn + [weights], beta)
                candidates.append(
                    (
                        (i, v),
                        toks + [v],
                        logp + log_probs[v],
                        new_state,
                        complete,
                        attn + [weights],
                        score,
                    )
                )

        candidates.sort(key=lambda c: (-c[6], c[0]))
        chosen = candidates[:beam_width]
        beams = [c[1:] for c in chosen]
        last = [c[1][-1] for c in chosen]
        if all(c[4] for c in chosen):
            break
    results = []
    for toks, logp, _, _, attn, score in beams:
        n = toks.index(end) + 1 if end in toks else len(toks)
        results.append((toks, n, logp, score, np.stack(attn)))
    return results


def np_greedy(model, b, start, end, limit):
    state = model.np_initial_state(b)
    token, toks, logp, attn = start, [], 0.0, []
    while len(toks) < limit:
        log_probs, state, weights = model.np_step(token, state)
        token = int(np.argmax(log_probs))
        toks.append(token)
        logp += log_probs[token]
        attn.append(weights)
        if token == end:
            break
    return toks, logp, np.stack(attn)


START, END = 0, 1

# On JAX every eager decode traces and compiles its while loop (about a
# second each), so the property tests draw fewer examples there.
FAST_BACKEND = keras.backend.backend() in ("tensorflow", "torch")


def examples(n):
    return n if FAST_BACKEND else max(2, n // 3)


# ----------------------------------------------------------------------
# Greedy and beam search against the references.


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_matches_reference(seed):
    model = ToyModel(seed, batch_size=3, vocab_size=6, source_length=4)
    out = greedy_decode(
        model.step, START, model.initial_state(), END, max_length=7
    )
    tokens, lengths = np_(out["tokens"]), np_(out["lengths"])
    attention, scores = np_(out["attention"]), np_(out["scores"])
    assert tokens.shape[1] == lengths.max()
    for b in range(3):
        toks, logp, attn = np_greedy(model, b, START, END, 7)
        n = len(toks)
        assert lengths[b] == n
        np.testing.assert_array_equal(tokens[b, :n], toks)
        assert np.all(tokens[b, n:] == END)  # pad defaults to the end token
        np.testing.assert_allclose(scores[b], logp, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(attention[b, :n], attn, atol=1e-5)
        assert np.all(attention[b, n:] == 0.0)


@pytest.mark.parametrize(
    "seed, beam_width, alpha", [(0, 3, 0.6), (1, 4, 0.0), (2, 2, 1.0)]
)
def test_beam_search_matches_reference(seed, beam_width, alpha):
    model = ToyModel(seed, batch_size=2, vocab_size=5, source_length=3)
    limits = [6, 4]
    out = beam_search_decode(
        model.step,
        START,
        model.initial_state(),
        END,
        max_length=ops.convert_to_tensor(limits),
        beam_width=beam_width,
        length_penalty=alpha,
        pad_token=2,
        return_all_beams=True,
    )
    for b in range(2):
        ref = np_beam_search(
            model, b, START, END, limits[b], beam_width, alpha, pad=2
        )
        for i, (toks, n, logp, score, attn) in enumerate(ref):
            got = np_(out["beam_tokens"])[b, i]
            np.testing.assert_array_equal(got[: len(toks)], toks)
            assert np.all(got[len(toks) :] == 2)
            assert np_(out["beam_lengths"])[b, i] == n
            np.testing.assert_allclose(
                np_(out["beam_log_probs"])[b, i], logp, rtol=1e-5, atol=1e-5
            )
            np.testing.assert_allclose(
                np_(out["beam_scores"])[b, i], score, rtol=1e-5, atol=1e-5
            )
            got_attn = np_(out["beam_attention"])[b, i]
            np.testing.assert_allclose(got_attn[:n], attn[:n], atol=1e-5)
            assert np.all(got_attn[n:] == 0.0)
        best = ref[0]
        np.testing.assert_array_equal(
            np_(out["tokens"])[b, : best[1]], best[0][: best[1]]
        )
        np.testing.assert_allclose(
            np_(out["scores"])[b], best[3], rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            np_(out["attention"])[b], np_(out["beam_attention"])[b, 0]
        )


@settings(max_examples=examples(8), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    batch_size=st.integers(1, 3),
    limit=st.integers(1, 6),
)
def test_beam_width_one_equals_greedy(seed, batch_size, limit):
    model = ToyModel(seed, batch_size, vocab_size=5, source_length=3)
    greedy = greedy_decode(
        model.step, START, model.initial_state(), END, max_length=limit
    )
    beam = beam_search_decode(
        model.step,
        START,
        model.initial_state(),
        END,
        max_length=limit,
        beam_width=1,
        length_penalty=0.7,
    )
    np.testing.assert_array_equal(np_(beam["tokens"]), np_(greedy["tokens"]))
    np.testing.assert_array_equal(np_(beam["lengths"]), np_(greedy["lengths"]))
    np.testing.assert_allclose(
        np_(beam["log_probs"]), np_(greedy["scores"]), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        np_(beam["attention"]), np_(greedy["attention"]), atol=1e-6
    )
    penalty = ((5.0 + np_(greedy["lengths"])) / 6.0) ** 0.7
    np.testing.assert_allclose(
        np_(beam["scores"]), np_(greedy["scores"]) / penalty, rtol=1e-5
    )


# ----------------------------------------------------------------------
# A hand-set model where greedy decoding misses the best sequence.
#
# Tokens: 0 start, 1 end, 2 "a", 3 "b", 4 "c".
# From start: a 0.5, b 0.4, c 0.1.  After a: a, b, c, end 0.25 each.
# After b: end 0.9.  After c: end 1.0.
# Greedy: a (0.5) then a tie, best sequence probability <= 0.125.
# Beam (width 2) keeps b and finds "b end": 0.4 * 0.9 = 0.36.


def hand_set_table():
    p = np.full((5, 5), 1e-6)
    p[0, [2, 3, 4]] = [0.5, 0.4, 0.1]
    p[2, [1, 2, 3, 4]] = [0.25, 0.25, 0.25, 0.25]
    p[3, 1], p[3, 2] = 0.9, 0.1
    p[4, 1] = 1.0
    p[1, 1] = 1.0
    p /= p.sum(1, keepdims=True)
    return np.log(p).astype("float32")


def hand_set_step(tokens, state):
    table = ops.convert_to_tensor(hand_set_table())
    log_probs = ops.take(table, tokens, axis=0)
    # Attention on source position (number of steps so far) mod 2.
    steps = state["steps"] + 1
    attention = ops.one_hot(steps % 2, 2)
    return log_probs, {"steps": steps}, attention


def test_beam_search_finds_sequence_greedy_misses():
    state = {"steps": ops.zeros((1,), dtype="int32")}
    greedy = greedy_decode(hand_set_step, START, state, END, max_length=5)
    beam = beam_search_decode(
        hand_set_step,
        START,
        state,
        END,
        max_length=5,
        beam_width=2,
        length_penalty=0.0,
    )
    assert np_(greedy["tokens"])[0, 0] == 2
    assert np_(greedy["scores"])[0] < math.log(0.36)
    np.testing.assert_array_equal(np_(beam["tokens"]), [[3, 1]])
    np.testing.assert_array_equal(np_(beam["lengths"]), [2])
    np.testing.assert_allclose(
        np_(beam["scores"]), [math.log(0.4 * 0.9)], rtol=1e-4
    )
    np.testing.assert_allclose(
        np_(beam["attention"]), [[[0.0, 1.0], [1.0, 0.0]]]
    )
    # Exhaustive check: "b end" is the most probable sequence of all.
    table = hand_set_table()
    best = max((table[0, x] + table[x, 1], (x, 1)) for x in range(5))
    assert best[1] == (3, 1)


def test_length_penalty_prefers_longer_hypotheses():
    # From start: end 0.3 or a 0.7; after a: end 0.35, b 0.33, c 0.32;
    # after b or c: end. alpha = 0 picks the short "end" (0.3 beats 0.245,
    # 0.231 and 0.224); alpha = 2 divides by ((5 + n) / 6) ** 2 and picks
    # the longest, "a b end".
    p = np.full((5, 5), 1e-6)
    p[0, 1], p[0, 2] = 0.3, 0.7
    p[2, 1], p[2, 3], p[2, 4] = 0.35, 0.33, 0.32
    p[3, 1] = p[4, 1] = p[1, 1] = 1.0
    table = np.log(p / p.sum(1, keepdims=True)).astype("float32")

    def step(tokens, state):
        log_probs = ops.take(ops.convert_to_tensor(table), tokens, axis=0)
        return log_probs, state, None

    def exhaustive_best(alpha):
        best, best_seq = -np.inf, None
        for seq in np.ndindex(5, 5, 5):
            n = seq.index(END) + 1 if END in seq else 3
            prev, logp = START, 0.0
            for token in seq[:n]:
                logp, prev = logp + table[prev, token], token
            if logp / ((5.0 + n) / 6.0) ** alpha > best:
                best = logp / ((5.0 + n) / 6.0) ** alpha
                best_seq = list(seq[:n])
        return best_seq, best

    state = (ops.zeros((1, 1)),)
    for alpha, expected in ((0.0, [1]), (2.0, [2, 3, 1])):
        out = beam_search_decode(
            step, START, state, END, 3, beam_width=3, length_penalty=alpha
        )
        best_seq, best_score = exhaustive_best(alpha)
        assert best_seq == expected
        n = len(expected)
        assert np_(out["lengths"]).tolist() == [n]
        assert np_(out["tokens"])[0, :n].tolist() == expected
        assert np.all(np_(out["tokens"])[0, n:] == END)
        np.testing.assert_allclose(np_(out["scores"]), [best_score], rtol=1e-5)
        assert out["attention"] is None


# ----------------------------------------------------------------------
# Properties.


@settings(max_examples=examples(10), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    beam_width=st.integers(1, 4),
    limits=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    alpha=st.sampled_from([0.0, 0.6, 1.5]),
)
def test_every_hypothesis_ends_at_end_token_or_limit(
    seed, beam_width, limits, alpha
):
    model = ToyModel(seed, len(limits), vocab_size=4, source_length=3)
    out = beam_search_decode(
        model.step,
        START,
        model.initial_state(),
        END,
        max_length=ops.convert_to_tensor(limits, dtype="int32"),
        beam_width=beam_width,
        length_penalty=alpha,
        pad_token=3,
        return_all_beams=True,
    )
    tokens = np_(out["beam_tokens"])
    lengths = np_(out["beam_lengths"])
    scores = np_(out["beam_scores"])
    for b, limit in enumerate(limits):
        # Beams sorted best first, the best one returned.
        assert np.all(np.diff(scores[b]) <= 1e-6)
        np.testing.assert_array_equal(np_(out["tokens"])[b], tokens[b, 0])
        for i in range(beam_width):
            n = lengths[b, i]
            row = tokens[b, i]
            assert 1 <= n <= limit
            assert END not in row[: n - 1]
            assert row[n - 1] == END or n == limit
            assert np.all(row[n:] == 3)


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 10_000), beam_width=st.integers(1, 3))
def test_batch_entries_do_not_influence_one_another(seed, beam_width):
    model = ToyModel(seed, batch_size=3, vocab_size=5, source_length=3)
    limits = [5, 2, 4]
    together = beam_search_decode(
        model.step,
        START,
        model.initial_state(),
        END,
        max_length=ops.convert_to_tensor(limits),
        beam_width=beam_width,
    )
    for b in range(3):
        state = keras.tree.map_structure(
            lambda x: x[b : b + 1], model.initial_state()
        )
        alone = beam_search_decode(
            model.step,
            START,
            state,
            END,
            max_length=limits[b],
            beam_width=beam_width,
        )
        n = np_(alone["tokens"]).shape[1]
        np.testing.assert_array_equal(
            np_(together["tokens"])[b, :n], np_(alone["tokens"])[0]
        )
        assert np.all(np_(together["tokens"])[b, n:] == END)
        for key in ("lengths", "scores", "log_probs"):
            np.testing.assert_allclose(
                np_(together[key])[b], np_(alone[key])[0], rtol=1e-5
            )
        np.testing.assert_allclose(
            np_(together["attention"])[b, :n],
            np_(alone["attention"])[0],
            atol=1e-6,
        )


def test_decode_stops_when_all_sentences_ended():
    # Every sentence ends after 2 tokens: the outputs have 2 columns, not
    # max_length, and the step function ran 2 times.
    # From start: token 2 (1, 3, 4 at log-prob -5); after any other token:
    # the end token (the others at -30). The beams after step 1 are "2",
    # "1", "3", "4"; all end at step 2, scoring above any "2 x" (-30).
    calls = []

    def step(tokens, state):
        calls.append(1)
        table = np.full((5, 5), -30.0, dtype="float32")
        table[0, 1:] = [-5.0, 0.0, -5.0, -5.0]
        table[1:, 1] = 0.0
        return ops.take(ops.convert_to_tensor(table), tokens, 0), state, None

    state = [ops.zeros((2, 3))]
    for decode in (greedy_decode, beam_search_decode):
        calls.clear()
        out = decode(step, START, state, END, max_length=50)
        assert np_(out["tokens"]).tolist() == [[2, 1], [2, 1]]
        assert np_(out["lengths"]).tolist() == [2, 2]
        assert len(calls) == 2


def test_from_logits_applies_log_softmax():
    model = ToyModel(3, batch_size=2, vocab_size=5, source_length=3)

    def logits_step(tokens, state):
        log_probs, state, attention = model.step(tokens, state)
        return 3.0 + log_probs, state, attention  # shifted: not normalised

    for decode in (greedy_decode, beam_search_decode):
        plain = decode(model.step, START, model.initial_state(), END, 5)
        shifted = decode(
            logits_step,
            START,
            model.initial_state(),
            END,
            5,
            from_logits=True,
        )
        np.testing.assert_array_equal(
            np_(plain["tokens"]), np_(shifted["tokens"])
        )
        np.testing.assert_allclose(
            np_(plain["scores"]), np_(shifted["scores"]), rtol=1e-5
        )


# ----------------------------------------------------------------------
# State tiling.


def test_tile_state_repeats_every_leaf_per_sentence():
    state = {
        "memory": ops.convert_to_tensor(np.arange(12.0).reshape(2, 3, 2)),
        "inner": (ops.convert_to_tensor([[1], [2]]), [ops.ones((2,))]),
    }
    tiled = tile_state(state, 3)
    np.testing.assert_array_equal(
        np_(tiled["memory"]),
        np.repeat(np.arange(12.0).reshape(2, 3, 2), 3, axis=0),
    )
    np.testing.assert_array_equal(
        np_(tiled["inner"][0])[:, 0], [1, 1, 1, 2, 2, 2]
    )
    assert tuple(tiled["inner"][1][0].shape) == (6,)
    with pytest.raises(ValueError, match="multiplier"):
        tile_state(state, 0)


def test_beam_search_tiles_state_itself():
    seen = []

    def step(tokens, state):
        seen.append((tuple(tokens.shape), tuple(state["memory"].shape)))
        log_probs = ops.log_softmax(
            ops.matmul(state["memory"], ops.ones((3, 4))) * 0.0
            + ops.one_hot(tokens % 4, 4),
            axis=-1,
        )
        return log_probs, state, ops.softmax(state["memory"], axis=-1)

    state = {"memory": ops.ones((2, 3))}
    out = beam_search_decode(step, START, state, END, 3, beam_width=5)
    assert seen[0] == ((2,), (2, 3))  # first step before the beams differ
    assert all(s == ((10,), (10, 3)) for s in seen[1:])
    assert len(seen) > 1
    assert tuple(np_(out["attention"]).shape)[::2] == (2, 3)


# ----------------------------------------------------------------------
# Validation.


def test_bad_arguments_raise_value_error():
    model = ToyModel(0, batch_size=2, vocab_size=4, source_length=3)
    state = model.initial_state()
    with pytest.raises(ValueError, match="beam_width"):
        beam_search_decode(model.step, START, state, END, 5, beam_width=0)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search_decode(model.step, START, state, END, 5, length_penalty=-1)
    with pytest.raises(ValueError, match="max_length"):
        greedy_decode(model.step, START, state, END, max_length=-1)
    with pytest.raises(ValueError, match="max_length"):
        greedy_decode(model.step, START, state, END, max_length=2.5)
    with pytest.raises(ValueError, match=r"max_length.shape=\(2, 1\)"):
        greedy_decode(
            model.step, START, state, END, ops.ones((2, 1), dtype="int32")
        )
    with pytest.raises(ValueError, match=r"start_tokens.shape=\(2, 1\)"):
        greedy_decode(
            model.step, ops.zeros((2, 1), dtype="int32"), state, END, 5
        )
    with pytest.raises(ValueError, match="start_tokens.dtype"):
        greedy_decode(model.step, ops.zeros((2,)), state, END, 5)
    with pytest.raises(ValueError, match=r"initial_state.*shape=\(3, 4\)"):
        greedy_decode(
            model.step,
            ops.zeros((2,), dtype="int32"),
            {"x": ops.zeros((3, 4))},
            END,
            5,
        )

    for decode in (greedy_decode, beam_search_decode):
        with pytest.raises(ValueError, match=r"end_token=4, log_probs.shape"):
            decode(model.step, START, state, 4, 5)
        with pytest.raises(ValueError, match=r"pad_token=-1"):
            decode(model.step, START, state, END, 5, pad_token=-1)

    def bad_step(tokens, state):
        return ops.zeros((4,)), state, None

    with pytest.raises(ValueError, match=r"log_probs.shape=\(4,\)"):
        greedy_decode(bad_step, START, state, END, 5)

    def list_state(tokens, state):
        log_probs, new_state, attention = model.step(tokens, state)
        return (
            log_probs,
            {"table": new_state["table"], "inner": list(new_state["inner"])},
            attention,
        )

    # A list for a tuple is repacked; a missing tensor is an error.
    out = greedy_decode(list_state, START, state, END, 3)
    np.testing.assert_array_equal(
        np_(out["tokens"]),
        np_(greedy_decode(model.step, START, state, END, 3)["tokens"]),
    )

    def lost_tensor(tokens, state):
        log_probs, new_state, attention = model.step(tokens, state)
        return log_probs, {"table": new_state["table"]}, attention

    with pytest.raises(ValueError, match=r"structure of its state.*\(3 "):
        beam_search_decode(lost_tensor, START, state, END, 5)

    def two_outputs(tokens, state):
        return ops.zeros((2, 4)), state

    with pytest.raises(ValueError, match="must return a tuple"):
        beam_search_decode(two_outputs, START, state, END, 5)


def test_length_penalty_function():
    lengths = ops.convert_to_tensor([1, 7], dtype="int32")
    np.testing.assert_allclose(
        np_(decoding.length_penalty(lengths, 0.6)),
        [1.0, 2.0**0.6],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        np_(decoding.length_penalty(lengths, 0.0)), [1.0, 1.0]
    )


# ----------------------------------------------------------------------
# In the graph: tf.function and SavedModel (TensorFlow backend).


@pytest.mark.tf_only
def test_decoders_in_tf_function_with_dynamic_shapes():
    import tensorflow as tf

    model = ToyModel(5, batch_size=3, vocab_size=6, source_length=4)
    eager = {
        "greedy": greedy_decode(
            model.step, START, model.initial_state(), END, [6, 2, 4]
        ),
        "beam": beam_search_decode(
            model.step, START, model.initial_state(), END, [6, 2, 4], 3
        ),
    }

    spec = tf.TensorSpec((None, None), tf.float32)

    @tf.function(
        input_signature=[
            tf.TensorSpec((None, None, None), tf.float32),
            spec,
            spec,
            tf.TensorSpec((None,), tf.int32),
        ]
    )
    def decode(table, history, memory, limits):
        state = {"table": table, "inner": (history, memory)}
        start = tf.zeros_like(limits)
        return {
            "greedy": greedy_decode(model.step, start, state, END, limits),
            "beam": beam_search_decode(
                model.step, start, state, END, limits, 3
            ),
        }

    state = model.initial_state()
    graph = decode(state["table"], *state["inner"], tf.constant([6, 2, 4]))
    for name in ("greedy", "beam"):
        for key in ("tokens", "lengths", "scores", "attention"):
            np.testing.assert_allclose(
                np_(graph[name][key]), np_(eager[name][key]), atol=1e-6
            )


@pytest.mark.tf_only
def test_beam_width_as_a_graph_input():
    import tensorflow as tf

    model = ToyModel(6, batch_size=2, vocab_size=5, source_length=3)

    @tf.function(input_signature=[tf.TensorSpec((), tf.int32)])
    def decode(beam_width):
        return beam_search_decode(
            model.step,
            START,
            model.initial_state(),
            END,
            6,
            beam_width=beam_width,
            return_all_beams=True,
        )

    for width in (1, 2, 3):
        graph = decode(tf.constant(width))
        eager = beam_search_decode(
            model.step,
            START,
            model.initial_state(),
            END,
            6,
            beam_width=width,
            return_all_beams=True,
        )
        assert graph["beam_tokens"].shape[1] == width
        for key in ("beam_tokens", "beam_scores", "tokens", "attention"):
            np.testing.assert_allclose(
                np_(graph[key]), np_(eager[key]), rtol=1e-6
            )
    with pytest.raises(ValueError, match=r"beam_width.shape=\(2,\)"):
        beam_search_decode(
            model.step,
            START,
            model.initial_state(),
            END,
            6,
            beam_width=tf.constant([1, 2]),
        )


@pytest.mark.tf_only
def test_decoders_export_to_saved_model(tmp_path):
    import tensorflow as tf

    table = hand_set_table()

    class Translator(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.Variable(table)

        def step(self, tokens, state):
            log_probs = ops.take(self.table, tokens, axis=0)
            steps = state["steps"] + 1
            return log_probs, {"steps": steps}, ops.one_hot(steps % 2, 2)

        @tf.function(input_signature=[tf.TensorSpec((None,), tf.int32)])
        def greedy(self, max_length):
            state = {"steps": tf.zeros_like(max_length)}
            out = greedy_decode(self.step, 0, state, END, max_length)
            return {k: out[k] for k in ("tokens", "lengths", "attention")}

        @tf.function(
            input_signature=[
                tf.TensorSpec((None,), tf.int32),
                tf.TensorSpec((), tf.int32),
            ]
        )
        def beam(self, max_length, beam_width):
            state = {"steps": tf.zeros_like(max_length)}
            out = beam_search_decode(
                self.step,
                0,
                state,
                END,
                max_length,
                beam_width,
                length_penalty=0.0,
            )
            return {k: out[k] for k in ("tokens", "lengths", "attention")}

    path = str(tmp_path / "translator")
    module = Translator()
    # Only standard TensorFlow ops: no XLA op for the server to lack.
    for function in (module.greedy, module.beam):
        graph = function.get_concrete_function().graph
        op_types = {op.type for op in graph.get_operations()}
        for inner in graph._functions.values():
            op_types |= {node.op for node in inner.definition.node_def}
        assert "StatelessWhile" in op_types or "While" in op_types
        assert not [op for op in op_types if op.startswith("Xla")]
    tf.saved_model.save(
        module,
        path,
        signatures={"greedy": module.greedy, "beam": module.beam},
    )
    del module
    loaded = tf.saved_model.load(path)
    limits = tf.constant([5, 5])
    beam = loaded.beam(limits, tf.constant(2))
    np.testing.assert_array_equal(beam["tokens"].numpy(), [[3, 1], [3, 1]])
    np.testing.assert_array_equal(beam["lengths"].numpy(), [2, 2])
    np.testing.assert_allclose(
        beam["attention"].numpy()[0], [[0.0, 1.0], [1.0, 0.0]]
    )
    greedy = loaded.greedy(limits)
    assert greedy["tokens"].numpy()[0, 0] == 2
    assert greedy["tokens"].numpy().shape[1] <= 5
    served = loaded.signatures["beam"](
        max_length=tf.constant([1, 5]), beam_width=tf.constant(2)
    )
    np.testing.assert_array_equal(served["lengths"].numpy(), [1, 2])
    np.testing.assert_array_equal(served["tokens"].numpy()[1], [3, 1])
    # Width 1 is greedy: it misses "b end".
    served = loaded.signatures["beam"](
        max_length=tf.constant([5]), beam_width=tf.constant(1)
    )
    assert served["tokens"].numpy()[0, 0] == 2


@pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="needs the JAX backend"
)
def test_decoders_under_jax_jit():
    import jax

    model = ToyModel(4, batch_size=3, vocab_size=6, source_length=4)
    for decode, kwargs in (
        (greedy_decode, {}),
        (beam_search_decode, {"beam_width": 3}),
    ):
        jitted = jax.jit(
            lambda state: decode(model.step, START, state, END, 7, **kwargs)
        )(model.initial_state())
        eager = decode(
            model.step, START, model.initial_state(), END, 7, **kwargs
        )
        n = np_(eager["tokens"]).shape[1]
        # Under jit the outputs keep max_length columns.
        assert np_(jitted["tokens"]).shape[1] == 7
        np.testing.assert_array_equal(
            np_(jitted["tokens"])[:, :n], np_(eager["tokens"])
        )
        assert np.all(np_(jitted["tokens"])[:, n:] == END)
        np.testing.assert_allclose(
            np_(jitted["scores"]), np_(eager["scores"]), rtol=1e-5
        )
