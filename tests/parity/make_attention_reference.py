"""Writes attention_reference.npz: TFA 0.23's LuongAttention,
BahdanauAttention and AttentionWrapper on small hand-set weights.

Run with the TFA environment (Python 3.11, tensorflow-cpu 2.15.1,
tensorflow-addons 0.23.0), from the repository root:

    make .venv-tfa/.installed   # the TFA environment (see the Makefile)
    .venv-tfa/bin/python tests/parity/make_attention_reference.py

Every weight is drawn here and saved with the outputs, under the name of
the TFA variable it was assigned to (`<case>/memory_layer`, `<case>/v`,
...), so the test copies them into our layers without TFA. The memory has
`memory_sequence_length` [5, 3]: the padded positions must get zero
alignment. After the weights are set, `setup_memory` is called again,
because TFA projects the memory's keys once, when the memory is set up.
"""

import os

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa

BATCH, SOURCE, MEMORY_DIM = 2, 5, 6
UNITS, INPUT_DIM, STEPS = 4, 3, 4
LENGTHS = np.array([5, 3], dtype=np.int32)

rng = np.random.default_rng(20261201)


def draw(*shape):
    return (0.5 * rng.standard_normal(shape)).astype(np.float32)


MEMORY = draw(BATCH, SOURCE, MEMORY_DIM)
QUERY = draw(BATCH, UNITS)
INPUTS = draw(STEPS, BATCH, INPUT_DIM)
H0, C0 = draw(BATCH, UNITS), draw(BATCH, UNITS)
out = {
    "memory": MEMORY, "lengths": LENGTHS, "query": QUERY,
    "inputs": INPUTS, "h0": H0, "c0": C0,
}

# Mechanisms: (kind, option).
MECHANISMS = {
    "luong": ("luong", False),
    "luong_scaled": ("luong", True),
    "bahdanau": ("bahdanau", False),
    "bahdanau_normed": ("bahdanau", True),
}


def make_mechanism(name, kind, option):
    if kind == "luong":
        mech = tfa.seq2seq.LuongAttention(
            UNITS, MEMORY, memory_sequence_length=LENGTHS, scale=option
        )
    else:
        mech = tfa.seq2seq.BahdanauAttention(
            UNITS, MEMORY, memory_sequence_length=LENGTHS, normalize=option
        )
    # Builds every variable (the query layer at the first call).
    mech([tf.constant(QUERY), mech.initial_state(BATCH, tf.float32)])
    out[f"{name}/memory_layer"] = w = draw(MEMORY_DIM, UNITS)
    mech.memory_layer.kernel.assign(w)
    if kind == "luong":
        if option:
            out[f"{name}/g"] = g = np.float32(1.3)
            mech.scale_weight.assign(g)
    else:
        out[f"{name}/query_layer"] = w = draw(UNITS, UNITS)
        mech.query_layer.kernel.assign(w)
        out[f"{name}/v"] = v = draw(UNITS)
        mech.attention_v.assign(v)
        if option:
            out[f"{name}/g"] = g = np.float32(0.7)
            mech.attention_g.assign(g)
            out[f"{name}/b"] = b = draw(UNITS)
            mech.attention_b.assign(b)
    mech.setup_memory(MEMORY, memory_sequence_length=LENGTHS)
    return mech


for name, (kind, option) in MECHANISMS.items():
    mech = make_mechanism(name, kind, option)
    alignments, _ = mech(
        [tf.constant(QUERY), mech.initial_state(BATCH, tf.float32)]
    )
    out[f"{name}/alignments"] = alignments.numpy()

# Wrappers: (mechanism, attention_layer_size, output_attention).
WRAPPERS = {
    "wrap_luong": ("luong_scaled", 5, True),
    "wrap_luong_cell_out": ("luong", 5, False),
    "wrap_bahdanau": ("bahdanau_normed", None, True),
    "wrap_bahdanau_cell_out": ("bahdanau", 3, False),
}

for name, (mech_name, layer_size, output_attention) in WRAPPERS.items():
    mech = make_mechanism(name, *MECHANISMS[mech_name])
    cell = tf.keras.layers.LSTMCell(UNITS)
    wrapper = tfa.seq2seq.AttentionWrapper(
        cell,
        mech,
        attention_layer_size=layer_size,
        output_attention=output_attention,
        alignment_history=True,
    )

    def initial():
        state = wrapper.get_initial_state(batch_size=BATCH, dtype=tf.float32)
        return state.clone(cell_state=[tf.constant(H0), tf.constant(C0)])

    wrapper(tf.constant(INPUTS[0]), initial())  # builds the cell and layer
    attention_size = layer_size or MEMORY_DIM
    cell_in = INPUT_DIM + attention_size
    out[f"{name}/kernel"] = k = draw(cell_in, 4 * UNITS)
    out[f"{name}/recurrent_kernel"] = rk = draw(UNITS, 4 * UNITS)
    out[f"{name}/bias"] = b = draw(4 * UNITS)
    cell.kernel.assign(k)
    cell.recurrent_kernel.assign(rk)
    cell.bias.assign(b)
    if layer_size is not None:
        # TFA's attention layer: Dense(no bias) of [cell_output; context].
        out[f"{name}/attention_layer"] = w = draw(
            UNITS + MEMORY_DIM, layer_size
        )
        wrapper._attention_layers[0].kernel.assign(w)
    state = initial()
    outputs, attentions, hs, cs = [], [], [], []
    for t in range(STEPS):
        output, state = wrapper(tf.constant(INPUTS[t]), state)
        outputs.append(output.numpy())
        attentions.append(state.attention.numpy())
        hs.append(state.cell_state[0].numpy())
        cs.append(state.cell_state[1].numpy())
    out[f"{name}/outputs"] = np.stack(outputs)
    out[f"{name}/attention"] = np.stack(attentions)
    out[f"{name}/h"] = np.stack(hs)
    out[f"{name}/c"] = np.stack(cs)
    out[f"{name}/alignment_history"] = state.alignment_history.stack().numpy()
    out[f"{name}/alignments"] = state.alignments.numpy()

path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "attention_reference.npz")
np.savez_compressed(path, **out)
print("wrote", path, os.path.getsize(path), "bytes,",
      "tfa", tfa.__version__, "tf", tf.__version__)
