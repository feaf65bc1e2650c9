"""Shared test helpers: gradients on every backend, the layer harness.

`gradients(fn, *inputs)` differentiates a function of numpy inputs on the
TensorFlow, JAX and PyTorch backends alike. `run_layer_test` checks what
every layer of the package owes, in the manner of Keras'
`testing.TestCase.run_layer_test`.
"""

import keras
import numpy as np
from keras import ops


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
