"""Training and decoding speed against TFA 0.23 and the TF tutorial model.

    python -m benchmarks.peers [--quick] [--out DIR] [--tfa-python PATH] [--no-jax]

(`make bench-peers` creates the TFA venv `.venv-tfa` first.) At the sizes of
TFA's NMT tutorial (vocabulary 5000, embedding 256, LSTM 256, batch 64,
source and target length 12, Adam, masked cross-entropy, one `tf.function`
train step) it measures target tokens per second of:

- TFA 0.23 `AttentionWrapper(LSTMCell)` + `BasicDecoder(TrainingSampler)`,
  Luong scaled and Bahdanau normed (`benchmarks/peers_tfa.py`, in its own
  process and venv with TensorFlow 2.15);
- ours, step-wise: `AttentionRNN(AttentionWrapper(LSTMCell, score))` with
  input feeding and TFA's attention layer (no activation);
- ours, sequence mode: LSTM decoder + attention + `AttentionalOutput`;
  our LSTMs are `keras_attention.LSTM` and the optimizer is the NMT
  example's `FusedAdam`, as in the example;
- ours again, fast variants (`FAST_VARIANTS`): under `mixed_bfloat16`
  (what the NMT example's `--mixed-precision auto` picks on a CPU with
  AVX512_BF16 or AMX), the vocabulary projection in bfloat16 as
  `Seq2Seq(projection_dtype="auto")` makes it, and again with a float32
  projection (the figures before that default), and
  float32 with XLA (`jit_compile=True`, now possible for `AttentionRNN`),
  and float32 with `keras.layers.LSTM`, Keras' `Adam` and Keras' cross-entropy
  (the figures before `keras_attention.LSTM`, `FusedAdam` and
  `sparse_cross_entropy`);
- the TensorFlow tutorial's architecture (bidirectional GRU encoder, GRU
  decoder, one-head `MultiHeadAttention` + residual + `LayerNormalization`);
- ours on JAX (`benchmarks/peers_jax.py`, in a process of its own with
  `KERAS_BACKEND=jax`; `--no-jax` leaves it out): the step-wise and
  sequence-mode models, float32, trained with Keras' `jit_compile=True`,
  and the greedy and beam decoders inside `jax.jit`: the speed a JAX user
  gets;

and decoding sentences per second (batch 1 and 64, greedy and beam 5, to a
fixed length: the end token's output bias is -1e4 on every side, so no
sentence stops early) of our step-wise model exported as a SavedModel
(and compiled with `jax.jit` on JAX) against TFA's `GreedyEmbeddingSampler` and `BeamSearchDecoder`; and, ours
only, what n-best lists (every beam with scores and attention), the
coverage penalty and a 2-model ensemble cost relative to plain beam 5
(`BEAM_OPTIONS`, in the same interleaved rounds).

Rounds interleave across the processes: one call at a time, in
alternating order, medians over rounds, ratios as medians of per-round
ratios (`benchmarks.common`). The matmul peak of the same machine, in the
same run (float32, and bfloat16), puts the sequence-mode step's FLOP/s
in proportion.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks import peers_models as models  # noqa: E402
from benchmarks.peers_models import COVERAGE_PENALTY  # noqa: E402
from benchmarks.peers_worker import Worker  # noqa: E402
import keras_attention as ka  # noqa: E402

# Our decoders that are timed against plain beam search (ours only).
BEAM_OPTIONS = {
    "nbest": "n-best (all {w} beams, scores, attention)",
    "coverage": f"beam {{w}} + coverage penalty {COVERAGE_PENALTY}",
    "ensemble": "beam {w}, ensemble of 2 models",
}

SIZES = {
    False: {
        "vocab": 5000,
        "embedding_dim": 256,
        "units": 256,
        "batch": 64,
        "source_length": 12,
        "target_length": 12,
        "decode_length": 24,
        "beam_width": 5,
        "decode_batches": [1, 64],
        "tfa_attentions": ["luong", "bahdanau"],
        "warmup": 2,
        "repeats": 9,
    },
    True: {
        "vocab": 500,
        "embedding_dim": 32,
        "units": 32,
        "batch": 16,
        "source_length": 8,
        "target_length": 8,
        "decode_length": 10,
        "beam_width": 3,
        "decode_batches": [1, 16],
        "tfa_attentions": ["luong", "bahdanau"],
        "warmup": 1,
        "repeats": 3,
    },
}


def matmul_peak(n=2048, repeats=5, dtype="float32"):
    """FLOP/s of an `n x n` matmul in a `tf.function` (best of)."""
    a = tf.cast(tf.random.normal([n, n]), dtype)
    b = tf.cast(tf.random.normal([n, n]), dtype)
    f = tf.function(lambda: tf.matmul(a, b))
    f().numpy()
    best = min(_seconds(f) for _ in range(repeats))
    return 2 * n**3 / best


def _seconds(fn):
    start = time.perf_counter()
    result = fn()
    flat = tf.nest.flatten(result)
    if flat:
        flat[0].numpy()
    return time.perf_counter() - start


class TFAWorker(Worker):
    """The TFA process (`benchmarks/peers_tfa.py`) under `python`."""

    def __init__(self, python, sizes):
        super().__init__(python, "benchmarks.peers_tfa", sizes)


class JAXWorker(Worker):
    """Our models on JAX (`benchmarks/peers_jax.py`), under this Python."""

    def __init__(self, sizes):
        super().__init__(sys.executable, "benchmarks.peers_jax", sizes)


def interleave(timers, repeats):
    """Rounds over `timers` (name -> callable returning seconds)."""
    times = {name: [] for name in timers}
    for r in range(repeats):
        order = list(timers.items())
        if r % 2:
            order.reverse()
        for name, timer in order:
            times[name].append(timer())
    return times


def local_timer(fn, warmup):
    for _ in range(warmup):
        _seconds(fn)
    return lambda: _seconds(fn)


def build_local(sizes, savedir):
    timers = {}
    source, target_in, target_out = models.batch_of(sizes, sizes["batch"])
    warmup = sizes["warmup"]
    stepwise = {}
    for score in ("luong", "bahdanau"):
        model, parts = models.stepwise_model(sizes, score)
        stepwise[score] = (model, parts)
        for kind, m in (("stepwise", model), ("sequence", None)):
            m = m or models.sequence_model(sizes, score)
            step = models.train_step(m)
            timers[f"ours-{kind}-{score}-train"] = local_timer(
                lambda s=step: s(source, target_in, target_out), warmup
            )
    # The tutorial's own optimizer.
    step = models.train_step(models.tutorial_model(sizes),
                             optimizer=keras.optimizers.Adam(),
                             cross_entropy=models.keras_cross_entropy)
    timers["tutorial-train"] = local_timer(
        lambda: step(source, target_in, target_out), warmup
    )
    # The fast variants: the example's default on a bfloat16 CPU
    # (mixed_bfloat16, the vocabulary projection in bfloat16) and XLA.
    # And the models before keras_attention.LSTM and FusedAdam.
    for name, kind, score, policy, jit in FAST_VARIANTS:
        before = name.endswith("-keras")
        keras.config.set_dtype_policy(policy)
        build = (models.stepwise_model if kind == "stepwise"
                 else models.sequence_model)
        options = {}
        if kind == "stepwise":
            options["fused"] = "generic" not in name
        # The figures before `projection_dtype="auto"` (and the generic
        # loop's) project in float32; the others under the policy.
        logits_dtype = None if name.endswith("-train-bf16") else "float32"
        m = build(sizes, score, logits_dtype=logits_dtype,
                  lstm=keras.layers.LSTM if before else ka.LSTM, **options)
        if kind == "stepwise":
            m = m[0]
        keras.config.set_dtype_policy("float32")
        step = models.train_step(
            m, jit_compile=jit,
            optimizer=keras.optimizers.Adam() if before else None,
            cross_entropy=models.keras_cross_entropy if before else None,
        )
        timers[name] = local_timer(
            lambda s=step: s(source, target_in, target_out), warmup
        )
    model, parts = stepwise["luong"]
    # The ensemble's second member: same sizes, its own weights.
    translator = models.Translator(
        sizes, model, parts, ensemble=[models.stepwise_model(sizes, "luong")]
    )
    names = DECODERS + tuple(BEAM_OPTIONS)
    tf.saved_model.save(
        translator,
        savedir,
        signatures={
            name: getattr(translator, name).get_concrete_function()
            for name in names
        },
    )
    loaded = tf.saved_model.load(savedir)
    for batch in sizes["decode_batches"]:
        src = models.batch_of(sizes, batch, seed=1)[0]
        for name in names:
            fn = loaded.signatures[name]
            timers[f"ours-{name}-b{batch}"] = local_timer(
                lambda f=fn, x=src: f(x), warmup
            )
    return timers, loaded


# Our decoders timed against TFA's (greedy and beam): plain, the whole
# decoder XLA-compiled, and only its step XLA-compiled (`TranslatorModule(
# xla="step")`: the loop stays TensorFlow ops).
DECODERS = ("greedy", "beam", "greedy_xla", "beam_xla", "greedy_xla_step",
            "beam_xla_step")
# The same decoders on JAX, inside `jax.jit` (`benchmarks/peers_jax.py`).
JAX_DECODERS = ("greedy_jax", "beam_jax")

# (timer, model kind, score, dtype policy, XLA) of the fast variants of
# our models.
FAST_VARIANTS = [
    (f"ours-{kind}-{score}-train-{tag}", kind, score, policy, jit)
    for kind in ("stepwise", "sequence")
    for score, tag, policy, jit in (
        ("luong", "keras", "float32", False),
        ("luong", "xla", "float32", True),
        ("luong", "bf16", "mixed_bfloat16", False),
        ("luong", "bf16-f32proj", "mixed_bfloat16", False),
        ("bahdanau", "bf16", "mixed_bfloat16", False),
    )
] + [
    # The step-wise model on AttentionRNN's generic loop (before the fused
    # decoder).
    (f"ours-stepwise-luong-train-{tag}", "stepwise", "luong", policy, False)
    for tag, policy in (("generic", "float32"),
                        ("generic-bf16", "mixed_bfloat16"))
]
FAST_LABELS = {
    "keras": "keras.layers.LSTM, Keras' Adam and cross-entropy (before)",
    "xla": "float32, XLA",
    "bf16": "mixed_bfloat16",
    "bf16-f32proj": "mixed_bfloat16, float32 vocabulary projection (before)",
    "generic": "AttentionRNN(fused=False) (before)",
    "generic-bf16": "AttentionRNN(fused=False), mixed_bfloat16 (before)",
    "jax": "float32, JAX (Keras jit_compile, one jax.jit step)",
}


# The speed targets against TFA, Luong scaled, without XLA: (label, our
# timer, TFA's timer, lowest ratio ours/TFA in speed). Decoders: batch 1
# and 64 (the full sizes' decode batches).
TARGETS = [
    ("step-wise training, float32", "ours-stepwise-luong-train",
     "tfa-luong-train", 1.6),
    ("step-wise training, mixed_bfloat16", "ours-stepwise-luong-train-bf16",
     "tfa-luong-train", 2.0),
    ("sequence-mode training, float32", "ours-sequence-luong-train",
     "tfa-luong-train", 2.0),
    ("sequence-mode training, mixed_bfloat16",
     "ours-sequence-luong-train-bf16", "tfa-luong-train", 2.2),
] + [
    (f"exported {label}, batch {batch}", f"ours-{name}-b{batch}",
     f"tfa-{name}-b{batch}", goal)
    for batch in (1, 64)
    for name, label, goal in (("greedy", "greedy", 1.5),
                              ("beam", "beam {w}", 2.0))
]


def summarise(sizes, times, peak, tfa_info, bf16_peak=None, jax_info=None):
    tokens = sizes["batch"] * sizes["target_length"]
    med = {n: common.median(t) for n, t in times.items()}
    rows = []
    for score, tfa_name in (("luong", "Luong scaled"), ("bahdanau",
                                                     "Bahdanau normed")):
        tfa = f"tfa-{score}-train"
        if tfa not in times:
            continue
        rows.append((f"TFA {tfa_info['tfa']} AttentionWrapper + BasicDecoder, "
                     f"{tfa_name} (TF {tfa_info['tensorflow']})", tfa, tfa))
        for kind in ("stepwise", "sequence"):
            rows.append((f"ours, {kind}, {tfa_name}",
                         f"ours-{kind}-{score}-train", tfa))
            for tag, label in FAST_LABELS.items():
                name = f"ours-{kind}-{score}-train-{tag}"
                if name in times:
                    rows.append((f"ours, {kind}, {tfa_name}, {label}", name,
                                 tfa))
    rows.append(("TF tutorial (biGRU + one-head MHA)", "tutorial-train",
                 "tfa-luong-train"))
    training = []
    for label, name, ref in rows:
        training.append({
            "model": label,
            "tokens_per_s": round(tokens / med[name]),
            "vs_tfa": round(common.paired_ratio(times[ref], times[name]), 2),
        })
    flops = models.sequence_step_flops(sizes)
    seq = med["ours-sequence-luong-train"]
    fast = med.get("ours-sequence-luong-train-bf16", seq)
    decoding = []
    for batch in sizes["decode_batches"]:
        for name in DECODERS + JAX_DECODERS:
            ours = f"ours-{name}-b{batch}"
            tfa = f"tfa-{name.split('_')[0]}-b{batch}"
            if ours not in times:
                continue  # JAX left out
            label = name.split("_")[0]
            if label == "beam":
                label = f"beam {sizes['beam_width']}"
            if name.endswith("_xla"):
                label += " (ours XLA-compiled)"
            elif name.endswith("_xla_step"):
                label += " (ours, XLA-compiled step)"
            elif name.endswith("_jax"):
                label += " (ours on JAX, in jax.jit)"
            decoding.append({
                "decoder": label,
                "batch": batch,
                "ours_sentences_per_s": round(batch / med[ours], 1),
                "tfa_sentences_per_s": round(batch / med[tfa], 1),
                "ratio": round(common.paired_ratio(times[tfa], times[ours]),
                               2),
            })
    options = []
    for batch in sizes["decode_batches"]:
        beam = f"ours-beam-b{batch}"
        for name, label in BEAM_OPTIONS.items():
            ours = f"ours-{name}-b{batch}"
            options.append({
                "decoder": label.format(w=sizes["beam_width"]),
                "batch": batch,
                "sentences_per_s": round(batch / med[ours], 1),
                "time_vs_beam": round(
                    common.paired_ratio(times[ours], times[beam]), 2
                ),
            })
    targets = []
    for label, ours, tfa, goal in TARGETS:
        ours, tfa = (n.format(w=sizes["beam_width"]) for n in (ours, tfa))
        if ours in times and tfa in times:
            ratio = common.paired_ratio(times[tfa], times[ours])
            targets.append({"target": label.format(w=sizes["beam_width"]),
                            "goal": goal, "measured": round(ratio, 2),
                            "met": ratio >= goal})
    return {
        "sizes": sizes,
        "machine": common.machine_info(),
        "targets": targets,
        "tfa": tfa_info,
        "jax": jax_info,
        "training": training,
        "decoding": decoding,
        "decoding_options": options,
        "matmul_peak_gflops": round(peak / 1e9, 1),
        "sequence_step_gflop": round(flops / 1e9, 2),
        "sequence_gflops": round(flops / seq / 1e9, 1),
        "sequence_share_of_peak": round(flops / seq / peak, 2),
        "bf16_matmul_peak_gflops": round((bf16_peak or 0) / 1e9, 1),
        "sequence_bf16_gflops": round(flops / fast / 1e9, 1),
        "sequence_bf16_share_of_peak": round(flops / fast / peak, 2),
        "medians_s": {n: round(v, 5) for n, v in med.items()},
    }


def markdown(result):
    lines = ["| model | target tokens/s | vs TFA (same score) |",
             "|---|---|---|"]
    for row in result["training"]:
        lines.append(
            f"| {row['model']} | {row['tokens_per_s']:,} | "
            f"{row['vs_tfa']:.2f} |"
        )
    if result.get("targets"):
        lines += ["", "| target (vs TFA, no XLA) | goal | measured | met |",
                  "|---|---|---|---|"]
        for row in result["targets"]:
            lines.append(
                f"| {row['target']} | >= {row['goal']} | "
                f"{row['measured']:.2f} | {'yes' if row['met'] else 'no'} |"
            )
    lines += ["", "| decoder | batch | ours sentences/s (SavedModel, or "
              "JAX) | TFA sentences/s | ours / TFA |", "|---|---|---|---|---|"]
    for row in result["decoding"]:
        lines.append(
            f"| {row['decoder']} | {row['batch']} | "
            f"{row['ours_sentences_per_s']} | {row['tfa_sentences_per_s']} "
            f"| {row['ratio']:.2f} |"
        )
    lines += ["", "| our decoder (SavedModel) | batch | sentences/s | "
              f"time / beam {result['sizes']['beam_width']} |",
              "|---|---|---|---|"]
    for row in result["decoding_options"]:
        lines.append(
            f"| {row['decoder']} | {row['batch']} | "
            f"{row['sentences_per_s']} | {row['time_vs_beam']:.2f} |"
        )
    lines += [
        "",
        f"Matmul peak (float32 2048^3, same run): "
        f"{result['matmul_peak_gflops']} GFLOP/s. Sequence-mode Luong step: "
        f"{result['sequence_step_gflop']} GFLOP, "
        f"{result['sequence_gflops']} GFLOP/s = "
        f"{result['sequence_share_of_peak']:.0%} of the peak; under "
        f"mixed_bfloat16 {result['sequence_bf16_gflops']} GFLOP/s = "
        f"{result['sequence_bf16_share_of_peak']:.0%} of the float32 peak "
        f"(bfloat16 2048^3 matmul: {result['bf16_matmul_peak_gflops']} "
        "GFLOP/s).",
    ]
    if result.get("jax"):
        jax_info = result["jax"]
        lines += ["", f"JAX rows: JAX {jax_info['jax']}, Keras "
                  f"{jax_info['keras']}, on {jax_info['jax_device']}, in a "
                  "process of their own."]
    return "\n".join(lines) + "\n"


def default_tfa_python():
    root = pathlib.Path(__file__).resolve().parent.parent
    return str(root / ".venv-tfa" / "bin" / "python")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="runs/bench-peers")
    parser.add_argument("--tfa-python", default=default_tfa_python())
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--no-jax", action="store_true",
                        help="leave out our models on JAX")
    args = parser.parse_args(argv)
    sizes = dict(SIZES[args.quick])
    if args.repeats:
        sizes["repeats"] = args.repeats
    if not os.path.exists(args.tfa_python):
        parser.error(
            f"no TFA interpreter at {args.tfa_python}: run `make bench-peers`"
            " (it creates .venv-tfa) or pass --tfa-python"
        )
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"TFA worker: {args.tfa_python}", flush=True)
    workers = [TFAWorker(args.tfa_python, sizes)]
    try:
        if not args.no_jax:
            print("JAX worker: KERAS_BACKEND=jax", flush=True)
            workers.append(JAXWorker(sizes))
        timers = {n: w.timer(n) for w in workers for n in w.info["names"]}
        with tempfile.TemporaryDirectory() as savedir:
            local, _ = build_local(sizes, savedir)
            timers.update(local)
            print(f"{len(timers)} candidates, {sizes['repeats']} rounds",
                  flush=True)
            times = interleave(timers, sizes["repeats"])
    finally:
        for worker in workers:
            worker.close()
    peak = matmul_peak()
    bf16_peak = matmul_peak(dtype="bfloat16")
    tfa_info = {k: workers[0].info[k] for k in ("tensorflow", "tfa")}
    jax_info = None
    if len(workers) > 1:
        jax_info = {k: workers[1].info[k]
                    for k in ("jax", "keras", "jax_device")}
    result = summarise(sizes, times, peak, tfa_info, bf16_peak, jax_info)
    (out / "peers.json").write_text(json.dumps(result, indent=2))
    text = markdown(result)
    (out / "peers.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
