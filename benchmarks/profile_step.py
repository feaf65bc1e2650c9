"""Where a training step's time goes, op type by op type.

    python -m benchmarks.profile_step [--model sequence|stepwise]
        [--mixed-precision off|bfloat16] [--jit-compile] [--steps 20]
        [--by-layer] [--matmuls] [--parallel] [--quick]
    python -m benchmarks.profile_step --decode greedy|beam [--batch 64]
        [--tfa-python .venv-tfa/bin/python]

Builds one of `benchmarks.peers`' models at its sizes (vocabulary 5000,
embedding 256, LSTM 256, batch 64, lengths 12), warms its `tf.function`
train step up, traces `--steps` steps with `tf.profiler`, and sums the
host's TensorFlow op events of the trace by op type (`MatMul`,
`BiasAddGrad`, the cross-entropy's `_MklSoftmax` and `OneHot`, the Adam
update, ...): total milliseconds per step and share of the step's wall time, the
largest first. With `--jit-compile` the ops are XLA's fused clusters and
the table shows the cluster kernels instead. `--matmuls` also times the
step's matmul shapes alone; docs/benchmarks.md has a run.

`--decode greedy|beam` profiles the exported step-wise model's decoder
instead, and `--tfa-python PYTHON` profiles TFA 0.23's decoder of the
same sizes the same way in that Python (`benchmarks.profile_tfa`, the
venv of `make bench-peers`) and prints the two side by side.
"""

import argparse
import collections
import json
import os
import subprocess
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import peers  # noqa: E402
from benchmarks import peers_models as models  # noqa: E402
from benchmarks import peers_worker  # noqa: E402
from benchmarks.profile_ops import profile  # noqa: E402


def matmul_rate(m: int, k: int, n: int, dtype: str = "float32",
                repeats: int = 20) -> float:
    """GFLOP/s of an `(m, k) @ (k, n)` matmul, `repeats` chained in one
    `tf.function` (best of 5 calls), so that dispatch does not count."""
    a = tf.cast(tf.random.normal([m, k]), dtype)
    b = tf.cast(tf.random.normal([k, n]), dtype)

    @tf.function
    def chain():
        total = tf.zeros([], dtype)
        for _ in range(repeats):
            total += tf.matmul(a + total, b)[0, 0]
        return total

    chain().numpy()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        chain().numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * m * k * n * repeats / best / 1e9


def matmul_table(sizes: dict, dtype: str, square: int = 2048) -> list:
    """The step's matmul shapes and a square one: `(label, GFLOP/s)`."""
    tokens = sizes["batch"] * sizes["target_length"]
    units, vocab = sizes["units"], sizes["vocab"]
    shapes = [
        (f"{square} x {square} x {square} (the peak of benchmarks.peers)",
         square, square, square),
        (f"vocabulary projection {tokens} x {units} x {vocab}",
         tokens, units, vocab),
        (f"its input gradient {tokens} x {vocab} x {units}",
         tokens, vocab, units),
        (f"its kernel gradient {units} x {tokens} x {vocab}",
         units, tokens, vocab),
        (f"LSTM input, all steps at once {tokens} x {units} x {4 * units}",
         tokens, units, 4 * units),
        (f"LSTM, one step {sizes['batch']} x {units} x {4 * units}",
         sizes["batch"], units, 4 * units),
        (f"LSTM kernel gradient, one step {units} x {sizes['batch']} x "
         f"{4 * units}", units, sizes["batch"], 4 * units),
    ]
    return [(label, matmul_rate(m, k, n, dtype)) for label, m, k, n in shapes]


def build(kind: str, policy: str, quick: bool = False):
    sizes = peers.SIZES[quick]
    keras.mixed_precision.set_global_policy(
        "mixed_bfloat16" if policy == "bfloat16" else "float32")
    # The vocabulary projection under the policy, as `Seq2Seq`'s default
    # `projection_dtype="auto"` makes it under mixed_bfloat16.
    logits_dtype = None
    if kind == "sequence":
        model = models.sequence_model(sizes, "luong", logits_dtype)
    else:
        model, _ = models.stepwise_model(sizes, "luong", logits_dtype)
    return sizes, model


def train_call(args):
    """`(call, flops, label, tokens)` of the training step."""
    sizes, model = build(args.model, args.mixed_precision, args.quick)
    step = models.train_step(model, jit_compile=args.jit_compile)
    batch = models.batch_of(sizes, sizes["batch"])
    label = f"{args.model}, {args.mixed_precision}, XLA {args.jit_compile}"
    flops = models.sequence_step_flops(sizes, args.model)
    return (lambda: step(*batch), flops, label,
            sizes["batch"] * sizes["target_length"])


def decode_call(args, savedir: str):
    """`(call, flops, label, tokens)` of the exported step-wise model's
    greedy or beam signature on `args.batch` sentences."""
    sizes = peers.SIZES[args.quick]
    model, parts = models.stepwise_model(sizes, "luong")
    translator = models.Translator(sizes, model, parts)
    fn = getattr(translator, args.decode)
    tf.saved_model.save(translator, savedir,
                        signatures={args.decode: fn.get_concrete_function()})
    args.loop_ops = loop_body_ops(fn.get_concrete_function().graph)
    signature = tf.saved_model.load(savedir).signatures[args.decode]
    source = models.batch_of(sizes, args.batch, seed=1)[0]
    width = sizes["beam_width"] if args.decode == "beam" else 1
    label = (f"exported {args.decode}"
             + (f" {width}" if width > 1 else "") + f", batch {args.batch}")
    return (lambda: signature(source),
            models.decode_flops(sizes, args.batch, width), label,
            args.batch * sizes["decode_length"])


def matmul_summary(totals: collections.Counter, steps: int, untraced: float,
                   flops: int, peak: float) -> str:
    """The matmuls' share of the op time and the step's matmul GFLOP/s."""
    total = sum(totals.values())
    matmul = sum(v for k, v in totals.items() if "MatMul" in k)
    rate = flops / untraced / 1e9
    return (f"Matmuls: {matmul / 1e3 / steps:.2f} ms/step, "
            f"{100 * matmul / total:.0f} % of the op time. The step's "
            f"{flops / 1e9:.3f} GFLOP of matmuls run at {rate:.1f} GFLOP/s "
            f"untraced, {100 * rate / peak:.0f} % of the float32 peak "
            f"({peak:.0f} GFLOP/s, square matmul, same run).")


def loop_body_ops(graph) -> collections.Counter:
    """Op type -> count in the body of the graph's last `while` loop (the
    decoding loop; the encoder's comes first), with the functions it
    calls: the per-step work, as traced (deterministic, unlike the
    profiler's event counts)."""
    functions = {f.signature.name: f
                 for f in graph.as_graph_def().library.function}

    def count(name):
        ops = collections.Counter()
        for node in functions[name].node_def:
            ops[node.op] += 1
            for attr in node.attr.values():
                if attr.HasField("func") and attr.func.name in functions:
                    ops.update(count(attr.func.name))
        return ops

    loops = [op for op in graph.get_operations()
             if op.type in ("While", "StatelessWhile")]
    return count(loops[-1].get_attr("body").name)


def decode_steps(args) -> int:
    """Decoding steps per call: every sentence runs to the length limit
    (the end token's output bias is -1e4); `0` for a train step."""
    return peers.SIZES[args.quick]["decode_length"] if args.decode else 0


def op_count_summary(counts: collections.Counter, calls: int,
                     steps: int) -> str:
    """The ops the executor ran per call, and per decoding step: the
    per-step work a decoding loop does (the encoder's ops, run once per
    call, count in the per-step figure too, spread over the steps)."""
    per_call = sum(counts.values()) / calls
    line = f"Ops executed: {per_call:,.0f} per call"
    if steps:
        line += f", {per_call / steps:,.1f} per decoding step ({steps} steps)"
    return line + "."


def tfa_profile(args) -> dict:
    """TFA's decoder of `benchmarks.peers_tfa`, profiled by
    `benchmarks.profile_tfa` under `args.tfa_python` at the same sizes,
    batch, calls and inter-op threads: its JSON line as a dict."""
    sizes = dict(peers.SIZES[args.quick], decode_batches=[args.batch],
                 tfa_attentions=["luong"])
    command = [args.tfa_python, "-m", "benchmarks.profile_tfa",
               "--decode", args.decode, "--batch", str(args.batch),
               "--steps", str(args.steps), "--sizes", json.dumps(sizes)]
    if args.parallel:
        command.append("--parallel")
    # In the repository's root, as `benchmarks.peers` starts its workers.
    done = subprocess.run(command, cwd=peers_worker.ROOT,
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"TFA's profile failed (exit {done.returncode}): "
            f"{' '.join(command[:3])} ...\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def side_by_side(ours: dict, theirs: dict, calls: int, top: int) -> str:
    """A markdown table of ms per call by op type, ours and TFA's: the `top`
    op types with the most time on either side, the largest first, and
    every op's total. `ours`, `theirs`: op type -> microseconds over
    `calls` calls."""
    names = sorted(set(ours) | set(theirs),
                   key=lambda n: -max(ours.get(n, 0.0), theirs.get(n, 0.0)))
    rows = ["| op type | ours ms/call | TFA ms/call |", "|---|---|---|"]
    for name in names[:top]:
        cells = [f"{ours[name] / 1e3 / calls:.2f}" if name in ours else "-",
                 f"{theirs[name] / 1e3 / calls:.2f}" if name in theirs
                 else "-"]
        rows.append(f"| {name} | {cells[0]} | {cells[1]} |")
    rows.append(f"| (all ops) | {sum(ours.values()) / 1e3 / calls:.2f} | "
                f"{sum(theirs.values()) / 1e3 / calls:.2f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["sequence", "stepwise"],
                        default="sequence")
    parser.add_argument("--mixed-precision", choices=["off", "bfloat16"],
                        default="off")
    parser.add_argument("--jit-compile", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--by-layer", action="store_true",
                        help="split the matmuls by layer")
    parser.add_argument("--quick", action="store_true",
                        help="the tiny sizes of `benchmarks.peers --quick`")
    parser.add_argument("--matmuls", action="store_true",
                        help="also time the step's matmul shapes")
    parser.add_argument("--decode", choices=["greedy", "beam"],
                        help="profile the exported decoder instead")
    parser.add_argument("--batch", type=int, default=64,
                        help="sentences per decode (with --decode)")
    parser.add_argument(
        "--tfa-python", metavar="PYTHON",
        help="with --decode: also profile TFA 0.23's decoder the same way "
        "(`benchmarks.profile_tfa` under this Python, the venv of `make "
        "bench-peers`) and print both side by side")
    parser.add_argument(
        "--parallel", action="store_true",
        help="keep TensorFlow's inter-op threads (the real speed; the op "
        "times then overlap and sum to more than the step)")
    args = parser.parse_args(argv)
    if args.tfa_python and not args.decode:
        parser.error("--tfa-python needs --decode: TFA's side profiles its "
                     f"decoders only. Received: --tfa-python {args.tfa_python}")
    if not args.parallel:
        tf.config.threading.set_inter_op_parallelism_threads(1)
    with tempfile.TemporaryDirectory() as savedir:
        if args.decode:
            call, flops, label, tokens = decode_call(args, savedir)
        else:
            call, flops, label, tokens = train_call(args)
        ours = profile(call, args.steps, args.by_layer)
    untraced, traced = ours["untraced_s"], ours["traced_s"]
    totals, counts = ours["totals"], ours["counts"]
    print(f"{label}: "
          f"{1e3 * untraced:.1f} ms/step untraced ({tokens / untraced:,.0f} "
          f"tokens/s), {1e3 * traced:.1f} ms traced")
    print("| op type | ms/step | share of the traced step |")
    print("|---|---|---|")
    total = sum(totals.values())
    for name, micros in totals.most_common(args.top):
        ms = micros / 1e3 / args.steps
        print(f"| {name} | {ms:.2f} | {100 * ms / (1e3 * traced):.1f} % |")
    print(f"| (all ops) | {total / 1e3 / args.steps:.2f}"
          f" | {100 * total / 1e6 / args.steps / traced:.1f} % |")
    print(op_count_summary(counts, args.steps, decode_steps(args)))
    if args.decode:
        ops = args.loop_ops
        work = sum(n for op, n in ops.items()
                   if op not in ("Const", "Identity", "NoOp"))
        print(f"Decoding loop body: {sum(ops.values())} ops, {work} "
              "without Const, Identity and NoOp.")
    peak = peers.matmul_peak(256 if args.quick else 2048) / 1e9
    print(matmul_summary(totals, args.steps, untraced, flops, peak))
    if args.matmuls:
        dtype = "bfloat16" if args.mixed_precision == "bfloat16" else "float32"
        print(f"\n| {dtype} matmul | GFLOP/s |\n|---|---|")
        for label, rate in matmul_table(
                peers.SIZES[args.quick], dtype, 256 if args.quick else 2048):
            print(f"| {label} | {rate:.0f} |")
    if args.tfa_python:
        theirs = tfa_profile(args)
        print(f"\nTFA {theirs['versions']['tfa']} (TensorFlow "
              f"{theirs['versions']['tensorflow']}), the same decoder: "
              f"{1e3 * theirs['untraced_s']:.1f} ms/call untraced, "
              f"{1e3 * theirs['traced_s']:.1f} ms traced (ours "
              f"{1e3 * untraced:.1f} / {1e3 * traced:.1f})")
        print(side_by_side(totals, theirs["totals"], args.steps, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
