"""`CompiledGenerate`: `Seq2Seq.generate`'s decoding, compiled once.

One compiled function per strategy and Python-valued options
(`static_key`), as KerasHub's `make_generate_function`: `tf.function` on
TensorFlow, `jax.jit` on JAX, `torch.no_grad()` on PyTorch (see the
class). `is_traced` tells whether `generate` runs inside a trace already.
"""

import numbers
from typing import Any
from typing import Callable
from typing import Optional
from keras_attention.typing import Tensor

import keras
from keras import ops

# The compiled decoding functions a model keeps (one per strategy and
# options), the oldest dropped first.
MAX_COMPILED = 32
# The decode buffers hold at most this many elements (`decoding` raises
# beyond it); larger requests decode eagerly, where it raises.
_INT32_MAX = 2**31 - 1

def static_key(strategy: str, max_length: Any, options: dict) -> Any:
    """The cache key of Python-valued options (their types included: `1`
    and `True` differ), or `None` where one is not a Python value."""
    values = dict(options, max_length=max_length)
    for value in values.values():
        if not (
            value is None
            or isinstance(
                value, (bool, str, numbers.Number, keras.random.SeedGenerator)
            )
            or (
                isinstance(value, tuple)
                and all(isinstance(v, numbers.Integral) for v in value)
            )
        ):
            return None
    return (strategy,) + tuple(
        (name, type(value).__name__, value)
        for name, value in sorted(values.items())
    )


def is_traced(source_ids: Tensor) -> bool:
    """Whether `generate` runs inside a function being traced (the outer
    trace then compiles the decoder)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.inside_function()
    if backend == "jax":
        import jax

        return isinstance(source_ids, jax.core.Tracer)
    return False


class CompiledGenerate:
    """`generate`'s decoding for one strategy and its options, compiled:
    `function(source_ids) -> dict`.

    TensorFlow: a `tf.function` over int32 `(batch, S)` of any sizes (one
    trace); the model's variables are captured by reference, so it follows
    new weights. JAX: `jax.jit` of a stateless function of the variables'
    values (passed at every call, the current ones) and the source ids,
    under a `keras.StatelessScope` (Keras' JAX trainer does the same);
    JAX traces once per input shape. The random state of sampling (a
    `keras.random.SeedGenerator`) is an input and an output there, written
    back after the call. PyTorch: the eager decoder under `torch.no_grad()`.

    Attributes:
        traces: How many times the decoding was traced.
    """

    def __init__(
        self,
        model: Any,
        decode: Callable[[Tensor], dict],
        generator: Optional[keras.random.SeedGenerator] = None,
    ):
        self.traces = 0
        self._model = model
        self._variables = list(model.variables)

        def traced(source_ids: Tensor) -> dict:
            self.traces += 1
            return decode(source_ids)

        backend = keras.backend.backend()
        if backend == "tensorflow":
            import tensorflow as tf

            self._call = tf.function(
                traced,
                input_signature=[
                    tf.TensorSpec([None, None], tf.int32, name="source_ids")
                ],
                # No autograph: the loop is an explicit while loop.
                autograph=False,
            )
        elif backend == "jax":
            self._call = self._jax(traced, generator)
        else:
            import torch

            def call(source_ids: Tensor) -> dict:
                with torch.no_grad():
                    return decode(source_ids)

            self._call = call

    def _jax(
        self,
        traced: Callable[[Tensor], dict],
        generator: Optional[keras.random.SeedGenerator],
    ) -> Callable[[Tensor], dict]:
        import jax

        variables = list(self._variables)
        seeds = None if generator is None else generator.state
        if seeds is not None and not any(v is seeds for v in variables):
            variables.append(seeds)

        def stateless(values: list, source_ids: Tensor) -> tuple:
            mapping = list(zip(variables, values))
            with keras.StatelessScope(state_mapping=mapping) as scope:
                out = traced(source_ids)
                new_seeds = (
                    None if seeds is None else scope.get_current_value(seeds)
                )
            return out, new_seeds

        jitted = jax.jit(stateless)

        def call(source_ids: Tensor) -> dict:
            out, new_seeds = jitted([v.value for v in variables], source_ids)
            if seeds is not None:
                seeds.assign(new_seeds)
            return out

        return call

    def is_current(self) -> bool:
        """Whether the model still has the variables it was built over."""
        variables = self._model.variables
        return len(variables) == len(self._variables) and all(
            a is b for a, b in zip(variables, self._variables)
        )

    def fits(self, source_ids: Tensor, max_length: Any, options: dict) -> bool:
        """Whether the decode buffers surely fit a tensor (else the eager
        decoder checks them, with its error)."""
        if len(source_ids.shape) != 2:
            return False  # The eager decoder raises its own error.
        if not isinstance(max_length, numbers.Integral):
            return True
        copies = [
            int(options[name])
            for name in ("beam_width", "n_best")
            if isinstance(options.get(name), numbers.Integral)
        ]
        batch, length = (int(size) for size in ops.shape(source_ids))
        elements = (
            batch * max(copies + [4]) * max(length, 1) * max(max_length, 1)
        )
        return elements <= _INT32_MAX

    def __call__(self, source_ids: Tensor) -> dict:
        return self._call(ops.convert_to_tensor(source_ids, "int32"))
