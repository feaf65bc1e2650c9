"""Small layers of the NMT example's model (`model.Seq2Seq`).

Registered, so that the example's models save to `.keras` and load back
with `safe_mode=True` without `custom_objects`.
"""

import keras
from keras import ops


# Registered under its first name, so that saved models still load.
@keras.saving.register_keras_serializable(package="nmt", name="_DropMask")
class DropMask(keras.layers.Layer):
    """Identity that removes the Keras mask.

    Registered so that the example's models save to `.keras` and load back
    with `safe_mode=True` without `custom_objects`.
    """

    def __init__(self, **kwargs):
        # No autocast: the float32 logits stay float32 under mixed precision.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        # A new tensor: the input tensor object itself carries the mask.
        return ops.copy(inputs)

    def compute_mask(self, inputs, mask=None):
        return None


@keras.saving.register_keras_serializable(package="nmt")
class BridgeDropout(keras.layers.Layer):
    """In training, zeroes the bridge (all its states) of a random share
    `rate` of the sentences: their decoder starts from zeros and can learn
    about the source only through the attention. Identity in inference.
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, states, training=False):
        if not training:
            return [ops.copy(s) for s in states]
        batch = ops.shape(states[0])[0]
        draw = keras.random.uniform((batch, 1), seed=self.seed_generator)
        keep = ops.cast(ops.greater_equal(draw, self.rate), states[0].dtype)
        return [s * keep for s in states]

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed})
        return config
