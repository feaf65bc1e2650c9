"""The fused step-wise decoder with the monotonic scores (Bahdanau and
Luong energies, "parallel" mode), whose alignment goes from step to step.

Against the generic loop of `AttentionRNN` (`fused=False`), same weights
(the score bias among them), same inputs: outputs, alignments, the final
states (the alignment included) and the gradients of the inputs, the
memory, the initial cell state, the initial alignment and every weight
agree, with source masks (padding in the middle of the batch, a row with
nothing to attend), target padding, mixed precision, choosing
probabilities near 0 and 1 (the clips of the closed form active) and
unknown lengths in a `tf.function`; the fused loop runs exactly where
`fuses` says (not "recursive" or "hard" mode, not sigmoid noise in
training).
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from tests.layer_harness import to_np
from tests.test_rnn_fused import assert_keras_round_trip
from tests.test_rnn_fused import assert_mixed_close
from tests.test_rnn_fused_cells_scores import SOURCE_MASK
from tests.test_rnn_fused_cells_scores import TARGET_MASK
from tests.test_rnn_fused_cells_scores import D, U
from tests.test_rnn_fused_cells_scores import _data
from tests.test_rnn_fused_cells_scores import _decoder
from tests.test_rnn_fused_cells_scores import assert_traces_with_unknown_lengths
from tests.test_rnn_fused_location import assert_same_as_generic
from tests.test_rnn_fused_location import initial_alignment_state

CASES = {
    "bahdanau_lstm": dict(
        attention=("bahdanau", dict(units=4, score_bias_init=-0.5)),
    ),
    "bahdanau_normed_gru_no_layer": dict(
        cell="gru", layer_size=None,
        attention=("bahdanau", dict(units=4, normalize=True)),
    ),
    "luong_scaled_lstm_cell_output": dict(
        attention=("luong", dict(units=U, scale=True)),
        output_attention=False,
    ),
}


def _monotonic_decoder(case, dtype=None, bias=None):
    kwargs = dict(CASES[case])
    kind, options = kwargs.pop("attention")
    layer = (keras_attention.BahdanauMonotonicAttention if kind == "bahdanau"
             else keras_attention.LuongMonotonicAttention)
    decoder = _decoder(attention=layer(**options, dtype=dtype), dtype=dtype,
                       **kwargs)
    if bias is not None:
        decoder.wrapper.attention.score_bias.assign(bias)
    return decoder


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_matches_generic(case):
    decoder = _monotonic_decoder(case)
    assert decoder.fuses()
    assert any("score_bias" in w.path for w in decoder.trainable_weights)
    assert_same_as_generic(decoder)


@pytest.mark.parametrize("bias", [-30.0, 30.0])
def test_probabilities_near_zero_and_one(bias):
    """A score bias of -30 (p about 1e-13: the alignment runs out and the
    clip of the divisor is active) or +30 (p rounds to 1 in float32, the
    clip of `1 - p` is active): the same values and gradients."""
    decoder = _monotonic_decoder("bahdanau_lstm", bias=bias)
    assert_same_as_generic(decoder)


def test_from_a_given_alignment():
    """A previous alignment that is not one-hot, 1e6 at masked positions:
    the same results and gradients as the generic loop's, its gradient
    zero at masked positions."""
    decoder = _monotonic_decoder("bahdanau_lstm")
    state = initial_alignment_state(decoder)
    assert_same_as_generic(decoder, state)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_close_to_float32(policy):
    reference = _monotonic_decoder("bahdanau_lstm")
    decoder = _monotonic_decoder("bahdanau_lstm", dtype=policy)
    decoder.set_weights(reference.get_weights())
    assert decoder.fuses()
    data = [ops.convert_to_tensor(t) for t in _data(reference)]
    assert_mixed_close(decoder, reference, data, TARGET_MASK, SOURCE_MASK)


def test_where_it_fuses():
    def decoder(**options):
        return keras_attention.AttentionRNN(keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(U),
            keras_attention.BahdanauMonotonicAttention(4, **options),
        ))

    assert decoder().fuses(training=True)
    for mode in ("recursive", "hard"):
        assert not decoder(mode=mode).fuses()
    noisy = decoder(sigmoid_noise=1.0)
    assert noisy.fuses(training=False) and not noisy.fuses(training=True)
    assert not decoder(dropout=0.2).fuses(training=True)


def test_keras_round_trip(tmp_path):
    assert_keras_round_trip(
        keras.layers.LSTMCell(U),
        keras_attention.LuongMonotonicAttention(U, scale=True),
        D,
        tmp_path,
    )


@pytest.mark.tf_only
def test_gradients_trace_with_unknown_lengths():
    """The alignment state and the reverse cumulative sums."""
    assert_traces_with_unknown_lengths(_monotonic_decoder("bahdanau_lstm"))


def test_zero_length_memory():
    """A memory of no position: zero weights and context, the same final
    states as the generic loop."""
    decoder = _monotonic_decoder("bahdanau_lstm")
    x, _, *cell_state = _data(decoder)
    memory = np.zeros((x.shape[0], 0, D), "float32")
    results = []
    for fused in ("auto", False):
        decoder.fused = fused
        results.append(decoder(x, memory, initial_state=cell_state,
                               inputs_mask=TARGET_MASK))
    for got, want in zip(keras.tree.flatten(results[0]),
                         keras.tree.flatten(results[1])):
        np.testing.assert_allclose(to_np(got), to_np(want), atol=1e-6)
    assert tuple(results[0][2]["alignment_state"].shape) == (x.shape[0], 0)
