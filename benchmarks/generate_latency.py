"""`Seq2Seq.generate` latency, one sentence: eager, compiled, exported.

A `Seq2Seq` of the dates demo's size (bidirectional LSTM of 64 units, the
Luong decoder, general score, vocabularies of 1,000 ids; random weights:
latency does not depend on them, only on the number of decoding steps,
which every candidate shares) decodes one sentence of `--source-length`
ids, greedy and with beam search of width `--beam-width`, three ways:

- `eager`: `model.generate(ids, compile=False)`, the decoder op by op;
- `compiled`: `model.generate(ids)`, its cached compiled function
  (`tf.function` on TensorFlow, `jax.jit` on JAX);
- `exported` (TensorFlow only): a `tf.Module` whose `tf.function`s over
  int32 ids `(batch, S)` call the same `generate` (one per strategy),
  saved with `tf.saved_model.save`, loaded back, and called through its
  signatures: the id-to-id path of an exported translator, without the
  tokenizers.

Each figure is the median of `--rounds` calls after two warm-up calls,
interleaved round by round (common.interleaved's order); each call reads
its tokens back to the host. The first call of `compiled` (the trace and,
on JAX, the XLA compile) is reported apart. About a minute on two cores.

Usage:
    python -m benchmarks.generate_latency [--rounds 30] [--max-length 24]
        [--source-length 12] [--beam-width 4] [--out runs/generate-latency]
    KERAS_BACKEND=jax python -m benchmarks.generate_latency  # no export
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from benchmarks import common  # noqa: E402
from keras_attention.seq2seq import Seq2Seq  # noqa: E402

VOCAB_SIZE = 1000
UNITS = 64
SEED = 0


def make_model():
    keras.utils.set_random_seed(SEED)
    return Seq2Seq(
        source_vocab_size=VOCAB_SIZE, target_vocab_size=VOCAB_SIZE,
        embedding_dim=UNITS, units=UNITS, dropout=0.0,
    )


def source_ids(length):
    """One sentence: `length - 1` word ids and `[END]` (3)."""
    rng = np.random.default_rng(SEED)
    words = rng.integers(4, VOCAB_SIZE, size=(1, length - 1))
    return np.concatenate([words, [[3]]], axis=1).astype("int32")


def strategies(beam_width):
    return {"greedy": {"strategy": "greedy"},
            "beam": {"strategy": "beam", "beam_width": beam_width}}


def export(model, max_length, beam_width, path):
    """Saves and loads a `tf.Module` with one signature per strategy."""
    import tensorflow as tf

    module = tf.Module()
    # Track the variables, not the Keras model (as TranslatorModule does).
    module.model_variables = [v.value for v in model.variables]
    spec = tf.TensorSpec([None, None], tf.int32, name="source_ids")
    signatures = {}
    for name, options in strategies(beam_width).items():

        def decode(ids, options=options):
            out = model.generate(ids, max_length=max_length, compile=False,
                                 **options)
            return {k: v for k, v in out.items() if v is not None}

        function = tf.function(decode, input_signature=[spec],
                               autograph=False)
        setattr(module, name, function)
        signatures[name] = function
    tf.saved_model.save(module, path, signatures=signatures)
    loaded = tf.saved_model.load(path)
    return {name: loaded.signatures[name] for name in signatures}


def timed(fn):
    """Seconds of one call, tokens read back to the host included."""
    start = time.perf_counter()
    ops.convert_to_numpy(fn()["tokens"])
    return time.perf_counter() - start


def measure(candidates, rounds, warmup=2):
    """name -> seconds of each timed call; rounds alternate the order."""
    for _ in range(warmup):
        for fn in candidates.values():
            timed(fn)
    times = {name: [] for name in candidates}
    for i in range(rounds):
        order = list(candidates.items())
        for name, fn in order[::-1] if i % 2 else order:
            times[name].append(timed(fn))
    return times


def run(rounds, max_length, source_length, beam_width, export_dir):
    model = make_model()
    ids = source_ids(source_length)
    tensor = ops.convert_to_tensor(ids)
    signatures = None
    if keras.backend.backend() == "tensorflow":
        signatures = export(model, max_length, beam_width, export_dir)
    rows = []
    for name, options in strategies(beam_width).items():
        first = timed(
            lambda: model.generate(ids, max_length=max_length, **options)
        )
        candidates = {
            "eager": lambda o=options: model.generate(
                ids, max_length=max_length, compile=False, **o),
            "compiled": lambda o=options: model.generate(
                ids, max_length=max_length, **o),
        }
        if signatures is not None:
            candidates["exported"] = (
                lambda f=signatures[name]: f(source_ids=tensor)
            )
        times = measure(candidates, rounds)
        out = model.generate(ids, max_length=max_length, **options)
        row = {
            "decoder": name if name == "greedy" else f"beam {beam_width}",
            "steps": int(ops.convert_to_numpy(out["lengths"]).max()),
            "median_ms": {
                k: round(1000 * statistics.median(v), 2)
                for k, v in times.items()
            },
            "compiled_first_call_s": round(first, 2),
            "eager_over_compiled": round(common.paired_ratio(
                times["eager"], times["compiled"]), 1),
        }
        if signatures is not None:
            row["compiled_over_exported"] = round(common.paired_ratio(
                times["compiled"], times["exported"]), 2)
        rows.append(row)
    return {"machine": common.machine_info(), "rounds": rounds,
            "max_length": max_length, "source_length": source_length,
            "vocab_size": VOCAB_SIZE, "units": UNITS, "rows": rows}


def markdown(result):
    exported = "compiled_over_exported" in result["rows"][0]
    head = "| decoder | steps | eager (ms) | compiled (ms) |"
    rule = "|---|---|---|---|"
    if exported:
        head += " exported (ms) | compiled / exported |"
        rule += "---|---|"
    head += " eager / compiled | compiled first call (s) |"
    rule += "---|---|"
    lines = [head, rule]
    for row in result["rows"]:
        ms = row["median_ms"]
        line = (f"| {row['decoder']} | {row['steps']} | {ms['eager']} "
                f"| {ms['compiled']} |")
        if exported:
            line += (f" {ms['exported']} "
                     f"| {row['compiled_over_exported']}x |")
        line += (f" {row['eager_over_compiled']}x "
                 f"| {row['compiled_first_call_s']} |")
        lines.append(line)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-length", type=int, default=24)
    parser.add_argument("--source-length", type=int, default=12)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--out", default="runs/generate-latency")
    args = parser.parse_args(argv)
    if min(args.rounds, args.max_length, args.beam_width) < 1 or (
        args.source_length < 2
    ):
        parser.error("--rounds, --max-length and --beam-width must be >= 1, "
                     "--source-length >= 2")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as export_dir:
        result = run(args.rounds, args.max_length, args.source_length,
                     args.beam_width, os.path.join(export_dir, "ids"))
    name = f"generate_latency_{keras.backend.backend()}.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(result, f, indent=2)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
