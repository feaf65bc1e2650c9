"""A `.keras` file written by an earlier version still loads and computes.

`tests/data/compat/layers_v1.keras` holds every attention layer, the RNN
wrappers and `keras_attention.LSTM`; `layers_v1.npz` its outputs on a fixed
input, recorded when it was written (see `make_compat_fixture.py` there).
A renamed layer, weight or module, or a change in weight order, breaks this.
"""

import os

import keras
import numpy as np

import keras_attention  # noqa: F401  (registers the layers)

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
