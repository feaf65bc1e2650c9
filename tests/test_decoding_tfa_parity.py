"""Our decoders reproduce TFA 0.23's on the same hand-set model.

The reference arrays were written by tests/parity/make_decoding_reference.py
with tensorflow-addons 0.23.0 (`BeamSearchDecoder` with
`length_penalty_weight` and `coverage_penalty_weight`, `BasicDecoder` with
`GreedyEmbeddingSampler`); this test needs no TFA.
"""

import os

import numpy as np
import pytest
from keras import ops

from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import greedy_decode
from tests.parity import decoding_model as m
from tests.test_decoding import np_

REFERENCE = np.load(
    os.path.join(os.path.dirname(__file__), "parity", "decoding_reference.npz")
)
LOGITS, ATTENTION = m.tables()


def step(tokens, state):
    """The TFA script's TableCell, with keras.ops."""
    index = ops.stack(
        [
            state["sentence"],
            tokens,
            ops.minimum(state["step"], m.STEPS - 1),
        ],
        axis=1,
    )
    flat = (index[:, 0] * m.VOCAB + index[:, 1]) * m.STEPS + index[:, 2]
    logits = ops.take(
        ops.reshape(ops.convert_to_tensor(LOGITS), (-1, m.VOCAB)), flat, 0
    )
    attention = ops.take(
        ops.reshape(ops.convert_to_tensor(ATTENTION), (-1, m.SOURCE)), flat, 0
    )
    return logits, {"sentence": state["sentence"], "step": state["step"] + 1}, (
        attention
    )


def initial_state():
    return {
        "sentence": ops.arange(m.BATCH, dtype="int32"),
        "step": ops.zeros((m.BATCH,), dtype="int32"),
    }


def assert_tokens_match(got, want, lengths):
    for index in np.ndindex(lengths.shape):
        n = lengths[index]
        np.testing.assert_array_equal(got[index][:n], want[index][:n])


@pytest.mark.parametrize("case", range(len(m.BEAM_CASES)))
def test_beam_search_with_tfa_convention_reproduces_tfa(case):
    alpha, beta, width = m.BEAM_CASES[case]
    out = beam_search_nbest(
        step, m.START, initial_state(), m.END, m.MAX_LENGTH, n_best=width,
        length_penalty=alpha, coverage_penalty=beta, convention="tfa",
        from_logits=True,
    )
    ref = {key: REFERENCE[f"beam{case}_{key}"] for key in
           ("tokens", "lengths", "scores", "log_probs")}
    np.testing.assert_array_equal(np_(out["lengths"]), ref["lengths"])
    assert_tokens_match(np_(out["tokens"]), ref["tokens"], ref["lengths"])
    np.testing.assert_allclose(
        np_(out["scores"]), ref["scores"], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        np_(out["log_probs"]), ref["log_probs"], rtol=1e-5, atol=1e-5
    )


def test_greedy_reproduces_tfa_basic_decoder():
    out = greedy_decode(step, m.START, initial_state(), m.END, m.MAX_LENGTH,
                        from_logits=True)
    lengths = REFERENCE["greedy_lengths"]
    np.testing.assert_array_equal(np_(out["lengths"]), lengths)
    assert_tokens_match(np_(out["tokens"]), REFERENCE["greedy_tokens"],
                        lengths)
    np.testing.assert_allclose(
        np_(out["log_probs"]), REFERENCE["greedy_log_probs"], rtol=1e-5
    )


def test_the_default_convention_differs_from_tfa_where_documented():
    # With a length penalty, TFA does not count the end token on the step
    # that produces it: some of these cases rank or score differently.
    differs = []
    for case, (alpha, beta, width) in enumerate(m.BEAM_CASES):
        out = beam_search_nbest(
            step, m.START, initial_state(), m.END, m.MAX_LENGTH,
            n_best=width, length_penalty=alpha, coverage_penalty=beta,
            from_logits=True,
        )
        same = np.allclose(np_(out["scores"]), REFERENCE[f"beam{case}_scores"],
                           rtol=1e-5, atol=1e-5)
        differs.append(not same)
        if alpha == 0.0 and beta == 0.0:
            assert same  # no penalty: both rank by log-probability
    assert any(differs)
