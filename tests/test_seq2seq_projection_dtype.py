"""`Seq2Seq(projection_dtype=...)`: where the vocabulary projection
computes under a mixed policy, and float32 logits whatever it is.

Under `mixed_bfloat16` the default (`"auto"`) projects in bfloat16 and
under `mixed_float16` in float32; `"float32"` and `"policy"` force one or
the other; the `"logits"` output, `step_logits` and `generate`'s scores
stay float32; the bfloat16 logits match the float32 projection's of the
same weights to bfloat16 rounding; a model trains without NaN; the choice
survives a `.keras` file, and a configuration saved without it loads with
the float32 projection those models had.
"""

import json
import zipfile

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.seq2seq import MaskedLoss
from keras_attention.seq2seq import Seq2Seq

SOURCE = np.array([[5, 6, 7, 3], [8, 5, 3, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5], [2, 6, 0]], "int32")
TARGET_OUT = np.array([[4, 5, 3], [6, 3, 0]], "int32")
TINY = {"source_vocab_size": 9, "target_vocab_size": 7, "embedding_dim": 4,
        "units": 4, "dropout": 0.0}


def _inputs():
    return {"source_ids": SOURCE, "target_in": TARGET_IN}


def _model(policy, **kwargs):
    return Seq2Seq(**TINY, dtype=policy, **kwargs)


@pytest.mark.parametrize("policy,projection,expected", [
    ("mixed_bfloat16", "auto", "bfloat16"),
    ("mixed_float16", "auto", "float32"),
    ("float32", "auto", "float32"),
    ("mixed_bfloat16", "float32", "float32"),
    ("mixed_bfloat16", "policy", "bfloat16"),
    ("mixed_float16", "policy", "float16"),
])
def test_where_the_projection_computes(policy, projection, expected):
    model = _model(policy, projection_dtype=projection)
    assert model.output_projection.compute_dtype == expected
    # Its weights stay float32 under every mixed policy.
    assert model.output_projection.kernel.dtype == "float32"
    out = model(_inputs(), training=False)
    assert keras.backend.standardize_dtype(out["logits"].dtype) == "float32"
    memory_state = model.encode(SOURCE)
    logits, _, _ = model.step_logits(ops.convert_to_tensor([2, 2]),
                                     memory_state)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"


@pytest.mark.parametrize("model_kind", ["luong", "stepwise"])
def test_bfloat16_logits_are_the_float32_projections_rounded(model_kind):
    keras.utils.set_random_seed(0)
    fast = _model("mixed_bfloat16", model=model_kind)
    exact = _model("mixed_bfloat16", model=model_kind,
                   projection_dtype="float32")
    fast(_inputs())
    exact(_inputs())
    exact.set_weights(fast.get_weights())
    hidden = ops.convert_to_tensor(
        np.random.default_rng(1).normal(size=(5, fast.decoder_units)),
        "bfloat16",
    )
    got = ops.convert_to_numpy(fast._logits(hidden))
    want = ops.convert_to_numpy(exact._logits(hidden))
    # Independent references in float64: the float32 kernel, and the
    # kernel rounded to bfloat16 as the bfloat16 matmul reads it.
    kernel = ops.convert_to_numpy(fast.output_projection.kernel)
    rounded = ops.convert_to_numpy(
        ops.cast(ops.cast(kernel, "bfloat16"), "float32")
    )
    bias = ops.convert_to_numpy(fast.output_projection.bias)
    h = ops.convert_to_numpy(ops.cast(hidden, "float32")).astype("float64")
    np.testing.assert_allclose(
        want, h @ kernel.astype("float64") + bias, rtol=1e-5, atol=1e-5
    )
    # bfloat16 keeps 8 bits of the float32 sum: relative error <= 2^-8.
    reference = h @ rounded.astype("float64") + bias
    scale = np.abs(reference).max()
    np.testing.assert_allclose(got, reference, rtol=2**-7,
                               atol=2**-7 * scale)
    assert not np.array_equal(got, want)


@pytest.mark.skipif(
    keras.backend.backend() == "jax",
    reason="XLA:CPU (JAX 0.10.2) crashed (a segmentation fault in "
    "backend_compile_and_load) compiling this bfloat16 training step in a "
    "pytest worker that had run the other backend tests; alone it passes",
)
def test_a_bfloat16_projection_trains_without_nan():
    keras.utils.set_random_seed(0)
    model = _model("mixed_bfloat16")
    model.compile(keras.optimizers.Adam(0.05), loss={"logits": MaskedLoss()})
    history = model.fit(_inputs(), {"logits": TARGET_OUT}, epochs=30,
                        verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0]
    out = model.generate(SOURCE, max_length=4)
    assert np.all(np.isfinite(ops.convert_to_numpy(out["scores"])))


def test_the_choice_survives_a_keras_file(tmp_path):
    model = _model("mixed_bfloat16", projection_dtype="policy")
    want = ops.convert_to_numpy(model(_inputs())["logits"])
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert loaded.projection_dtype == "policy"
    assert loaded.output_projection.compute_dtype == "bfloat16"
    np.testing.assert_array_equal(
        ops.convert_to_numpy(loaded(_inputs())["logits"]), want
    )


def test_a_config_saved_without_it_projects_in_float32(tmp_path):
    model = _model("mixed_bfloat16", projection_dtype="float32")
    want = ops.convert_to_numpy(model(_inputs())["logits"])
    path = str(tmp_path / "model.keras")
    model.save(path)
    # The file as the versions before the argument wrote it.
    old = str(tmp_path / "old.keras")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(old, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                del config["config"]["projection_dtype"]
                data = json.dumps(config).encode("utf-8")
            dst.writestr(item, data)
    loaded = keras.saving.load_model(old, safe_mode=True)
    assert loaded.projection_dtype == "float32"
    assert loaded.output_projection.compute_dtype == "float32"
    np.testing.assert_array_equal(
        ops.convert_to_numpy(loaded(_inputs())["logits"]), want
    )
    # A new model under the same policy projects in bfloat16.
    assert _model("mixed_bfloat16").output_projection.compute_dtype == (
        "bfloat16"
    )


def test_run_settings_written_without_it_project_in_float32():
    from keras_attention.training import settings
    from keras_attention.translator import runs

    new = settings.ModelConfig()
    assert new.projection_dtype == "auto"
    written = json.loads(new.to_json())
    assert written["projection_dtype"] == "auto"
    assert settings.ModelConfig.from_json(new.to_json()) == new
    # A run.json of the versions before the setting.
    del written["projection_dtype"]
    old = settings.ModelConfig.from_json(json.dumps(written))
    assert old.projection_dtype == "float32"
    (from_run,) = settings.from_dicts({"model": written},
                                      [("model", settings.ModelConfig)])
    assert from_run.projection_dtype == "float32"
    arguments = runs.model_arguments(dict(written, source_vocab_size=9,
                                          target_vocab_size=7))
    assert arguments["projection_dtype"] == "float32"
    # The settings of a new run keep theirs.
    chosen = dict(written, projection_dtype="policy")
    assert runs.model_arguments(chosen)["projection_dtype"] == "policy"
    with pytest.raises(ValueError, match="`projection_dtype` must be one of"):
        settings.ModelConfig(projection_dtype="half")
