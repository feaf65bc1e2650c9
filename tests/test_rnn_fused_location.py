"""The fused step-wise decoder with the location-sensitive score, whose
alignment state (the previous weights and their running sum) goes from
step to step.

Against the generic loop of `AttentionRNN` (`fused=False`), same weights,
same inputs: outputs, alignments, the final states (the alignment state
included) and the gradients of the inputs, the memory, the initial cell
state, the initial alignment state and every weight (the location kernel
and projection among them) agree, with source masks (padding in the middle
of the batch, a row with nothing to attend), target padding, mixed
precision, unknown lengths in a `tf.function` and a `.keras` round trip.
Tiny sizes, few cases: each compiles on JAX.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention.rnn import loops
from keras_attention.rnn.fused_decoder import fused_decode
from tests.layer_harness import gradients
from tests.layer_harness import to_np
from tests.test_rnn_fused import assert_keras_round_trip
from tests.test_rnn_fused import assert_mixed_close
from tests.test_rnn_fused_cells_scores import SOURCE_MASK
from tests.test_rnn_fused_cells_scores import TARGET_MASK
from tests.test_rnn_fused_cells_scores import B, D, S, T, U
from tests.test_rnn_fused_cells_scores import _data
from tests.test_rnn_fused_cells_scores import _decoder
from tests.test_rnn_fused_cells_scores import assert_traces_with_unknown_lengths

CASES = {
    # Tacotron 2's: previous and cumulative weights, LSTM, tanh layer.
    "lstm_cumulative": dict(
        attention=dict(units=4, filters=3, kernel_size=3), layer_size=5,
    ),
    # Chorowski et al.'s: the previous weights only; a kernel wider than
    # the source; GRU, no attentional layer, the cell output out.
    "gru_previous_only_wide_kernel": dict(
        cell="gru",
        attention=dict(units=4, filters=2, kernel_size=7, cumulative=False),
        layer_size=None, output_attention=False,
    ),
    # A one-position kernel, no bias in the score.
    "lstm_kernel_one_no_bias": dict(
        attention=dict(units=3, filters=2, kernel_size=1, use_bias=False),
        activation=None, bias=True,
    ),
}


def _location_decoder(case, dtype=None):
    kwargs = dict(CASES[case])
    attention = keras_attention.LocationSensitiveAttention(
        **kwargs.pop("attention"), dtype=dtype
    )
    return _decoder(attention=attention, dtype=dtype, **kwargs)


def initial_alignment_state(decoder, seed=1):
    """A random alignment state, 1e6 at masked source positions (what a
    step must never read): `(values, names)`, names `["state"]` for a
    state that is one tensor."""
    rng = np.random.default_rng(seed)
    attention = decoder.wrapper.attention
    if not hasattr(attention, "cumulative"):
        names = ["state"]
    else:
        names = ["weights", "cumulative"][: 2 if attention.cumulative else 1]
    return [
        np.where(SOURCE_MASK, rng.uniform(0, 1, (B, S)), 1e6).astype(
            "float32")
        for _ in names
    ], names


def run_decoders(decoder, fused, source_state=None):
    """Outputs and gradients of `fused_decode` or `generic_decode` with
    the decoder's weights, from a given initial state."""
    data = _data(decoder)
    cells = len(data) - 2
    wrapper = decoder.wrapper
    names = []
    if source_state is not None:
        values, names = source_state
        data = data + values
    weights = [ops.convert_to_tensor(w) for w in decoder.trainable_variables]
    position = ops.convert_to_tensor(
        np.arange(1, T + 1, dtype="float32")[None, :, None]
    )

    def fn(x, memory, *values):
        cell_state = list(values[:cells])
        given = values[cells : cells + len(names)]
        trainable = values[cells + len(names) :]
        mapping = list(zip(decoder.trainable_variables, trainable))
        with keras.StatelessScope(state_mapping=mapping):
            state = wrapper.get_initial_state(
                memory, memory_mask=SOURCE_MASK, cell_state=cell_state
            )
            if names:
                state["alignment_state"] = (
                    dict(zip(names, given)) if names != ["state"] else given[0]
                )
            mask = ops.convert_to_tensor(TARGET_MASK)
            if fused:
                outputs, alignments, final = fused_decode(
                    wrapper, x, state, mask
                )
            else:
                outputs, alignments, final = loops.generic_decode(
                    wrapper, x, memory, state, mask, False, "float32"
                )
        finals = [final["attention"], *final["cell_state"]]
        finals += keras.tree.flatten(final["alignment_state"])
        return (outputs * position, alignments * position, *finals)

    return gradients(fn, *data, *weights)


def assert_same_as_generic(decoder, source_state=None):
    got_out, got = run_decoders(decoder, True, source_state)
    want_out, want = run_decoders(decoder, False, source_state)
    assert len(got_out) == len(want_out)
    for i, (g, w) in enumerate(zip(got_out, want_out)):
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-5, atol=1e-5, err_msg=f"output {i}"
        )
    paths = [w.path for w in decoder.trainable_weights]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g is not None and w is not None, i
        name = paths[i - (len(got) - len(paths))] if i >= len(got) - len(
            paths) else f"input {i}"
        np.testing.assert_allclose(
            to_np(g), to_np(w), rtol=1e-4, atol=1e-4, err_msg=name
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_matches_generic(case):
    decoder = _location_decoder(case)
    assert decoder.fuses()
    assert any("location_kernel" in w.path for w in decoder.trainable_weights)
    assert_same_as_generic(decoder)


def test_from_a_given_alignment_state():
    """An initial alignment state that is not zeros, with 1e6 where the
    source is masked: the same results, and its gradient, as the generic
    loop's (zero at masked positions)."""
    decoder = _location_decoder("lstm_cumulative")
    state = initial_alignment_state(decoder)
    assert_same_as_generic(decoder, state)
    _, grads = run_decoders(decoder, True, state)
    cells = len(decoder.wrapper.initial_cell_state(1))
    for g in grads[2 + cells : 2 + cells + 2]:
        g = to_np(g)
        assert np.all(g[~SOURCE_MASK] == 0) and np.any(g[SOURCE_MASK] != 0)


def test_attention_rnn_runs_it_fused_with_a_zero_length_memory():
    """`AttentionRNN` takes the fused loop for the location score
    (`fuses`), also for a memory of no position, and its final state holds
    the alignment state the generic loop gives."""
    decoder = _location_decoder("lstm_cumulative")
    x, _, *cell_state = _data(decoder)
    for source in (S, 0):
        memory = np.random.default_rng(3).normal(
            size=(B, source, D)).astype("float32")
        results = []
        for fused in ("auto", False):
            decoder.fused = fused
            results.append(decoder(
                x, memory, initial_state=cell_state, inputs_mask=TARGET_MASK
            ))
        decoder.fused = "auto"
        assert decoder.fuses()
        for got, want in zip(keras.tree.flatten(results[0]),
                             keras.tree.flatten(results[1])):
            np.testing.assert_allclose(
                to_np(got), to_np(want), rtol=1e-5, atol=1e-5)
        final = results[0][2]["alignment_state"]
        assert sorted(final) == ["cumulative", "weights"]
        assert tuple(final["weights"].shape) == (B, source)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_close_to_float32(policy):
    reference = _location_decoder("lstm_cumulative")
    decoder = _location_decoder("lstm_cumulative", dtype=policy)
    decoder.set_weights(reference.get_weights())
    assert decoder.fuses()
    data = [ops.convert_to_tensor(t) for t in _data(reference)]
    assert_mixed_close(decoder, reference, data, TARGET_MASK, SOURCE_MASK)


def test_keras_round_trip(tmp_path):
    assert_keras_round_trip(
        keras.layers.LSTMCell(U),
        keras_attention.LocationSensitiveAttention(4, filters=2,
                                                   kernel_size=3),
        D,
        tmp_path,
    )


@pytest.mark.tf_only
def test_gradients_trace_with_unknown_lengths():
    """The states packed position by position and the kernel's windows
    over a source length known only at run time."""
    assert_traces_with_unknown_lengths(_location_decoder("lstm_cumulative"))
