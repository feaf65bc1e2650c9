"""The shipped G2P model as a SavedModel, LiteRT and ONNX: size, load
time, latency and dev-split WER/PER of each export.

The pretrained run (`examples/g2p/pretrained`) is loaded with
`Translator.from_run` and exported six ways: the SavedModel
(`translator.export(dir)`, the reference), LiteRT float32, float16 and
int8 (`format="litert"`, `quantize=None|"float16"|"int8"`) and ONNX
float32 and int8 (`format="onnx"`). Every figure is measured in this one
process, text in and text out: the SavedModel through its
`serving_default` and `beam` signatures (`load_signatures`,
`translate_all`), the others through `keras_attention.portable.load(path)`
and `PortableTranslator.translate` (the client's own tokenizing and
detokenizing in Python included).

- size: the model file in MB (10^6 bytes; the `.vocab.json` beside it is
  about 1 kB), the whole directory for the SavedModel;
- load: a fresh load until the first answer (one word, greedy) is back,
  median of `--loads` loads interleaved across the formats, in-process
  (Python, TensorFlow and the runtimes already imported);
- latency: one word and 64 words, greedy and beam 4, median of
  `--rounds` rounds after a warm-up call; each round calls every format
  in turn (the order reversed every other round), so that load from other
  processes hits all formats alike. A one-word figure is the mean of
  `ONE_WORD_CALLS` calls in a row within the round;
- dev split: WER and PER, greedy and beam 4, with the G2P recipe's own
  `examples.g2p.metrics.g2p_scores` on the split `python -m examples.g2p
  evaluate --run pretrained --split test` scores (the run's `test.tsv`:
  5,353 words carved from the training half of the g014b2b CMUdict split,
  the "dev" set of docs/g2p_results.md). The split is decoded in batches
  of `DEV_BATCH` words, the formats interleaved batch by batch; words a
  second is over those batches. Each format's translations are compared
  with the SavedModel's, word by word.

The SavedModel is `translator.export(DIR)` with its defaults (which,
since the export's `xla="auto"`, XLA-compile its decoding where
TensorFlow has XLA: the record says which; its load then includes the
first compile). The ONNX graph has no greedy decoder (tf2onnx cannot convert a loop
inside a condition): its greedy search is beam search of width 1, the
same tokens. Threads: the runtimes' defaults (LiteRT: `num_threads=None`;
ONNX Runtime: `intra_op_num_threads=0`, one thread per physical core),
and, for latency only, the float32 models with the other count
(`THREAD_VARIANTS`). The `threads` column counts the threads each
runtime adds at load (from /proc), plus the calling one.

Usage:
    python -m benchmarks.portable [--quick] [--out FILE]
        [--run examples/g2p/pretrained] [--work runs/portable-export]
        [--rounds 7] [--loads 3] [--max-words N] [--machine TEXT]

`--quick`: 3 rounds, one load, the first 256 dev words (a smoke run: about
5 minutes on 2 shared cores, 2.5 of them exporting; the full run about
15-20). `--out FILE` writes the tables with the
run's date, machine, commit and command (markdown); the figures also go
to `WORK/portable.json`.
"""

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time

from benchmarks import common

# name -> (label, format, quantize, path inside the work directory)
FORMATS = {
    "saved_model": ("SavedModel (reference)", "tf_saved_model", None,
                    "saved_model"),
    "litert_float32": ("LiteRT float32", "litert", None,
                       "litert_float32/g2p_float32.tflite"),
    "litert_float16": ("LiteRT float16", "litert", "float16",
                       "litert_float16/g2p_float16.tflite"),
    "litert_int8": ("LiteRT int8", "litert", "int8",
                    "litert_int8/g2p_int8.tflite"),
    "onnx_float32": ("ONNX float32", "onnx", None,
                     "onnx_float32/g2p_float32.onnx"),
    "onnx_int8": ("ONNX int8", "onnx", "int8", "onnx_int8/g2p_int8.onnx"),
}
# Latency only: the float32 models with another thread count than the
# runtime's default. name -> (base format, num_threads)
THREAD_VARIANTS = {
    "litert_float32_2t": ("litert_float32", 2),
    "onnx_float32_1t": ("onnx_float32", 1),
}
BEAM_WIDTH = 4
BATCH = 64
ONE_WORD_CALLS = 5
DEV_BATCH = 256
CASES = (("greedy", 1), (f"beam {BEAM_WIDTH}", 1), ("greedy", BATCH),
         (f"beam {BEAM_WIDTH}", BATCH))


def thread_count():
    """Threads of this process (Linux), else `None`."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def git(*args):
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def size_mb(path):
    if os.path.isdir(path):
        total = sum(
            os.path.getsize(os.path.join(root, name))
            for root, _, names in os.walk(path) for name in names
        )
    else:
        total = os.path.getsize(path)
    return total / 1e6


def export_call(name):
    """The `Translator.export` call that writes format `name`."""
    _, fmt, quantize, rel = FORMATS[name]
    if fmt == "tf_saved_model":
        return 'translator.export("DIR")'
    args = f'"{os.path.basename(rel)}", format="{fmt}"'
    if quantize:
        args += f', quantize="{quantize}"'
    return f"translator.export({args})"


def export_all(run_dir, work, reuse=False):
    """Exports the run in every format; returns name -> (path, seconds)."""
    from keras_attention.translator import Translator

    translator = Translator.from_run(run_dir)
    out = {}
    for name, (_, fmt, quantize, rel) in FORMATS.items():
        path = os.path.join(work, rel)
        done = os.path.exists(
            os.path.join(path, "saved_model.pb")
            if fmt == "tf_saved_model" else path
        )
        start = time.perf_counter()
        if not (reuse and done):
            if fmt == "tf_saved_model":
                translator.export(path)
            else:
                translator.export(path, format=fmt, quantize=quantize)
        seconds = None if reuse and done else time.perf_counter() - start
        out[name] = (path, seconds)
        print(f"exported {name}: {path}"
              + ("" if seconds is None else f" ({seconds:.1f} s)"),
              file=sys.stderr, flush=True)
    return out


class SavedModelTranslator:
    """The SavedModel's signatures with `PortableTranslator.translate`'s
    call."""

    def __init__(self, path):
        import tensorflow as tf

        from keras_attention.serving.export import load_signatures

        self.signatures = load_signatures(path, ["serving_default", "beam"])
        self.width = tf.constant(BEAM_WIDTH, tf.int32)

    def translate(self, texts, beam_width=0, batch_size=DEV_BATCH):
        from keras_attention.serving.export import translate_all

        if beam_width == 0:
            fn = self.signatures["serving_default"]
        else:
            assert beam_width == BEAM_WIDTH
            beam = self.signatures["beam"]

            def fn(text):
                return beam(text=text, beam_width=self.width)
        return translate_all(fn, list(texts), batch_size)


def load_translator(name, path, num_threads=None):
    if name == "saved_model":
        return SavedModelTranslator(path)
    from keras_attention import portable

    return portable.load(path, num_threads=num_threads)


def measure_loads(paths, word, loads):
    """name -> (load seconds per load, threads added by the last load),
    and the translators of the last loads."""
    seconds = {name: [] for name in paths}
    threads, loaded = {}, {}
    for i in range(loads):
        order = list(paths.items())
        if i % 2:
            order.reverse()
        for name, path in order:
            loaded.pop(name, None)
            before = thread_count()
            start = time.perf_counter()
            translator = load_translator(name, path)
            translator.translate([word], beam_width=0)
            seconds[name].append(time.perf_counter() - start)
            after = thread_count()
            if before is not None and after is not None:
                threads[name] = after - before
            loaded[name] = translator
    return seconds, threads, loaded


def measure_latency(translators, word, batch_words, rounds):
    """`(decoder, batch)` -> name -> seconds per call, one per round."""
    inputs = {1: [word], BATCH: batch_words}
    width = {"greedy": 0, f"beam {BEAM_WIDTH}": BEAM_WIDTH}
    times = {case: {name: [] for name in translators} for case in CASES}
    for decoder, batch in CASES:  # warm-up
        for translator in translators.values():
            translator.translate(inputs[batch], beam_width=width[decoder])
    for r in range(rounds):
        for decoder, batch in CASES:
            order = list(translators.items())
            if r % 2:
                order.reverse()
            calls = ONE_WORD_CALLS if batch == 1 else 1
            for name, translator in order:
                start = time.perf_counter()
                for _ in range(calls):
                    translator.translate(
                        inputs[batch], beam_width=width[decoder]
                    )
                times[(decoder, batch)][name].append(
                    (time.perf_counter() - start) / calls
                )
    return times


def decode_dev(translators, words, beam_width):
    """name -> (translations, seconds): the words in batches of
    `DEV_BATCH`, the formats interleaved batch by batch, after one untimed
    batch (the first call at that batch size)."""
    for translator in translators.values():
        translator.translate(
            words[:DEV_BATCH], beam_width=beam_width, batch_size=DEV_BATCH
        )
    out = {name: [] for name in translators}
    seconds = dict.fromkeys(translators, 0.0)
    for i, start in enumerate(range(0, len(words), DEV_BATCH)):
        chunk = words[start : start + DEV_BATCH]
        order = list(translators.items())
        if i % 2:
            order.reverse()
        for name, translator in order:
            begin = time.perf_counter()
            results = translator.translate(
                chunk, beam_width=beam_width, batch_size=DEV_BATCH
            )
            seconds[name] += time.perf_counter() - begin
            out[name].extend(r["translation"] for r in results)
    return {name: (out[name], seconds[name]) for name in translators}


def score_dev(translators, lexicon):
    """name -> decoder -> the recipe's metrics, decode seconds and the
    number of words whose translation differs from the SavedModel's."""
    from examples.g2p import metrics as metrics_lib

    words = list(lexicon.entries)
    references = [lexicon.entries[w] for w in words]
    scores = {name: {} for name in translators}
    for decoder, width in (("greedy", 0), (f"beam {BEAM_WIDTH}", BEAM_WIDTH)):
        decoded = decode_dev(translators, words, width)
        reference = decoded["saved_model"][0]
        for name, (translations, seconds) in decoded.items():
            metrics = metrics_lib.g2p_scores(
                [t.split() for t in translations], references
            )
            metrics["decode_seconds"] = seconds
            metrics["words_per_s"] = len(words) / seconds
            metrics["differ_from_saved_model"] = sum(
                a != b for a, b in zip(translations, reference)
            )
            metrics["differing_examples"] = [
                (w, b, a) for w, a, b in zip(words, translations, reference)
                if a != b
            ][:5]
            scores[name][decoder] = metrics
        print(f"dev split, {decoder}: done", file=sys.stderr, flush=True)
    return scores


def pick_word(words):
    """The first word of the median length."""
    lengths = sorted(len(w) for w in words)
    median = lengths[len(lengths) // 2]
    return next(w for w in words if len(w) == median)


def run(args):
    import tensorflow as tf

    from examples.g2p import evaluate as evaluate_lib

    # The code this process imports: read before anything else, since
    # others may commit while it runs.
    started = datetime.datetime.now(datetime.timezone.utc)
    commit = git("rev-parse", "--short", "HEAD")
    uncommitted = git("status", "--porcelain", "--untracked-files=no",
                      "keras_attention", "examples")
    lexicon = evaluate_lib.load_split(args.run, "test")
    if args.max_words:
        lexicon.entries = dict(list(lexicon.entries.items())[: args.max_words])
    words = list(lexicon.entries)
    word, batch_words = pick_word(words), words[:BATCH]
    load_before = os.getloadavg()
    exports = export_all(args.run, args.work, args.reuse_exports)
    paths = {name: path for name, (path, _) in exports.items()}

    print("loading", file=sys.stderr, flush=True)
    load_s, threads, translators = measure_loads(paths, word, args.loads)
    variants = dict(translators)
    for name, (base, num_threads) in THREAD_VARIANTS.items():
        variants[name] = load_translator(base, paths[base], num_threads)
    print("latency rounds", file=sys.stderr, flush=True)
    latency = measure_latency(variants, word, batch_words, args.rounds)
    print("dev split", file=sys.stderr, flush=True)
    dev = score_dev(translators, lexicon)

    rows = []
    for name in list(FORMATS) + list(THREAD_VARIANTS):
        base, num_threads = THREAD_VARIANTS.get(name, (name, None))
        label, fmt, quantize, _ = FORMATS[base]
        if name == "saved_model":
            intra = tf.config.threading.get_intra_op_parallelism_threads()
            thread_text = f"TF default (intra-op {intra or 'all cores'})"
        elif num_threads is not None:
            thread_text = str(num_threads)
        else:
            added = threads.get(name)
            thread_text = "default" + (
                "" if added is None else f" ({added + 1})"
            )
        row = {
            "name": name,
            "label": label,
            "export": export_call(base),
            "threads": thread_text,
            "latency_ms": {
                f"{decoder}, {batch}": 1000 * common.median(t[name])
                for (decoder, batch), t in latency.items()
            },
            "latency_rounds_ms": {
                f"{decoder}, {batch}": [round(1000 * s, 3) for s in t[name]]
                for (decoder, batch), t in latency.items()
            },
        }
        if name in FORMATS:
            row.update(
                size_mb=size_mb(paths[name]),
                export_s=exports[name][1],
                load_s=common.median(load_s[name]),
                load_rounds_s=[round(s, 3) for s in load_s[name]],
                dev=dev[name],
            )
        rows.append(row)
    return {
        "date_utc": started.strftime("%Y-%m-%d %H:%M"),
        "end_utc": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%H:%M"),
        "command": "python -m benchmarks.portable " + " ".join(
            shlex.quote(a) for a in sys.argv[1:]),
        "commit": commit,
        "uncommitted": uncommitted,
        "saved_model_xla": saved_model_xla(paths["saved_model"]),
        "machine": args.machine or describe_machine(),
        "machine_info": common.machine_info(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "runtimes": runtime_versions(),
        "run": args.run,
        "dev_words": len(words),
        "one_word": word,
        "rounds": args.rounds,
        "loads": args.loads,
        "quick": args.quick,
        "rows": rows,
    }


def saved_model_xla(path):
    """Whether the SavedModel holds XLA-compiled functions (the export's
    default `xla="auto"` where TensorFlow has XLA)."""
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        return b"_XlaMustCompile" in f.read()


def describe_machine():
    info = common.machine_info()
    return (f"{info['cpu_count']} cores, {info['cpu']}, "
            + ("no GPU" if not info["gpus"] else ", ".join(info["gpus"])))


def runtime_versions():
    versions = {}
    for module in ("tensorflow", "keras", "ai_edge_litert", "onnxruntime",
                   "tf2onnx", "onnx"):
        try:
            versions[module] = __import__(module).__version__
        except (ImportError, AttributeError):
            versions[module] = None
    return versions


def _ms(value):
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def speed_table(result):
    head = ("| format | export | threads | size (MB) | load (s) "
            "| 1 word greedy (ms) | 1 word beam 4 (ms) "
            "| 64 words greedy (ms) | 64 words beam 4 (ms) |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        lat = row["latency_ms"]
        size = f"{row['size_mb']:.1f}" if "size_mb" in row else ""
        load = f"{row['load_s']:.2f}" if "load_s" in row else ""
        lines.append(
            f"| {row['label']} | `{row['export']}` | {row['threads']} "
            f"| {size} | {load} | "
            + " | ".join(_ms(lat[f"{d}, {b}"]) for d, b in CASES) + " |"
        )
    return "\n".join(lines)


def quality_table(result):
    beam = f"beam {BEAM_WIDTH}"
    lines = [
        "| format | WER greedy | WER beam 4 | PER greedy | PER beam 4 "
        "| words differing from the SavedModel (greedy / beam 4) "
        "| dev words/s (greedy / beam 4) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        if "dev" not in row:
            continue
        g, b = row["dev"]["greedy"], row["dev"][beam]
        differ = ("(reference)" if row["name"] == "saved_model" else
                  f"{g['differ_from_saved_model']} / "
                  f"{b['differ_from_saved_model']}")
        lines.append(
            f"| {row['label']} | {g['wer']:.2f} | {b['wer']:.2f} "
            f"| {g['per']:.2f} | {b['per']:.2f} | {differ} "
            f"| {g['words_per_s']:,.0f} / {b['words_per_s']:,.0f} |"
        )
    return "\n".join(lines)


def report(result):
    """The raw record: run details, both tables, the per-round figures."""
    beam = f"beam {BEAM_WIDTH}"
    lines = [
        f"# LiteRT and ONNX exports of the pretrained G2P model, "
        f"{result['date_utc'][:10]}",
        "",
        f"- command: `{result['command']}`",
        f"- date (UTC): {result['date_utc']} to {result['end_utc']}",
        f"- machine: {result['machine']} "
        f"({result['machine_info']['cpu']}, "
        f"{result['machine_info']['memory_gib']} GiB); load average "
        f"{result['load_average_before']} before, "
        f"{result['load_average_after']} after",
        f"- commit: `{result['commit']}`"
        + (" (uncommitted changes in the working tree: "
           + ", ".join(line.split(maxsplit=1)[-1]
                       for line in result["uncommitted"].splitlines())
           + ")" if result["uncommitted"] else ""),
        "- the SavedModel: `translator.export(DIR)`, its defaults; its "
        "decoding " + ("XLA-compiled" if result["saved_model_xla"]
                       else "in plain TensorFlow ops (no XLA)"),
        "- runtimes: " + ", ".join(
            f"{k} {v}" for k, v in result["runtimes"].items()),
        f"- model: `{result['run']}`; dev split: its `test.tsv`, "
        f"{result['dev_words']} words; one word: `{result['one_word']}`, "
        f"64 words: the first 64 dev words",
        f"- latency: median of {result['rounds']} interleaved rounds "
        f"(one word: mean of {ONE_WORD_CALLS} calls a round); load: median "
        f"of {result['loads']} in-process loads to the first answer",
        "",
        speed_table(result),
        "",
        quality_table(result),
        "",
        "## Per round",
        "",
    ]
    for row in result["rows"]:
        lines.append(f"- {row['label']}, threads {row['threads']}:")
        if "load_rounds_s" in row:
            lines.append(f"  - load (s): {row['load_rounds_s']}"
                         + ("" if row.get("export_s") is None else
                            f"; export took {row['export_s']:.1f} s"))
        for case, values in row["latency_rounds_ms"].items():
            lines.append(f"  - {case} (ms): {values}")
        if "dev" in row:
            for decoder in ("greedy", beam):
                m = row["dev"][decoder]
                lines.append(
                    f"  - dev {decoder}: {m['word_errors']} word errors, "
                    f"{m['phone_edits']} phone edits / "
                    f"{m['reference_phones']} phones, "
                    f"{m['decode_seconds']:.1f} s; differing from the "
                    f"SavedModel: {m['differ_from_saved_model']}"
                    + "".join(
                        f"; `{w}`: SavedModel {a!r}, this {b!r}"
                        for w, a, b in m["differing_examples"])
                )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", default="examples/g2p/pretrained",
                        help="the G2P run directory (default: the shipped "
                        "pretrained model)")
    parser.add_argument("--work", default="runs/portable-export",
                        help="where the exports and portable.json go")
    parser.add_argument("--out", default=None,
                        help="also write the record (markdown) to this file")
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds, one load, 256 dev words")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--loads", type=int, default=None)
    parser.add_argument("--max-words", type=int, default=None,
                        help="score the first N dev words only")
    parser.add_argument("--machine", default=None,
                        help="how the record names the machine")
    parser.add_argument("--reuse-exports", action="store_true",
                        help="keep exports already in --work")
    args = parser.parse_args(argv)
    quick = dict(rounds=3, loads=1, max_words=256)
    full = dict(rounds=7, loads=3, max_words=None)
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.rounds < 1 or args.loads < 1 or (
            args.max_words is not None and args.max_words < BATCH):
        parser.error(f"--rounds and --loads must be >= 1, --max-words >= "
                     f"{BATCH}")
    os.makedirs(args.work, exist_ok=True)
    result = run(args)
    with open(os.path.join(args.work, "portable.json"), "w") as f:
        json.dump(result, f, indent=2)
    text = report(result)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(speed_table(result))
    print()
    print(quality_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
