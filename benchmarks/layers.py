"""Layer benchmarks: our layers against the closest Keras constructions.

Each case times one training step (forward and backward: the gradients of
`sum(context * r)` with respect to the query, the value and every weight)
of each construction at the same shapes, in one `tf.function`, side by side
(see `benchmarks.common`). The constructions compute the same maths:

| ours                           | Keras construction                                      |
|--------------------------------|---------------------------------------------------------|
| `DotAttention()`               | `keras.layers.Attention()`                              |
| `MultiplicativeAttention()`    | `Dense(dim, use_bias=False)` on the keys, then `Attention()` |
| `AdditiveAttention(units, use_bias=False)` | `Dense(units, use_bias=False)` on queries and keys, then `AdditiveAttention(use_scale=True)` (its `scale` is `v`), the TensorFlow NMT tutorial's Bahdanau layer |
| (reference for both Luong scores) | `MultiHeadAttention(num_heads=1, key_dim=dim)`     |
"""

import keras
import numpy as np
import tensorflow as tf

import keras_attention
from benchmarks import common

KINDS = ("dot", "multiplicative", "additive")


class Construction:
    """A callable `(query, value) -> (context, weights)` and its weights."""

    def __init__(self, name, layers, fn):
        self.name = name
        self.layers = layers
        self.fn = fn

    def __call__(self, query, value):
        return self.fn(query, value)

    @property
    def variables(self):
        out = []
        for layer in self.layers:
            out.extend(layer.trainable_variables)
        return out


def ours(kind, dim):
    if kind == "dot":
        layer = keras_attention.DotAttention()
    elif kind == "multiplicative":
        layer = keras_attention.MultiplicativeAttention()
    elif kind == "additive":
        layer = keras_attention.AdditiveAttention(dim, use_bias=False)
    else:
        raise ValueError(f"Unknown kind: {kind}")
    return Construction(f"ours_{kind}", [layer], lambda q, v: layer(q, v))


def keras_construction(kind, dim):
    """The closest construction of the same maths from Keras built-ins."""
    if kind == "dot":
        att = keras.layers.Attention()
        return Construction(
            "keras_attention_dot",
            [att],
            lambda q, v: att([q, v], return_attention_scores=True),
        )
    if kind == "multiplicative":
        att = keras.layers.Attention()
        proj = keras.layers.Dense(dim, use_bias=False)
        return Construction(
            "keras_dense_attention",
            [proj, att],
            lambda q, v: att([q, v, proj(v)], return_attention_scores=True),
        )
    if kind == "additive":
        att = keras.layers.AdditiveAttention(use_scale=True)
        w_query = keras.layers.Dense(dim, use_bias=False)
        w_key = keras.layers.Dense(dim, use_bias=False)
        return Construction(
            "keras_dense_additive",
            [w_query, w_key, att],
            lambda q, v: att(
                [w_query(q), v, w_key(v)], return_attention_scores=True
            ),
        )
    raise ValueError(f"Unknown kind: {kind}")


def keras_mha(dim):
    mha = keras.layers.MultiHeadAttention(num_heads=1, key_dim=dim)
    return Construction(
        "keras_mha_1head",
        [mha],
        lambda q, v: mha(q, v, return_attention_scores=True),
    )


def train_step(construction):
    """A `tf.function` of one forward and backward pass."""

    @tf.function
    def step(query, value, cotangent):
        with tf.GradientTape() as tape:
            tape.watch([query, value])
            context, _ = construction(query, value)
            loss = tf.reduce_sum(tf.cast(context, "float32") * cotangent)
        return tape.gradient(loss, [query, value] + construction.variables)

    return step


def forward_step(construction):
    @tf.function
    def step(query, value):
        return construction(query, value)

    return step


def make_inputs(batch, target, source, dim, seed=0):
    rng = np.random.default_rng(seed)
    query = tf.constant(rng.normal(size=(batch, target, dim)), "float32")
    value = tf.constant(rng.normal(size=(batch, source, dim)), "float32")
    cotangent = tf.constant(rng.normal(size=(batch, target, dim)), "float32")
    return query, value, cotangent


def build(construction, query, value):
    """Builds the weights eagerly on a small slice of the inputs."""
    construction(query[:1, :2], value[:1, :2])


def estimated_keras_bytes(kind, batch, target, source, dim):
    """Rough peak of the Keras construction's step, to fit the machine.

    The Keras additive score holds about four `batch*Tq*S*dim` float32
    tensors at once in its backward pass (measured: 3.8 at 8x256x256x256);
    the others hold a few `batch*Tq*S` and `batch*S*dim` tensors.
    """
    if kind == "additive":
        return 4 * 4 * batch * target * source * dim
    return 4 * (6 * batch * target * source + 8 * batch * (target + source) * dim)


def fit_batch(kind, batch, target, source, dim, budget_bytes):
    """The largest batch (halving from `batch`) whose estimate fits."""
    while batch > 1 and estimated_keras_bytes(
        kind, batch, target, source, dim
    ) > budget_bytes:
        batch //= 2
    return batch


def time_and_memory(constructions, inputs, warmup, repeats,
                    min_seconds=0.0):
    """`(times, peak bytes)` of the train step of each construction on
    `inputs` (`make_inputs`), by name: the steps timed interleaved
    (`common.interleaved`), then the peak memory of each."""
    query, value, cotangent = inputs
    steps = {}
    for c in constructions:
        build(c, query, value)
        steps[c.name] = train_step(c)
    calls = {
        name: (lambda s=s: s(query, value, cotangent))
        for name, s in steps.items()
    }
    times = common.interleaved(
        calls, warmup=warmup, repeats=repeats, min_seconds=min_seconds
    )
    memory = {
        name: common.peak_memory(s, query, value, cotangent)
        for name, s in steps.items()
    }
    return times, memory


def compare_case(kind, batch, target, source, dim, warmup, repeats, with_mha,
                 min_seconds=0.0):
    """Times and peak memory of ours against Keras at one shape."""
    constructions = [ours(kind, dim), keras_construction(kind, dim)]
    if with_mha:
        constructions.append(keras_mha(dim))
    times, memory = time_and_memory(
        constructions, make_inputs(batch, target, source, dim), warmup,
        repeats, min_seconds,
    )
    ours_name, keras_name = constructions[0].name, constructions[1].name
    row = {
        "kind": kind,
        "batch": batch,
        "target": target,
        "source": source,
        "dim": dim,
        "ours": ours_name,
        "keras": keras_name,
        "time_s": {n: common.median(t) for n, t in times.items()},
        "peak_bytes": memory,
        "time_ratio": common.paired_ratio(times[ours_name], times[keras_name]),
        "memory_ratio": memory[ours_name] / max(1, memory[keras_name]),
        "rounds": len(times[ours_name]),
    }
    if with_mha:
        row["time_ratio_vs_mha"] = common.paired_ratio(
            times[ours_name], times["keras_mha_1head"]
        )
    return row


def run_layers(config, log=print):
    rows = []
    for dim in config["dims"]:
        for length in config["lengths"]:
            for kind in KINDS:
                batch = fit_batch(
                    kind,
                    config["batch"],
                    length,
                    length,
                    dim,
                    config["memory_budget_bytes"],
                )
                row = compare_case(
                    kind,
                    batch,
                    length,
                    length,
                    dim,
                    config["warmup"],
                    config["repeats"],
                    with_mha=kind != "additive" and config["with_mha"],
                    min_seconds=config.get("min_seconds", 0.0),
                )
                rows.append(row)
                log(
                    f"  {kind:14s} b={batch:3d} T=S={length:4d} d={dim:4d}: "
                    f"time x{row['time_ratio']:.2f}, "
                    f"memory x{row['memory_ratio']:.2f}"
                )
    return rows


# ----------------------------------------------------------------------
# Efficiency against a plain batched matmul.


def layer_flops(kind, batch, target, source, dim, backward=True):
    """Matmul FLOPs of a layer step (softmax and elementwise work excluded).

    Forward: `Q K^T` and `A V`, `2 * 2 * B*T*S*d`; the backward pass needs
    four more products of the same size (`dQ`, `dK`, `dA`, `dV`). The
    multiplicative layer adds the key projection `B*S*d*d` (one product
    forward, two backward).
    """
    attention = 2 * 2 * batch * target * source * dim
    projection = 2 * batch * source * dim * dim if kind == "multiplicative" else 0
    if backward:
        return 3 * (attention + projection)
    return attention + projection


def run_efficiency(config, log=print):
    rows = []
    batch = config["batch"]
    for dim in config["dims"]:
        for length in config["lengths"]:
            query, value, cotangent = make_inputs(batch, length, length, dim)
            a = query
            b = tf.transpose(value, (0, 2, 1))

            @tf.function
            def matmul(a, b):
                return tf.matmul(a, b)

            constructions = {k: ours(k, dim) for k in ("dot", "multiplicative")}
            calls = {"matmul": lambda: matmul(a, b)}
            for kind, c in constructions.items():
                build(c, query, value)
                train = train_step(c)
                forward = forward_step(c)
                calls[f"{kind}_train"] = (
                    lambda s=train: s(query, value, cotangent)
                )
                calls[f"{kind}_forward"] = lambda s=forward: s(query, value)
            times = common.interleaved(
                calls,
                warmup=config["warmup"],
                repeats=config["repeats"],
                min_seconds=config.get("min_seconds", 0.0),
            )
            mm_flops = 2 * batch * length * length * dim
            mm_rate = mm_flops / common.median(times["matmul"])
            row = {
                "batch": batch,
                "target": length,
                "source": length,
                "dim": dim,
                "matmul_gflops": mm_rate / 1e9,
            }
            for kind in constructions:
                for mode, backward in (("train", True), ("forward", False)):
                    flops = layer_flops(
                        kind, batch, length, length, dim, backward=backward
                    )
                    # Per-round efficiency: (flops / t_layer) / (mm / t_mm).
                    eff = common.median(
                        (flops / t) / (mm_flops / m)
                        for t, m in zip(
                            times[f"{kind}_{mode}"], times["matmul"]
                        )
                    )
                    row[f"{kind}_{mode}_gflops"] = (
                        flops / common.median(times[f"{kind}_{mode}"]) / 1e9
                    )
                    row[f"{kind}_{mode}_efficiency"] = eff
            rows.append(row)
            log(
                f"  T=S={length:4d} d={dim:4d}: matmul "
                f"{row['matmul_gflops']:.1f} GFLOP/s, dot train "
                f"{row['dot_train_efficiency']:.0%}, dot forward "
                f"{row['dot_forward_efficiency']:.0%}"
            )
    return rows


# ----------------------------------------------------------------------
# Scaling with the source length.


def run_scaling(config, log=print):
    rows = []
    batch, target, dim = config["batch"], config["target"], config["dim"]
    for source in config["sources"]:
        constructions = [ours(k, dim) for k in KINDS]
        if (
            estimated_keras_bytes("additive", batch, target, source, dim)
            <= config["memory_budget_bytes"]
        ):
            constructions.append(keras_construction("additive", dim))
        times, memory = time_and_memory(
            constructions, make_inputs(batch, target, source, dim),
            config["warmup"], config["repeats"],
        )
        row = {
            "batch": batch,
            "target": target,
            "source": source,
            "dim": dim,
            "time_s": {n: common.median(t) for n, t in times.items()},
            "peak_bytes": memory,
        }
        rows.append(row)
        log(
            f"  S={source:5d}: "
            + ", ".join(
                f"{n} {row['time_s'][n] * 1e3:.1f} ms "
                f"{memory[n] / 2**20:.0f} MiB"
                for n in memory
            )
        )
    return rows
