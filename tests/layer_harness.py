"""Shared test helpers: gradients on every backend, the layer harness.

`gradients(fn, *inputs)` differentiates a function of numpy inputs on the
TensorFlow, JAX and PyTorch backends alike. `run_layer_test` checks what
every layer of the package owes, in the manner of Keras'
`testing.TestCase.run_layer_test`.
"""

import keras
import numpy as np
from keras import ops


# Whether a test's `compile` should run eagerly: TensorFlow and PyTorch start
# a tiny `fit` faster eagerly, while JAX compiles each eager op on its first
# call (tens of milliseconds each): one jitted train step starts several
# times faster there.
RUN_EAGERLY = keras.backend.backend() != "jax"


def to_np(x):
    """A tensor (any backend, any float dtype) as a float64 numpy array."""
    return ops.convert_to_numpy(ops.cast(x, "float32")).astype(np.float64)


def _loss(outputs):
    total = 0.0
    for o in keras.tree.flatten(outputs):
        if "float" in keras.backend.standardize_dtype(o.dtype):
            total = total + ops.sum(ops.square(ops.cast(o, "float32")))
    return total


def gradients(fn, *inputs):
    """`fn(*inputs)` and the gradients of a scalar of it w.r.t. `inputs`.

    The scalar is the sum of squares of every floating output. Runs on the
    current Keras backend (`tf.GradientTape`, `jax.grad`, torch autograd).

    Returns:
        `(outputs, grads)`, `grads` a list with one gradient per input.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        xs = [tf.convert_to_tensor(x) for x in inputs]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            outputs = fn(*xs)
            loss = _loss(outputs)
        return outputs, tape.gradient(loss, xs)
    if backend == "jax":
        import jax

        def loss(*xs):
            outputs = fn(*xs)
            return _loss(outputs), outputs

        argnums = tuple(range(len(inputs)))
        (_, outputs), grads = jax.value_and_grad(
            loss, argnums=argnums, has_aux=True
        )(*[ops.convert_to_tensor(x) for x in inputs])
        return outputs, list(grads)
    xs = [ops.convert_to_tensor(x) for x in inputs]
    for x in xs:
        x.requires_grad_(True)
    outputs = fn(*xs)
    _loss(outputs).backward()
    return outputs, [x.grad for x in xs]


def _random(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _flat_shapes(outputs):
    return [tuple(o.shape) for o in keras.tree.flatten(outputs)]


def _assert_same(got, want, atol=1e-6):
    got, want = keras.tree.flatten(got), keras.tree.flatten(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_np(g), to_np(w), atol=atol)


def _seed_generators(layer):
    return [
        v
        for v in vars(layer).values()
        if isinstance(v, keras.random.SeedGenerator)
    ]


def run_layer_test(
    make_layer,
    input_shapes,
    expected_output_shapes,
    expected_num_trainable_weights,
    expected_num_seed_generators=0,
    call_kwargs=None,
    masks=None,
    tmp_path=None,
    run_fit=True,
    dtype_policies=("mixed_float16", "mixed_bfloat16"),
):
    """Checks what every layer of the package owes.

    Build from shapes; a symbolic call on `keras.Input`s and an eager call
    give the expected output shapes (and `compute_output_shape` agrees); the
    expected numbers of trainable weights and seed generators; a call with
    masks; `get_config` -> `from_config` gives the same config and, with
    the same weights, the same outputs; the layer is registered under
    `keras_attention`; a `.keras` file round trip with `safe_mode=True`;
    one `fit` step changes the weights; under each dtype policy the outputs
    have the compute dtype, are finite, and the variables stay float32.

    Args:
        make_layer: `make_layer(**kwargs)` returns a fresh layer; `dtype`
            is passed for the dtype policies.
        input_shapes: Dict from call argument name to a full shape (batch
            included), in call order.
        expected_output_shapes: The shapes of the flattened outputs.
        expected_num_trainable_weights: After `build`.
        expected_num_seed_generators: Seed generators the layer owns.
        call_kwargs: Extra call keyword arguments (not tensors).
        masks: Optional dict from call argument name to a numpy mask, for
            the masked call.
        tmp_path: A folder for the `.keras` file; `None` skips the round
            trip.
        run_fit: Whether to run one `fit` step.
        dtype_policies: The dtype policies to call the layer under.
    """
    call_kwargs = dict(call_kwargs or {})
    names = list(input_shapes)
    shapes = [tuple(input_shapes[n]) for n in names]
    data = {n: _random(s, i) for i, (n, s) in enumerate(zip(names, shapes))}
    expected = [tuple(s) for s in expected_output_shapes]

    # Build from shapes.
    layer = make_layer()
    layer.build(*shapes)
    assert layer.built
    assert len(layer.trainable_weights) == expected_num_trainable_weights
    assert len(_seed_generators(layer)) == expected_num_seed_generators
    own_shape = type(layer).compute_output_shape
    if own_shape is not keras.layers.Layer.compute_output_shape:
        computed = layer.compute_output_shape(*shapes)
        if isinstance(computed[0], int) or computed[0] is None:
            computed = [computed]
        assert [tuple(s) for s in computed] == expected

    # Symbolic call on keras.Input, then eager.
    inputs = {
        n: keras.Input(s[1:], batch_size=s[0], name=n)
        for n, s in zip(names, shapes)
    }
    symbolic = make_layer()
    outputs = symbolic(**inputs, **call_kwargs)
    assert _flat_shapes(outputs) == expected
    eager = layer(**data, **call_kwargs)
    assert _flat_shapes(eager) == expected
    for o in keras.tree.flatten(eager):
        assert np.all(np.isfinite(to_np(o)))
    if masks:
        masked = layer(**data, **masks, **call_kwargs)
        assert _flat_shapes(masked) == expected
        for o in keras.tree.flatten(masked):
            assert np.all(np.isfinite(to_np(o)))

    # Config round trip: same config, same outputs with the same weights.
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    clone.build(*shapes)
    clone.set_weights(layer.get_weights())
    _assert_same(clone(**data, **call_kwargs), eager)
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == (
        f"keras_attention>{type(layer).__name__}"
    )

    # `.keras` round trip in safe mode.
    model = keras.Model(list(inputs.values()), outputs)
    if tmp_path is not None:
        expected_values = model(data)
        path = str(tmp_path / f"{type(layer).__name__}.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
        _assert_same(loaded(data), expected_values)

    # One fit step on the first output.
    if run_fit:
        first = keras.tree.flatten(outputs)[0]
        train = keras.Model(list(inputs.values()), first)
        train.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        before = [to_np(w) for w in train.trainable_weights]
        target = _random((shapes[0][0],) + tuple(first.shape[1:]), 99)
        history = train.fit(
            data, target, batch_size=shapes[0][0], epochs=1, verbose=0
        )
        assert np.isfinite(history.history["loss"][0])
        after = [to_np(w) for w in train.trainable_weights]
        if before:
            assert any(np.any(a != b) for a, b in zip(after, before))

    # Dtype policies.
    for policy in dtype_policies:
        mixed = make_layer(dtype=policy)
        result = mixed(**data, **call_kwargs)
        compute = keras.dtype_policies.get(policy).compute_dtype
        for o in keras.tree.flatten(result):
            assert keras.backend.standardize_dtype(o.dtype) == compute
            assert np.all(np.isfinite(to_np(o)))
        assert all(
            keras.backend.standardize_dtype(w.dtype) == "float32"
            for w in mixed.weights
        )
