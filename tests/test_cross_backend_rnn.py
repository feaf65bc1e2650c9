"""A `.keras` file with `AttentionRNN` saved on one backend loads on the others.

As `test_cross_backend.py`, for the step-wise layers: each backend (its own
process, the backend is chosen at import time) builds two decoders, Luong
(`LSTMCell`, general score, input feeding) and Bahdanau (`GRUCell`,
additive score, attention before the cell), saves the model and records its
outputs on masked inputs; then every backend loads every file with
`safe_mode=True` and must reproduce the outputs. The step-by-step path
(`AttentionWrapper.step` of the loaded wrapper) must give the same
sequence as the loaded `AttentionRNN`.
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
    tgt = np.array([[1, 2, 3, 0], [4, 5, 6, 7]], "int32")

    def build():
        keras.utils.set_random_seed(1)
        s = keras.Input((None,), dtype="int32", name="source")
        t = keras.Input((None,), dtype="int32", name="target")
        x = keras.layers.Embedding(20, 6, mask_zero=True)(s)
        enc, h, c = keras.layers.LSTM(8, return_sequences=True,
                                      return_state=True)(x)
        y = keras.layers.Embedding(20, 6, mask_zero=True)(t)
        luong = keras_attention.AttentionRNN(
            keras_attention.AttentionWrapper(
                keras.layers.LSTMCell(8),
                keras_attention.MultiplicativeAttention(),
                attention_layer_size=7, input_feeding=True, name="luong_wrapper"),
            name="luong")
        bahdanau = keras_attention.AttentionRNN(
            keras_attention.AttentionWrapper(
                keras.layers.GRUCell(8),
                keras_attention.AdditiveAttention(5),
                wiring="bahdanau", name="bahdanau_wrapper"),
            name="bahdanau")
        out_l, w_l = luong(y, enc, initial_state=[h, c])
        out_b, w_b = bahdanau(y, enc)
        return keras.Model([s, t], [out_l, w_l, out_b, w_b])

    def stepwise(model, name):
        # The loaded wrapper, one step at a time, from the same encoder.
        enc_model = keras.Model(model.inputs[0], model.get_layer("lstm").output)
        enc, h, c = enc_model(src)
        wrapper = model.get_layer(name).wrapper
        emb = model.get_layer("embedding_1")
        mask = ops.not_equal(src, 0)
        cell_state = [h, c] if name == "luong" else None
        state = wrapper.get_initial_state(enc, memory_mask=mask,
                                          cell_state=cell_state)
        outs = []
        for t in range(tgt.shape[1]):
            out, state, _ = wrapper.step(emb(tgt[:, t]), state)
            outs.append(ops.convert_to_numpy(out))
        return np.stack(outs, axis=1)

    if mode == "save":
        model = build()
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
            # Full target rows: the step-wise path equals the sequence.
            for name, i in (("luong", 0), ("bahdanau", 2)):
                np.testing.assert_allclose(
                    stepwise(model, name)[1], ref[f"arr_{i}"][1], atol=1e-5)
            print(f"{origin} -> {backend}: ok", flush=True)
    """
)


def _run(backend, args, tmp_path):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    script = tmp_path / "cross_rnn.py"
    script.write_text(SCRIPT)
    try:
        result = subprocess.run(
            [sys.executable, str(script), *args],
            env=env, capture_output=True, text=True, timeout=300,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{backend} {args[0]}: still running after 300 s")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.tf_only
@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs jax or torch installed")
def test_attention_rnn_keras_file_loads_on_every_backend(tmp_path):
    for backend in BACKENDS:
        _run(backend, ["save", str(tmp_path)], tmp_path)
    for backend in BACKENDS:
        out = _run(backend, ["load", str(tmp_path), *BACKENDS], tmp_path)
        for origin in BACKENDS:
            assert f"{origin} -> {backend}: ok" in out
    ref = np.load(tmp_path / "tensorflow.npz")
    assert ref["arr_1"].shape == (2, 4, 5) and ref["arr_3"].shape == (2, 4, 5)
    # Masked source positions get no attention, on every backend's outputs.
    for backend in BACKENDS:
        weights = np.load(tmp_path / f"{backend}.npz")["arr_1"]
        assert (weights[0, :, 3:] == 0).all()
