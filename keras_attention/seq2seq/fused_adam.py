"""`FusedAdam`: Keras' Adam, each variable updated by one TensorFlow kernel.

Keras' `Adam.update_step` is a dozen element-wise ops per variable (two
moment updates, the square root, the division, the assignments), each a
pass over the variable: 12 % of the example's training step on a CPU
(`benchmarks/profile_step.py`). TensorFlow's `ResourceApplyAdam` kernel does
the same update in one pass:

    m <- m + (g - m) (1 - beta_1)
    v <- v + (g^2 - v) (1 - beta_2)
    w <- w - lr sqrt(1 - beta_2^t) / (1 - beta_1^t) m / (sqrt(v) + epsilon)

which is Keras' formula, term for term. Everything `keras.optimizers.Adam`
does around the update (clipping, schedules, loss scaling, EMA,
`tf.distribute`) is unchanged.

A sparse gradient (`tf.IndexedSlices`, an embedding's) is summed into its
dense form (the slices of a row repeated in the batch added up: the
gradient of the loss with respect to the variable) and goes through the
same kernel. That is Adam's update of the true gradient, the one Keras'
Adam makes on JAX and PyTorch (whose embedding gradients are dense) and
`tf.keras` 2 made (it summed repeated rows first). Keras 3's TensorFlow
update squares each slice before it adds the slices of a repeated row, so
its second moment differs where a row repeats within a batch; it also
makes about ten passes over the embedding matrix where the kernel makes
one. `amsgrad` and backends other than TensorFlow use Keras' own update.
"""

from typing import Any
from keras_attention.typing import Tensor

import keras


@keras.saving.register_keras_serializable(package="keras_attention")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose update is TensorFlow's fused kernel.

    Same arguments, slots and checkpoints as Keras' Adam, and the same
    results for dense gradients; an embedding's sparse gradient updates
    the variable as its dense form (repeated rows summed) would, as on
    Keras' other backends (see the module's docstring).
    """

    def update_step(
        self, gradient: Tensor, variable: Tensor, learning_rate: float
    ) -> Any:
        if self.amsgrad or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        if isinstance(gradient, tf.IndexedSlices):
            # The sum of the slices of each row (an UnsortedSegmentSum).
            gradient = tf.convert_to_tensor(gradient)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )


# The name the first saved models carry (it lived in `examples.nmt`), as an
# alias: they still load.
keras.saving.get_custom_objects()["examples.nmt>FusedAdam"] = FusedAdam
