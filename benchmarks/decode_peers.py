"""Decoding only of `benchmarks.peers`: ours against TFA and a baseline.

    python -m benchmarks.decode_peers --export DIR
    python -m benchmarks.decode_peers [--baseline DIR] [--tfa-python PATH]
        [--batches 1 64] [--rounds 9] [--out runs/decode-peers]
        [--inter-op-threads N]

`--export DIR` saves the step-wise Luong model of `benchmarks.peers` (its
sizes: vocabulary 5000, embedding and LSTM 256, 24 decoding steps, beam
5), with the weights of `keras.utils.set_random_seed(0)`, as the
SavedModel of `peers_models.Translator` (`greedy` and `beam` signatures,
plain `tf.function`s, no XLA; `greedy_xla` and `beam_xla`, the same
decoders in `tf.function(jit_compile=True)`, the id-to-id part of the
default `TranslatorModule` export, timed as "xla"). Run it in a checkout of another commit
(`PYTHONPATH=OLD_CHECKOUT`) to get a baseline of the same model.

The timing run exports the current code the same way, loads it (and the
`--baseline` export), starts the TFA 0.23 worker of `benchmarks.peers`
(`make bench-peers` makes its venv; without it the TFA columns are left
out), and times greedy and beam at each batch size in interleaved rounds:
one call at a time, alternating order, medians, ratios as medians of
per-round ratios (`benchmarks.common`). It also checks that the baseline
decodes the same tokens.
"""

import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks import peers  # noqa: E402
from benchmarks import peers_models as models  # noqa: E402

DECODERS = ("greedy", "beam")


def export(path, quick=False):
    """The peers model's greedy and beam signatures, saved to `path`."""
    sizes = peers.SIZES[quick]
    keras.utils.set_random_seed(0)
    model, parts = models.stepwise_model(sizes, "luong")
    translator = models.Translator(sizes, model, parts)
    tf.saved_model.save(translator, path, signatures={
        name: getattr(translator, name).get_concrete_function()
        for name in DECODERS + tuple(f"{d}_xla" for d in DECODERS)
    })
    return path


def timers(sizes, exports, worker=None):
    """name -> zero-argument call returning seconds; and the calls' first
    outputs, to compare tokens."""
    calls, tokens = {}, {}
    for batch in sizes["decode_batches"]:
        source = models.batch_of(sizes, batch, seed=1)[0]
        for label, path in exports.items():
            loaded = tf.saved_model.load(path)
            for name in DECODERS:
                signature = name
                if label == "xla":  # the whole decoder XLA-compiled
                    signature = f"{name}_xla"
                fn = loaded.signatures[signature]
                key = f"{label}-{name}-b{batch}"
                tokens[key] = fn(source)["tokens"].numpy()
                calls[key] = peers.local_timer(
                    lambda f=fn, x=source: f(x), sizes["warmup"])
        if worker is not None:
            for name in DECODERS:
                calls[f"tfa-{name}-b{batch}"] = worker.timer(
                    f"tfa-{name}-b{batch}")
    return calls, tokens


# (numerator, denominator) of the ratios reported, in speed.
RATIOS = (("ours", "tfa"), ("xla", "tfa"), ("ours", "baseline"),
          ("xla", "ours"), ("baseline", "tfa"))


def summarise(sizes, times, tokens, labels):
    rows = []
    for batch in sizes["decode_batches"]:
        for name in DECODERS:
            def timed(label):
                return times.get(f"{label}-{name}-b{batch}")

            row = {"decoder": name if name == "greedy"
                   else f"beam {sizes['beam_width']}",
                   "batch": batch,
                   "sentences_per_s": {
                       label: round(batch / common.median(timed(label)), 1)
                       for label in labels if timed(label) is not None}}
            for faster, slower in RATIOS:
                if timed(faster) is not None and timed(slower) is not None:
                    row[f"{faster}_vs_{slower}"] = round(common.paired_ratio(
                        timed(slower), timed(faster)), 2)
            if "baseline" in labels:
                row["same_tokens_as_baseline"] = bool(np.array_equal(
                    tokens[f"ours-{name}-b{batch}"],
                    tokens[f"baseline-{name}-b{batch}"]))
            rows.append(row)
    return rows


def markdown(rows):
    labels = [k for k in rows[0]["sentences_per_s"]]
    ratios = [k for k in rows[0] if "_vs_" in k]
    lines = ["| decoder | batch | " + " | ".join(
        f"{label} sentences/s" for label in labels) + " | " + " | ".join(
        ratios) + " |", "|---" * (2 + len(labels) + len(ratios)) + "|"]
    for row in rows:
        lines.append(
            f"| {row['decoder']} | {row['batch']} | " + " | ".join(
                f"{row['sentences_per_s'][k]:,}" for k in labels) + " | "
            + " | ".join(f"{row[k]:.2f}" for k in ratios) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export", metavar="DIR",
                        help="only export the current code's model to DIR")
    parser.add_argument("--baseline", metavar="DIR",
                        help="an --export of another commit, timed alongside")
    parser.add_argument("--tfa-python", default=peers.default_tfa_python())
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="runs/decode-peers")
    parser.add_argument(
        "--inter-op-threads", type=int, default=0,
        help="TensorFlow's inter-op threads on both sides (ours and TFA's "
        "worker); 0, the default, keeps TensorFlow's (one per core)")
    args = parser.parse_args(argv)
    if args.inter_op_threads < 0:
        parser.error("--inter-op-threads must be >= 0")
    if args.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(
            args.inter_op_threads)
    if args.export:
        export(args.export, args.quick)
        return 0
    if min(args.batches) < 1 or args.rounds < 1:
        parser.error("--batches and --rounds must be >= 1")
    sizes = dict(peers.SIZES[args.quick], decode_batches=args.batches,
                 repeats=args.rounds, tfa_attentions=["luong"],
                 inter_op_threads=args.inter_op_threads)
    worker = None
    if os.path.exists(args.tfa_python):
        worker = peers.TFAWorker(args.tfa_python, sizes)
    with tempfile.TemporaryDirectory() as tmp:
        exports = {"ours": export(os.path.join(tmp, "ours"), args.quick)}
        exports["xla"] = exports["ours"]
        if args.baseline:
            exports["baseline"] = args.baseline
        try:
            calls, tokens = timers(sizes, exports, worker)
            times = peers.interleave(calls, args.rounds)
        finally:
            if worker is not None:
                worker.close()
    labels = list(exports) + (["tfa"] if worker is not None else [])
    rows = summarise(sizes, times, tokens, labels)
    os.makedirs(args.out, exist_ok=True)
    result = {"machine": common.machine_info(), "sizes": sizes,
              "inter_op_threads": args.inter_op_threads,
              "rounds": args.rounds, "rows": rows,
              "tfa": None if worker is None else worker.info}
    with open(os.path.join(args.out, "decode_peers.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
