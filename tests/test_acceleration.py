"""The example's fast training defaults: mixed precision and XLA choices,
and training under mixed policies (float32 master weights, finite
losses)."""

import json
import os

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.tf_only

pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from keras_attention.training import acceleration  # noqa: E402
from keras_attention.training import settings as common_config  # noqa: E402
from examples.nmt import config as config_lib  # noqa: E402
from examples.nmt import run as run_lib  # noqa: E402
from examples.nmt import train as train_lib  # noqa: E402
from keras_attention.seq2seq import FusedAdam  # noqa: E402

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu vme sse2 avx2 {extra}
bogomips\t: 4000

processor\t: 1
flags\t\t: fpu vme sse2 avx2 {extra}
"""


@pytest.mark.parametrize(
    "extra, expected",
    [("", set()), ("avx512f avx512_bf16", {"avx512f", "avx512_bf16"}),
     ("amx_tile amx_bf16", {"amx_tile", "amx_bf16"})],
)
def test_cpu_flags_reads_every_flags_line(tmp_path, extra, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO.format(extra=extra))
    assert acceleration.cpu_flags(str(path)) == {"fpu", "vme", "sse2", "avx2"} | expected


def test_cpu_flags_without_the_file(tmp_path):
    assert acceleration.cpu_flags(str(tmp_path / "missing")) == frozenset()


@pytest.mark.parametrize(
    "flags, gpus, value",
    [
        ({"avx2", "avx512f"}, [], "off"),
        ({"avx512f", "avx512_bf16"}, [], "bfloat16"),
        ({"amx_bf16"}, [], "bfloat16"),
        # With GPUs, training runs on them: the CPU does not matter.
        ({"avx512_bf16"}, [(6, 1)], "off"),
        (set(), [(7, 0)], "float16"),
        (set(), [(7, 5)], "float16"),
        (set(), [(8, 0)], "bfloat16"),
        (set(), [(9, 0), (9, 0)], "bfloat16"),
        # The slowest GPU decides.
        (set(), [(8, 6), (7, 5)], "float16"),
    ],
)
def test_auto_mixed_precision(flags, gpus, value):
    chosen, reason = acceleration.auto_mixed_precision(flags, gpus)
    assert chosen == value and reason
    policy = acceleration.mixed_precision_policy("auto", flags, gpus)
    assert policy == (None if value == "off" else f"mixed_{value}")


@pytest.mark.parametrize(
    "value, policy",
    [(None, None), (False, None), ("off", None), (True, "mixed_float16"),
     ("float16", "mixed_float16"), ("bfloat16", "mixed_bfloat16")],
)
def test_mixed_precision_policy(value, policy):
    # Explicit values do not look at the hardware.
    assert acceleration.mixed_precision_policy(
        value, flags={"avx512_bf16"}, gpus=[(9, 0)]
    ) == policy


def test_mixed_precision_policy_rejects_others():
    with pytest.raises(ValueError, match="mixed_precision='float8'"):
        acceleration.mixed_precision_policy("float8")


@pytest.mark.parametrize(
    "value, gpus, expected",
    [
        ("on", [], True),
        (True, [], True),
        ("off", [(9, 0)], False),
        (False, [], False),
        # Measured slower on CPU (docs/benchmarks.md).
        ("auto", [], False),
        # On a GPU, Keras' own "auto".
        ("auto", [(8, 0)], "auto"),
    ],
)
def test_jit_compile_setting(value, gpus, expected):
    assert acceleration.jit_compile_setting(value, gpus=gpus) == expected


def test_jit_compile_setting_rejects_others():
    with pytest.raises(ValueError, match="jit_compile='yes'"):
        acceleration.jit_compile_setting("yes")


@pytest.mark.parametrize("model_type", common_config.MODEL_TYPES)
@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
def test_mixed_precision_training_keeps_float32_master_weights(
    tmp_path, precision, model_type
):
    """A tiny run of `train` under each mixed policy: the layers compute in
    half precision, every variable (weights and optimizer slots) stays
    float32, the losses are finite and decrease, and the run records the
    policy."""
    configs = (
        config_lib.DataConfig(
            num_dates=200, validation_fraction=0.1, test_fraction=0.0
        ),
        config_lib.TextConfig(source_vocab_size=200, target_vocab_size=200),
        config_lib.ModelConfig(
            embedding_dim=8, units=8, model=model_type, dropout=0.0
        ),
        config_lib.TrainConfig(
            epochs=3, batch_size=32, verbose=0, learning_rate=1e-2,
            warmup_steps=2, mixed_precision=precision, jit_compile="off",
        ),
    )
    run_dir = str(tmp_path / "run")
    seq2seq, history = train_lib.train(run_dir, *configs, log=lambda *_: None)
    model = seq2seq
    assert seq2seq.attention.compute_dtype == precision
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
    floating = {v.dtype for v in model.variables if "float" in v.dtype}
    assert floating == {"float32"}
    optimizer = model.optimizer
    if precision == "float16":
        # float16 needs loss scaling; bfloat16 has float32's range.
        assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        optimizer = optimizer.inner_optimizer
    else:
        assert not isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert isinstance(optimizer, FusedAdam)
    slots = [v for v in optimizer.variables if "float" in v.dtype]
    assert len(slots) >= 2 * len(model.trainable_variables)  # Adam
    assert {v.dtype for v in slots} == {"float32"}
    losses = np.array(history["loss"] + history["val_loss"])
    assert np.isfinite(losses).all()
    assert history["loss"][-1] < history["loss"][0]
    assert history["dtype_policy"] == f"mixed_{precision}"
    assert history["jit_compile"] is False
    with open(run_lib.run_path(run_dir, run_lib.HISTORY)) as f:
        assert json.load(f)["dtype_policy"] == f"mixed_{precision}"
    assert os.path.exists(run_lib.run_path(run_dir, run_lib.WEIGHTS))


@pytest.mark.slow
def test_xla_training_on_fixed_shapes_matches_training_without(tmp_path):
    """`train` with XLA pads each batch to its bucket's width (so that the
    step compiles once per bucket, not per batch shape): the padding is
    masked, so the training losses are those of the run without XLA on
    unpadded batches, step for step."""
    histories = []
    for jit in ("off", "on"):
        configs = (
            config_lib.DataConfig(
                num_dates=160, validation_fraction=0.1, test_fraction=0.0
            ),
            config_lib.TextConfig(source_vocab_size=200, target_vocab_size=200),
            config_lib.ModelConfig(
                embedding_dim=8, units=8, dropout=0.0
            ),
            config_lib.TrainConfig(
                epochs=2, batch_size=32, verbose=0, learning_rate=1e-2,
                warmup_steps=2, mixed_precision="off", jit_compile=jit,
                bucket_boundaries=(12, 14, 16),
            ),
        )
        _, history = train_lib.train(
            str(tmp_path / jit), *configs, log=lambda *_: None
        )
        histories.append(history)
    assert [h["jit_compile"] for h in histories] == [False, True]
    np.testing.assert_allclose(
        histories[1]["loss"], histories[0]["loss"], rtol=2e-4
    )
    assert histories[1]["loss"][-1] < histories[1]["loss"][0]
