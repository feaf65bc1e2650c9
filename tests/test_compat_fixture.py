"""A `.keras` file written by an earlier version still loads and computes.

`tests/data/compat/layers_v1.keras` holds every attention layer, the RNN
wrappers and `keras_attention.LSTM`; `layers_v1.npz` its outputs on a fixed
input, recorded when it was written (see `make_compat_fixture.py` there).
A renamed layer, weight or module, or a change in weight order, breaks this.
"""

import os

import keras
import numpy as np

import keras_attention

DATA = os.path.join(os.path.dirname(__file__), "data", "compat")


def test_layers_v1_loads_with_safe_mode_and_gives_recorded_outputs():
    model = keras.saving.load_model(
        os.path.join(DATA, "layers_v1.keras"), safe_mode=True
    )
    recorded = np.load(os.path.join(DATA, "layers_v1.npz"))
    outputs = keras.ops.convert_to_numpy(
        model([recorded["source"], recorded["target"]])
    )
    np.testing.assert_allclose(
        outputs, recorded["outputs"], rtol=1e-4, atol=1e-5
    )


# The top-level names of the package before the library was grouped into
# subpackages: user code that imports them keeps working.
EARLIER_PUBLIC_NAMES = (
    "AdditiveAttention AttentionPlotCallback AttentionRNN AttentionWrapper "
    "AttentionalOutput BahdanauMonotonicAttention BaseAttention DotAttention "
    "LSTM GuidedAlignmentLoss LocationSensitiveAttention "
    "LuongMonotonicAttention MonotonicAttention MultiplicativeAttention "
    "__version__ alignment attention_text_grid beam_search_decode "
    "beam_search_nbest callbacks decoding greedy_decode plot_attention "
    "plot_attention_grid sample_decode visualization"
).split()


def test_earlier_public_names_stay_importable_from_the_top_level():
    missing = [n for n in EARLIER_PUBLIC_NAMES if not hasattr(keras_attention, n)]
    assert not missing, missing
    assert set(EARLIER_PUBLIC_NAMES) <= set(keras_attention.__all__)
    assert keras_attention.callbacks.AttentionPlotCallback is (
        keras_attention.AttentionPlotCallback
    )


def test_ops_and_stateful_attention_are_public():
    from keras_attention import StatefulAttention
    from keras_attention import ops

    assert issubclass(keras_attention.LocationSensitiveAttention,
                      StatefulAttention)
    assert issubclass(keras_attention.MonotonicAttention, StatefulAttention)
    assert not issubclass(keras_attention.AdditiveAttention,
                          StatefulAttention)
    for name in ops.__all__:
        assert callable(getattr(ops, name)) and getattr(ops, name).__doc__
    query = np.ones((1, 2, 3), "float32")
    scores = ops.dot_score(query, np.ones((1, 4, 3), "float32"))
    weights = ops.masked_softmax(scores, np.array([[True] * 3 + [False]]))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(weights),
        np.tile([1 / 3, 1 / 3, 1 / 3, 0.0], (1, 2, 1)),
        rtol=1e-6,
    )
