"""Generates `monotonic_reference.npz`, TFA 0.23's monotonic attention numbers.

Run with the TFA reference environment (Python 3.11, tensorflow-cpu 2.15.1,
tensorflow-addons 0.23.0, numpy<2), from the repository root:

    make .venv-tfa/.installed   # the TFA environment (see the Makefile)
    .venv-tfa/bin/python tests/parity/make_monotonic_reference.py

It is deterministic (fixed numpy seed, weights set explicitly, no sigmoid
noise) and writes `tests/parity/monotonic_reference.npz`, which
`tests/test_monotonic_attention.py` reads; the tests never import TFA.

Contents, for each case `{bahdanau,bahdanau_normalize,luong,luong_scale}_
{parallel,recursive,hard}`:
    `<case>/weights/<name>`: the weights, under our layers' names.
    `<case>/alignments`, `<case>/contexts`: `(steps, batch, S)` and
    `(steps, batch, Dv)`, from TFA's mechanism fed back its own state.
Shared: `memory`, `memory_sequence_length`, `queries` `(steps, batch, Dq)`.
And for the pure functions: `fn/p_choose`, `fn/previous`,
`fn/{parallel,recursive}`, `fn/p_hard`, `fn/previous_hard`, `fn/hard`,
`fn/cumprod_x`, `fn/safe_cumprod`, `fn/safe_cumprod_exclusive`.
"""

import os

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa
from tensorflow_addons.seq2seq import attention_wrapper as tfa_aw

BATCH, SOURCE, MEMORY_DIM, QUERY_DIM, UNITS, STEPS = 3, 7, 5, 4, 4, 5
LENGTHS = [7, 4, 2]
OUT = os.path.join(os.path.dirname(__file__), "monotonic_reference.npz")


def dense(kernel):
    return tf.keras.layers.Dense(
        kernel.shape[1],
        use_bias=False,
        kernel_initializer=tf.constant_initializer(kernel),
        dtype="float32",
    )


def run_case(energy, flag, mode, rng, memory, queries, out):
    case = f"{energy}{'_' + flag if flag else ''}_{mode}"
    key_kernel = rng.normal(0, 0.8, (MEMORY_DIM, UNITS)).astype("float32")
    weights = {"key_kernel": key_kernel}
    score_bias = np.float32(rng.normal(0, 0.5))
    if energy == "bahdanau":
        query_kernel = rng.normal(0, 0.8, (QUERY_DIM, UNITS)).astype("float32")
        v = rng.normal(0, 1.0, (UNITS,)).astype("float32")
        weights.update(query_kernel=query_kernel, score_kernel=v)
        mech = tfa.seq2seq.BahdanauMonotonicAttention(
            UNITS,
            memory=memory,
            memory_sequence_length=LENGTHS,
            normalize=flag == "normalize",
            score_bias_init=float(score_bias),
            mode=mode,
            kernel_initializer=tf.constant_initializer(v),
            query_layer=dense(query_kernel),
            memory_layer=dense(key_kernel),
        )
    else:
        mech = tfa.seq2seq.LuongMonotonicAttention(
            UNITS,
            memory=memory,
            memory_sequence_length=LENGTHS,
            scale=flag == "scale",
            score_bias_init=float(score_bias),
            mode=mode,
            memory_layer=dense(key_kernel),
        )
    state = mech.initial_state(BATCH, tf.float32)
    mech([queries[0], state])  # Builds the remaining weights.
    weights["score_bias"] = score_bias
    if flag == "normalize":
        weights["score_gain"] = np.float32(0.3 + rng.uniform())
        weights["bias"] = rng.normal(0, 0.3, (UNITS,)).astype("float32")
        mech.attention_g.assign(weights["score_gain"])
        mech.attention_b.assign(weights["bias"])
    if flag == "scale":
        weights["score_gain"] = np.float32(0.5 + rng.uniform())
        mech.attention_g.assign(weights["score_gain"])
    alignments, contexts = [], []
    for query in queries:
        context, alignment, state = tfa_aw._compute_attention(
            mech, tf.constant(query), state, None
        )
        alignments.append(alignment.numpy())
        contexts.append(context.numpy())
    for name, value in weights.items():
        out[f"{case}/weights/{name}"] = np.asarray(value, "float32")
    out[f"{case}/alignments"] = np.stack(alignments)
    out[f"{case}/contexts"] = np.stack(contexts)
    assert np.all(np.isfinite(out[f"{case}/alignments"])), case


def functions(rng, out):
    p = rng.uniform(0, 1, (BATCH, SOURCE)).astype("float32")
    p[0, 3] = 1e-8  # Near 0 and 1: where the parallel form is inexact.
    p[1, 2] = 1.0 - 1e-6
    previous = rng.uniform(0, 1, (BATCH, SOURCE)).astype("float32")
    previous /= previous.sum(axis=1, keepdims=True) * 1.25
    out["fn/p_choose"], out["fn/previous"] = p, previous
    for mode in ("parallel", "recursive"):
        out[f"fn/{mode}"] = tfa.seq2seq.monotonic_attention(
            p, previous, mode
        ).numpy()
    p_hard = (rng.uniform(0, 1, (BATCH, SOURCE)) > 0.6).astype("float32")
    previous_hard = np.eye(SOURCE, dtype="float32")[[0, 2, 5]]
    out["fn/p_hard"], out["fn/previous_hard"] = p_hard, previous_hard
    out["fn/hard"] = tfa.seq2seq.monotonic_attention(
        p_hard, previous_hard, "hard"
    ).numpy()
    x = rng.uniform(0, 1, (BATCH, SOURCE)).astype("float32")
    x[0, 1] = 0.0
    out["fn/cumprod_x"] = x
    out["fn/safe_cumprod"] = tfa.seq2seq.safe_cumprod(x, axis=1).numpy()
    out["fn/safe_cumprod_exclusive"] = tfa.seq2seq.safe_cumprod(
        x, axis=1, exclusive=True
    ).numpy()


def main():
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(20170401)
    memory = rng.normal(0, 1, (BATCH, SOURCE, MEMORY_DIM)).astype("float32")
    queries = rng.normal(0, 1, (STEPS, BATCH, QUERY_DIM)).astype("float32")
    out = {
        "memory": memory,
        "memory_sequence_length": np.asarray(LENGTHS, "int32"),
        "queries": queries,
    }
    cases = (("bahdanau", ("", "normalize")), ("luong", ("", "scale")))
    for energy, flags in cases:
        for flag in flags:
            for mode in ("parallel", "recursive", "hard"):
                run_case(energy, flag, mode, rng, memory, queries, out)
    functions(rng, out)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT}: {len(out)} arrays, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
