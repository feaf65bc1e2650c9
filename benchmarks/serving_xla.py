"""The exported translator's string signatures, with and without XLA.

A trained run of either example (`examples.nmt` or `examples.g2p`) is
exported three times with the example's own `export` command: plain,
`--xla step` (the decoder's step XLA-compiled inside every signature) and
`--xla decode` (the encoder and the whole decoding loop, from token ids to
token ids, one XLA function; the tokenizers and the output formatting stay
TensorFlow ops). The three SavedModels are loaded in this process and their
`greedy` and `beam` signatures called on the same batches of raw strings,
interleaved rounds. Sentences per second is `batch / median call time`;
the ratios are the medians of the per-round ratios against the plain export.
The first call of each XLA export (per input shape) compiles: it is reported
apart, as `compile_s`, and left out of the timed rounds.

Usage:
    python -m benchmarks.serving_xla --run runs/demo [--example nmt]
        [--texts FILE] [--batches 1 64] [--beam-width 4] [--rounds 7]
        [--out runs/serving-xla]

`--texts`: one input per line; defaults to the first column of the run's
`test.tsv`. Each batch size `B` takes the first `B` inputs.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from benchmarks import common

VARIANTS = {"plain": [], "xla_step": ["--xla", "step"],
            "xla_decode": ["--xla", "decode"]}


def read_texts(run_dir, texts_file=None):
    """The inputs: the lines of `texts_file`, else the first column of the
    run's `test.tsv`."""
    path = texts_file or os.path.join(run_dir, "test.tsv")
    with open(path, encoding="utf-8") as f:
        texts = [line.rstrip("\n").split("\t")[0] for line in f]
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise ValueError(f"No input text in {path}")
    return texts


def export_variants(example, run_dir, out_dir):
    """Exports the run once per variant; returns variant -> directory."""
    paths = {}
    for name, flags in VARIANTS.items():
        path = os.path.join(out_dir, name)
        subprocess.run(
            [sys.executable, "-m", f"examples.{example}", "export",
             "--run", run_dir, "--out", path] + flags,
            check=True, stdout=subprocess.DEVNULL,
        )
        paths[name] = path
    return paths


def calls(signatures, texts, batches, beam_width):
    """`(decoder, batch)` -> variant -> zero-argument call."""
    import tensorflow as tf

    cases = {}
    for batch in batches:
        text = tf.constant((texts * batch)[:batch])
        width = tf.constant(beam_width)
        for decoder in ("greedy", "beam"):
            cases[(decoder, batch)] = {
                name: (
                    lambda f=sig[decoder], t=text: f(text=t)
                ) if decoder == "greedy" else (
                    lambda f=sig[decoder], t=text: f(text=t, beam_width=width)
                )
                for name, sig in signatures.items()
            }
    return cases


def first_call_seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(signatures, texts, batches, beam_width, rounds):
    """Rows of the table: `signatures` maps each of `VARIANTS` to a loaded
    SavedModel's signatures."""
    rows = []
    for (decoder, batch), fns in calls(
        signatures, texts, batches, beam_width
    ).items():
        first = {name: first_call_seconds(fn) for name, fn in fns.items()}
        times = common.interleaved(fns, warmup=1, repeats=rounds)
        plain = times["plain"]
        rows.append({
            "decoder": decoder if decoder == "greedy"
            else f"beam {beam_width}",
            "batch": batch,
            "sentences_per_s": {
                name: round(batch / common.median(t), 1)
                for name, t in times.items()
            },
            "vs_plain": {
                name: round(common.paired_ratio(plain, t), 2)
                for name, t in times.items() if name != "plain"
            },
            "first_call_s": {k: round(v, 4) for k, v in first.items()},
        })
    return rows


def run(example, run_dir, out_dir, texts, batches, beam_width, rounds):
    import tensorflow as tf

    if example == "nmt":
        import tensorflow_text  # noqa: F401  (the WordPiece ops)
    paths = export_variants(example, run_dir, out_dir)
    signatures = {
        name: tf.saved_model.load(path).signatures
        for name, path in paths.items()
    }
    rows = measure(signatures, texts, batches, beam_width, rounds)
    return {"machine": common.machine_info(), "run": run_dir,
            "example": example, "rounds": rounds, "rows": rows}


def markdown(result):
    lines = [
        "| decoder | batch | plain (sent/s) | `--xla step` | `--xla decode` "
        "| first call: plain / step / decode (s) |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        speed, ratio, first = (row["sentences_per_s"], row["vs_plain"],
                               row["first_call_s"])
        lines.append(
            f"| {row['decoder']} | {row['batch']} | {speed['plain']} "
            f"| {speed['xla_step']} ({ratio['xla_step']}x) "
            f"| {speed['xla_decode']} ({ratio['xla_decode']}x) "
            f"| {first['plain']} / {first['xla_step']} / "
            f"{first['xla_decode']} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True,
                        help="a trained run directory of the example")
    parser.add_argument("--example", default="nmt", choices=("nmt", "g2p"))
    parser.add_argument("--texts", default=None,
                        help="inputs, one per line (default: RUN/test.tsv)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="runs/serving-xla")
    args = parser.parse_args(argv)
    if min(args.batches) < 1 or args.rounds < 1 or args.beam_width < 1:
        parser.error("--batches, --rounds and --beam-width must be >= 1")
    os.makedirs(args.out, exist_ok=True)
    result = run(args.example, args.run, args.out,
                 read_texts(args.run, args.texts), args.batches,
                 args.beam_width, args.rounds)
    with open(os.path.join(args.out, "serving_xla.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
