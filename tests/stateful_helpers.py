"""What the tests of the stateful attention layers share.

A tiny functional model that runs one decoder step of a stateful layer with
an explicit alignment state input, and the `.keras` and SavedModel round
trips of such a model.
"""

import subprocess
import sys

import keras
import numpy as np
from keras import ops
from keras import tree


def to_np(x):
    return np.asarray(ops.convert_to_numpy(x))


def step_model(layer, source, query_dim, value_dim):
    """`[query, memory, mask, state...] -> [context, weights, state...]`."""
    query = keras.Input((query_dim,), name="query")
    memory = keras.Input((source, value_dim), name="memory")
    mask = keras.Input((source,), dtype="bool", name="mask")
    spec = layer.alignment_state_spec(None, source)
    state = tree.map_structure_up_to(
        spec,
        lambda s: keras.Input((source,), dtype=s.dtype),
        spec,
    )
    context, weights, next_state = layer(
        query, memory, value_mask=mask, alignment_state=state
    )
    inputs = [query, memory, mask] + tree.flatten(state)
    outputs = [context, weights] + tree.flatten(next_state)
    return keras.Model(inputs, outputs)


def step_inputs(layer, batch, source, query_dim, value_dim, seed=0):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, query_dim)).astype("float32")
    memory = rng.normal(size=(batch, source, value_dim)).astype("float32")
    lengths = rng.integers(1, source + 1, size=batch)
    lengths[0] = source
    mask = np.arange(source)[None] < lengths[:, None]
    state = layer.initial_alignment_state(mask)
    # A state after a few steps: anything non-negative, zero where masked.
    flat = []
    for t in tree.flatten(state):
        x = to_np(t) + rng.uniform(0, 0.4, size=(batch, source))
        flat.append((x * mask).astype("float32"))
    return [query, memory, mask] + flat


def keras_round_trip(model, inputs, tmp_path):
    expected = [to_np(x) for x in model(inputs)]
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    got = [to_np(x) for x in loaded(inputs)]
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)
    return loaded


FRESH_PROCESS = """
import sys
import numpy as np
import tensorflow as tf
obj = tf.saved_model.load(sys.argv[1])
data = np.load(sys.argv[2])
args = [tf.constant(data[f"arr_{i}"]) for i in range(len(data.files))]
out = obj.serve(args)
assert "keras_attention" not in sys.modules
np.savez(sys.argv[3], *[np.asarray(o) for o in out])
"""


def saved_model_fresh_process(model, inputs, tmp_path):
    """Exports `model`, reloads it in a new Python without our package."""
    expected = [to_np(x) for x in model(inputs)]
    export_dir = tmp_path / "saved"
    model.export(str(export_dir), format="tf_saved_model", verbose=False)
    np.savez(tmp_path / "in.npz", *inputs)
    script = tmp_path / "load.py"
    script.write_text(FRESH_PROCESS)
    subprocess.run(
        [
            sys.executable,
            str(script),
            str(export_dir),
            str(tmp_path / "in.npz"),
            str(tmp_path / "out.npz"),
        ],
        check=True,
        cwd=tmp_path,  # keras_attention is not importable from there
        timeout=240,
    )
    out = np.load(tmp_path / "out.npz")
    assert len(out.files) == len(expected)
    for i, e in enumerate(expected):
        np.testing.assert_allclose(out[f"arr_{i}"], e, rtol=1e-5, atol=1e-6)
