"""A `.keras` file saved on one Keras backend loads on the others.

Each backend runs in its own process (the backend is chosen at import time):
first every backend builds two small models, saves them and records their
outputs; then every backend loads every file with `safe_mode=True` and must
reproduce the recorded outputs. The models:

- `core`: an LSTM encoder-decoder with the three attention layers.
- `rnn`: two step-wise decoders, Luong (`LSTMCell`, general score, input
  feeding) and Bahdanau (`GRUCell`, additive score, attention before the
  cell); on loading, the step-by-step path (`AttentionWrapper.step` of the
  loaded wrapper) must also give the same sequence as `AttentionRNN`.

Both models go through the same processes, so the test starts one process
per backend and phase.
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
MODELS = ("core", "rnn")

SCRIPT = textwrap.dedent(
    r"""
    import sys
    import numpy as np
    import keras
    import keras_attention
    from keras import ops

    mode, folder = sys.argv[1], sys.argv[2]
    backend = keras.backend.backend()
    src = np.array([[3, 4, 5, 0, 0], [6, 7, 8, 9, 2]], "int32")
    targets = {
        "core": np.array([[1, 2, 3], [4, 5, 0]], "int32"),
        "rnn": np.array([[1, 2, 3, 0], [4, 5, 6, 7]], "int32"),
    }

    def encoder(s, dim):
        x = keras.layers.Embedding(20, dim, mask_zero=True)(s)
        return keras.layers.LSTM(8, return_sequences=True, return_state=True,
                                 name="lstm")(x)

    def build_core():
        s = keras.Input((None,), dtype="int32", name="source")
        t = keras.Input((None,), dtype="int32", name="target")
        enc, h, c = encoder(s, 8)
        y = keras.layers.Embedding(20, 8, mask_zero=True)(t)
        dec = keras.layers.LSTM(8, return_sequences=True, name="decoder_lstm")(
            y, initial_state=[h, c])
        outputs = []
        for layer in (keras_attention.DotAttention(use_scale=True),
                      keras_attention.MultiplicativeAttention(),
                      keras_attention.AdditiveAttention(6, normalize=True)):
            context, weights = layer(dec, enc)
            outputs += [context, weights]
        return keras.Model([s, t], outputs)

    def build_rnn():
        s = keras.Input((None,), dtype="int32", name="source")
        t = keras.Input((None,), dtype="int32", name="target")
        enc, h, c = encoder(s, 6)
        y = keras.layers.Embedding(20, 6, mask_zero=True, name="target_embedding")(t)
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

    def stepwise(model, name, tgt):
        # The loaded wrapper, one step at a time, from the same encoder.
        enc_model = keras.Model(model.inputs[0], model.get_layer("lstm").output)
        enc, h, c = enc_model(src)
        wrapper = model.get_layer(name).wrapper
        emb = model.get_layer("target_embedding")
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
        rng = np.random.default_rng(0)
        for kind, build in (("core", build_core), ("rnn", build_rnn)):
            keras.utils.set_random_seed(1)
            model = build()
            # Move the weights away from their initial values.
            for w in model.weights:
                w.assign(ops.convert_to_numpy(w) + 0.05 * rng.normal(size=w.shape))
            out = [ops.convert_to_numpy(o) for o in model([src, targets[kind]])]
            model.save(f"{folder}/{backend}_{kind}.keras")
            np.savez(f"{folder}/{backend}_{kind}.npz", *out)
    else:
        for origin in sys.argv[3:]:
            for kind in ("core", "rnn"):
                tgt = targets[kind]
                model = keras.models.load_model(
                    f"{folder}/{origin}_{kind}.keras", safe_mode=True)
                out = [ops.convert_to_numpy(o) for o in model([src, tgt])]
                ref = np.load(f"{folder}/{origin}_{kind}.npz")
                for i, o in enumerate(out):
                    np.testing.assert_allclose(o, ref[f"arr_{i}"], atol=1e-5)
                if kind == "rnn":
                    # Full target rows: the step-wise path equals the sequence.
                    for name, i in (("luong", 0), ("bahdanau", 2)):
                        np.testing.assert_allclose(
                            stepwise(model, name, tgt)[1], ref[f"arr_{i}"][1],
                            atol=1e-5)
                print(f"{kind}: {origin} -> {backend}: ok", flush=True)
    """
)


def _run(backend, args, tmp_path):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    script = tmp_path / "cross.py"
    script.write_text(SCRIPT)
    try:
        result = subprocess.run(
            [sys.executable, str(script), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{backend} {args[0]}: still running after 300 s")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
@pytest.mark.tf_only
@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs jax or torch installed")
def test_keras_files_load_on_every_backend(tmp_path):
    for backend in BACKENDS:
        _run(backend, ["save", str(tmp_path)], tmp_path)
    for backend in BACKENDS:
        out = _run(backend, ["load", str(tmp_path), *BACKENDS], tmp_path)
        for kind in MODELS:
            for origin in BACKENDS:
                assert f"{kind}: {origin} -> {backend}: ok" in out
    core = np.load(tmp_path / "tensorflow_core.npz")
    assert core["arr_1"].shape == (2, 3, 5)
    rnn = np.load(tmp_path / "tensorflow_rnn.npz")
    assert rnn["arr_1"].shape == (2, 4, 5) and rnn["arr_3"].shape == (2, 4, 5)
    # Masked source positions get no attention, on every backend's outputs.
    for backend in BACKENDS:
        for kind, index in (("core", 1), ("rnn", 1)):
            weights = np.load(tmp_path / f"{backend}_{kind}.npz")[f"arr_{index}"]
            assert (weights[0, :, 3:] == 0).all()
