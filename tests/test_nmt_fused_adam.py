"""`keras_attention.seq2seq.FusedAdam`: Keras' Adam, one kernel per variable.

The same dense gradients (clipped, under a schedule) applied by Keras'
`Adam` and by `FusedAdam` give the same variables and moments step after
step, through TensorFlow's fused kernel; an embedding's sparse gradient
with a repeated row updates the variable as its dense form (the row's
slices summed) does in Keras' Adam and in a numpy Adam, through the same
kernel; `amsgrad` falls back to Keras' update; it runs inside a
`LossScaleOptimizer`; it round-trips through its config; and under
`MirroredStrategy` it updates every replica's copy like Keras' Adam.
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


def _train(optimizer, steps=5, dense=False, which=slice(None)):
    """`optimizer` applied to `_gradients` for `steps` steps; `dense`: the
    sparse gradient as its dense form; `which`: the variables updated."""
    variables = _variables()[which]
    for step in range(steps):
        gradients = _gradients(step)
        if dense:
            gradients = [tf.convert_to_tensor(g) for g in gradients]
        optimizer.apply_gradients(zip(gradients[which], variables))
    return variables


@pytest.fixture
def kernel_calls(monkeypatch):
    """The shapes of the gradients TensorFlow's fused kernel receives."""
    shapes = []
    kernel = tf.raw_ops.ResourceApplyAdam

    def spy(**kwargs):
        shapes.append(tuple(kwargs["grad"].shape))
        return kernel(**kwargs)

    monkeypatch.setattr(tf.raw_ops, "ResourceApplyAdam", spy)
    return shapes


def _assert_same(ours, reference, got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=2e-6)
    for g, w in zip(ours.variables, reference.variables):
        np.testing.assert_allclose(
            np.asarray(g), np.asarray(w), rtol=1e-5, atol=2e-6
        )


@pytest.mark.parametrize("amsgrad", [False, True])
def test_dense_updates_are_keras_adams(amsgrad, kernel_calls):
    options = dict(
        learning_rate=keras.optimizers.schedules.ExponentialDecay(
            0.1, 2, 0.5
        ),
        clipnorm=1.0,
        amsgrad=amsgrad,
    )
    ours, keras_adam = FusedAdam(**options), keras.optimizers.Adam(**options)
    dense = slice(1, 2)
    got = _train(ours, which=dense)
    want = _train(keras_adam, which=dense)
    # Eager steps: one kernel call per step, none with amsgrad.
    assert kernel_calls == ([] if amsgrad else [(4,)] * 5)
    _assert_same(ours, keras_adam, got, want)
    assert not np.allclose(got[0].numpy(), _variables()[1].numpy())


def _numpy_adam(variable, gradients, lr=0.1, b1=0.9, b2=0.999, eps=1e-7):
    """Adam (Kingma and Ba) in float64, Keras' epsilon placement."""
    w = variable.astype("float64")
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(gradients, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * np.sqrt(1 - b2**t) / (1 - b1**t) * m / (np.sqrt(v) + eps)
    return w


@pytest.mark.parametrize("amsgrad", [False, True])
def test_sparse_gradient_updates_as_its_dense_form(amsgrad, kernel_calls):
    ours = FusedAdam(0.1, amsgrad=amsgrad)
    keras_adam = keras.optimizers.Adam(0.1, amsgrad=amsgrad)
    got = _train(ours)
    # Keras' Adam given the dense gradients: row 1's two slices summed.
    want = _train(keras_adam, dense=True)
    if amsgrad:
        # Keras' own update, which squares each slice of row 1 apart: it
        # differs from the dense form there, nowhere else.
        assert kernel_calls == []
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(),
                                   rtol=1e-5, atol=2e-6)
        np.testing.assert_allclose(got[0].numpy()[[0, 2, 3, 4, 5]],
                                   want[0].numpy()[[0, 2, 3, 4, 5]],
                                   rtol=1e-5, atol=2e-6)
        return
    # One kernel call per variable a step, the sparse gradient's included.
    assert kernel_calls == [(6, 3), (4,)] * 5
    _assert_same(ours, keras_adam, got, want)
    dense = [tf.convert_to_tensor(_gradients(s)[0]).numpy() for s in range(5)]
    np.testing.assert_allclose(
        got[0].numpy(), _numpy_adam(_variables()[0].numpy(), dense),
        rtol=1e-5, atol=1e-6,
    )
    # Rows no gradient touched (0, 2, 3, 5) keep their values: their
    # moments stay zero; rows 1 and 4 moved.
    start = _variables()[0].numpy()
    np.testing.assert_array_equal(got[0].numpy()[[0, 2, 3, 5]],
                                  start[[0, 2, 3, 5]])
    assert not np.allclose(got[0].numpy()[[1, 4]], start[[1, 4]])
    # Keras' TensorFlow update of the sparse gradient itself squares row
    # 1's slices apart: a different second moment there.
    sparse_keras = keras.optimizers.Adam(0.1)
    other = _train(sparse_keras)
    assert not np.allclose(other[0].numpy()[1], got[0].numpy()[1],
                           rtol=1e-5, atol=1e-6)


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
    got, want = _train(ours, 3), _train(reference, 3, dense=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=2e-6)


def _mirrored_strategy():
    # Two replicas where the process has two logical CPUs (as
    # test_distribute configures), else one.
    devices = tf.config.list_logical_devices("CPU")
    return tf.distribute.MirroredStrategy(
        [d.name for d in devices[:2]] if len(devices) > 1 else None
    )


def _replica_values(strategy, make, start, gradient, steps=3):
    """Every replica's copy of a variable that starts at `start` after
    `steps` replica steps of optimizer `make(0.1)` applying `gradient()`
    (called inside the replica step)."""
    with strategy.scope():
        variable = keras.Variable(start)
        optimizer = make(0.1)
        optimizer.build([variable])

    @tf.function
    def step():
        def replica_step():
            optimizer.apply_gradients([(gradient(), variable)])

        strategy.run(replica_step)

    for _ in range(steps):
        step()
    return [
        np.asarray(v)
        for v in strategy.experimental_local_results(variable.value)
    ]


def test_mirrored_strategy_updates_every_replica():
    strategy = _mirrored_strategy()
    results = [
        _replica_values(strategy, make, np.ones((3,), "float32"),
                        lambda: tf.constant([1.0, -2.0, 0.5]))
        for make in (FusedAdam, keras.optimizers.Adam)
    ]
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    assert not np.allclose(results[0][0], 1.0)


def _embedding_gradient(dense=False):
    """An embedding's gradient (row 1 twice), or its dense form."""
    gradient = tf.IndexedSlices(
        tf.constant([[1.0, -2.0, 0.5], [0.3, 0.1, -1.0], [2.0, 0.0, 1.0]]),
        tf.constant([1, 4, 1]), tf.constant([6, 3]),
    )
    return tf.convert_to_tensor(gradient) if dense else gradient


def test_mirrored_strategy_sparse_gradient_is_its_dense_form():
    strategy = _mirrored_strategy()
    start = _variables()[0].numpy()
    results = [
        _replica_values(strategy, make, start,
                        lambda dense=dense: _embedding_gradient(dense))
        for make, dense in ((FusedAdam, False), (keras.optimizers.Adam, True))
    ]
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    # Every replica holds the same values; rows 1 and 4 moved.
    for replica in results[0][1:]:
        np.testing.assert_array_equal(replica, results[0][0])
    assert not np.allclose(results[0][0][[1, 4]], start[[1, 4]])
