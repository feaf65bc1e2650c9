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
`tf.distribute`) is unchanged. Sparse gradients (`tf.IndexedSlices`, an
embedding's), `amsgrad` and backends other than TensorFlow use Keras' own
update: for a sparse gradient Keras squares each slice before it sums the
slices of a repeated row, which the dense kernel cannot reproduce.
"""

from typing import Any
from keras_attention.typing import Tensor

import keras


@keras.saving.register_keras_serializable(package="keras_attention")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose update is TensorFlow's fused kernel.

    Same arguments, slots, results and checkpoints as Keras' Adam.
    """

    def update_step(
        self, gradient: Tensor, variable: Tensor, learning_rate: float
    ) -> Any:
        if self.amsgrad or keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        if isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
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
