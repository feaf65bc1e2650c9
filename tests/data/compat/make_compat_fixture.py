"""Writes `layers_v1.keras` and `layers_v1.npz`, the compatibility fixture.

A tiny model with every attention layer of the package, the RNN wrappers
and `keras_attention.LSTM`, saved with the code of the time, and its outputs
on a fixed input. `tests/test_compat_fixture.py` loads the file with
`safe_mode=True` and checks that today's code gives the same outputs, so
layer names, weight names and weight order stay loadable.

Run from the repository root (TensorFlow backend):

    KERAS_BACKEND=tensorflow python tests/data/compat/make_compat_fixture.py
"""

import os

import keras
import numpy as np

import keras_attention

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_LEN, TARGET_LEN, FEATURES, UNITS = 5, 3, 4, 6


def build_model() -> keras.Model:
    keras.utils.set_random_seed(1)
    source = keras.Input((SOURCE_LEN, FEATURES), name="source")
    target = keras.Input((TARGET_LEN, FEATURES), name="target")
    memory = keras.layers.Masking(0.0)(source)
    memory = keras_attention.LSTM(UNITS, return_sequences=True)(memory)
    query = keras.layers.Dense(UNITS)(target)
    dot, _ = keras_attention.DotAttention(use_scale=True)(query, memory)
    general, _ = keras_attention.MultiplicativeAttention()(query, memory)
    additive, _ = keras_attention.AdditiveAttention(
        4, normalize=True
    )(query, memory)
    location, _ = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(UNITS),
            keras_attention.LocationSensitiveAttention(
                4, filters=2, kernel_size=3
            ),
            attention_layer_size=UNITS,
        )
    )(target, memory)
    bahdanau, _ = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.GRUCell(UNITS),
            keras_attention.BahdanauMonotonicAttention(
                4, normalize=True, score_bias_init=-1.0
            ),
            wiring="bahdanau",
        )
    )(target, memory)
    luong, _ = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(UNITS),
            keras_attention.LuongMonotonicAttention(
                UNITS, scale=True, mode="recursive"
            ),
        )
    )(target, memory)
    outputs = keras.layers.Concatenate()(
        [dot, general, additive, location, bahdanau, luong]
    )
    return keras.Model([source, target], outputs, name="compat")


def fixed_inputs():
    rng = np.random.default_rng(0)
    source = rng.normal(size=(2, SOURCE_LEN, FEATURES)).astype("float32")
    source[1, 3:] = 0.0  # masked source positions
    target = rng.normal(size=(2, TARGET_LEN, FEATURES)).astype("float32")
    return source, target


def main():
    model = build_model()
    source, target = fixed_inputs()
    outputs = keras.ops.convert_to_numpy(model([source, target]))
    model.save(os.path.join(HERE, "layers_v1.keras"))
    np.savez(
        os.path.join(HERE, "layers_v1.npz"),
        source=source,
        target=target,
        outputs=outputs,
    )
    print("outputs", outputs.shape, "finite", np.isfinite(outputs).all())


if __name__ == "__main__":
    main()
