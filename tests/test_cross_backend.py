"""A `.keras` file saved on one Keras backend loads on the others.

Each backend runs in its own process (the backend is chosen at import time):
first every backend builds a small encoder-decoder with our layers, saves it
and records its outputs; then every backend loads every file with
`safe_mode=True` and must reproduce the recorded outputs.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

BACKENDS = [
    b
    for b, module in (("tensorflow", "tensorflow"), ("jax", "jax"), ("torch", "torch"))
    if importlib.util.find_spec(module) is not None
]

SCRIPT = textwrap.dedent(
    r"""
    import sys
    import numpy as np
    import keras
    import keras_attention
    from keras import ops

    mode, folder = sys.argv[1], sys.argv[2]
    backend = keras.backend.backend()
    rng = np.random.default_rng(0)
    src = np.array([[3, 4, 5, 0, 0], [6, 7, 8, 9, 2]], "int32")
    tgt = np.array([[1, 2, 3], [4, 5, 0]], "int32")

    def build():
        keras.utils.set_random_seed(1)
        s = keras.Input((None,), dtype="int32", name="source")
        t = keras.Input((None,), dtype="int32", name="target")
        x = keras.layers.Embedding(20, 8, mask_zero=True)(s)
        enc, h, c = keras.layers.LSTM(8, return_sequences=True,
                                      return_state=True)(x)
        y = keras.layers.Embedding(20, 8, mask_zero=True)(t)
        dec = keras.layers.LSTM(8, return_sequences=True)(y, initial_state=[h, c])
        outputs = []
        for layer in (keras_attention.DotAttention(use_scale=True),
                      keras_attention.MultiplicativeAttention(),
                      keras_attention.AdditiveAttention(6, normalize=True)):
            context, weights = layer(dec, enc)
            outputs += [context, weights]
        return keras.Model([s, t], outputs)

    if mode == "save":
        model = build()
        # Move the weights away from their initial values.
        for w in model.weights:
            w.assign(ops.convert_to_numpy(w) + 0.05 * rng.normal(size=w.shape))
        out = [ops.convert_to_numpy(o) for o in model([src, tgt])]
        model.save(f"{folder}/{backend}.keras")
        np.savez(f"{folder}/{backend}.npz", *out)
    else:
        for origin in sys.argv[3:]:
            model = keras.models.load_model(f"{folder}/{origin}.keras",
                                            safe_mode=True)
            out = [ops.convert_to_numpy(o) for o in model([src, tgt])]
            ref = np.load(f"{folder}/{origin}.npz")
            for i, o in enumerate(out):
                np.testing.assert_allclose(o, ref[f"arr_{i}"], atol=1e-5)
            print(f"{origin} -> {backend}: ok", flush=True)
    """
)


def _run(backend, args, tmp_path):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    script = tmp_path / "cross.py"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.tf_only
@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs jax or torch installed")
def test_keras_file_loads_on_every_backend(tmp_path):
    for backend in BACKENDS:
        _run(backend, ["save", str(tmp_path)], tmp_path)
    for backend in BACKENDS:
        out = _run(backend, ["load", str(tmp_path), *BACKENDS], tmp_path)
        for origin in BACKENDS:
            assert f"{origin} -> {backend}: ok" in out
    assert np.load(tmp_path / "tensorflow.npz")["arr_1"].shape == (2, 3, 5)
