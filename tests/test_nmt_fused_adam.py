"""`examples.nmt.fused_adam.FusedAdam`: Keras' Adam, one kernel per variable.

The same gradients (dense and an embedding's sparse ones with a repeated
row, clipped, under a schedule) applied by Keras' `Adam` and by `FusedAdam`
give the same variables and moments step after step, and the dense ones go
through TensorFlow's fused kernel; `amsgrad` falls back to Keras' update; under `mixed_float16` it runs inside a `LossScaleOptimizer`; it
round-trips through its config; and under `MirroredStrategy` it updates
every replica's copy like Keras' Adam.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.seq2seq import FusedAdam


def _variables(seed=0):
    rng = np.random.default_rng(seed)
    return [
        keras.Variable(rng.normal(size=(6, 3)).astype("float32")),
        keras.Variable(rng.normal(size=(4,)).astype("float32")),
    ]


def _gradients(step):
    rng = np.random.default_rng(100 + step)
    dense = tf.constant(rng.normal(size=(4,)).astype("float32"))
    # An embedding's gradient: rows 1 and 4 (row 1 twice).
    sparse = tf.IndexedSlices(
        tf.constant(rng.normal(size=(3, 3)).astype("float32")),
        tf.constant([1, 4, 1]),
        tf.constant([6, 3]),
    )
    return [sparse, dense]


def _train(optimizer, steps=5):
    variables = _variables()
    for step in range(steps):
        optimizer.apply_gradients(zip(_gradients(step), variables))
    return variables


@pytest.mark.parametrize("amsgrad", [False, True])
def test_same_updates_as_keras_adam(amsgrad, monkeypatch):
    fused = []
    kernel = tf.raw_ops.ResourceApplyAdam

    def spy(**kwargs):
        fused.append(kwargs["grad"].shape)
        return kernel(**kwargs)

    monkeypatch.setattr(tf.raw_ops, "ResourceApplyAdam", spy)
    options = dict(
        learning_rate=keras.optimizers.schedules.ExponentialDecay(
            0.1, 2, 0.5
        ),
        clipnorm=1.0,
        amsgrad=amsgrad,
    )
    ours, keras_adam = FusedAdam(**options), keras.optimizers.Adam(**options)
    got, want = _train(ours), _train(keras_adam)
    # Eager steps: one kernel call per dense gradient, none for the sparse
    # one or with amsgrad.
    assert fused == ([] if amsgrad else [(4,)] * 5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=2e-6)
    for g, w in zip(ours.variables, keras_adam.variables):
        np.testing.assert_allclose(
            np.asarray(g), np.asarray(w), rtol=1e-5, atol=2e-6
        )
    # The update moved the variables (rows 0, 2, 3, 5 too: their moments
    # are zero, so Adam leaves them).
    start = _variables()
    assert not np.allclose(got[0].numpy()[[1, 4]], start[0].numpy()[[1, 4]])
    np.testing.assert_array_equal(got[0].numpy()[0], start[0].numpy()[0])


def test_config_round_trip():
    optimizer = FusedAdam(learning_rate=0.01, beta_1=0.8, clipnorm=2.0)
    config = keras.optimizers.serialize(optimizer)
    assert config["registered_name"] == "keras_attention>FusedAdam"
    clone = keras.optimizers.deserialize(config)
    assert type(clone) is FusedAdam
    assert clone.get_config() == optimizer.get_config()


def test_inside_a_loss_scale_optimizer():
    ours = keras.optimizers.LossScaleOptimizer(FusedAdam(0.1))
    reference = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.Adam(0.1)
    )
    got, want = _train(ours, 3), _train(reference, 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=2e-6)


def _distributed_step(strategy, optimizer, variable):
    @tf.function
    def step():
        def replica_step():
            gradient = tf.constant([1.0, -2.0, 0.5])
            optimizer.apply_gradients([(gradient, variable)])

        strategy.run(replica_step)

    return step


def test_mirrored_strategy_updates_every_replica():
    # Two replicas where the process has two logical CPUs (as
    # test_distribute configures), else one.
    devices = tf.config.list_logical_devices("CPU")
    strategy = tf.distribute.MirroredStrategy(
        [d.name for d in devices[:2]] if len(devices) > 1 else None
    )
    results = []
    for make in (FusedAdam, keras.optimizers.Adam):
        with strategy.scope():
            variable = keras.Variable(np.ones((3,), "float32"))
            optimizer = make(0.1)
            optimizer.build([variable])

        step = _distributed_step(strategy, optimizer, variable)
        for _ in range(3):
            step()
        values = [
            np.asarray(v) for v in strategy.experimental_local_results(
                variable.value
            )
        ]
        results.append(values)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    assert not np.allclose(results[0][0], 1.0)
