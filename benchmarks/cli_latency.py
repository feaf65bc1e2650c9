"""How long the command line takes to translate one sentence, and where
the time goes.

Whole processes, started `--runs` times each, interleaved round by round
(so a machine that slows down slows every candidate alike), after one
warm-up round (a warm disk cache, and the command line's cache of XLA
programs filled, in a temporary `XDG_CACHE_HOME`); each figure is the median wall time and
the median CPU time (user + system, of the process and its children):

- `import`: `python -c "import tensorflow, tensorflow_text"`, the floor
  that any TensorFlow command pays;
- `translate`: `python -m keras_attention translate --model EXPORT
  "one two three"` (the console script `keras-seq2seq-attention` runs the
  same code);
- with `--before DIR`, `translate before`: the same command with
  `PYTHONPATH=DIR`, a copy of an older `keras_attention` package (`git
  archive COMMIT keras_attention | tar -x -C DIR`).

Then the phases inside one process (`--runs` processes, medians): the
imports, loading the SavedModel and the first and second call, with the
command line's loader (`keras_attention.cli.saved_model.Signature`) and
with `tf.saved_model.load`, the garbage collector set as in the command
line's process (`keras_attention.cli.launch.PROCESS_GC_THRESHOLD`).

Without `--model`, a tiny Translator is trained and exported by the
command line into a temporary folder first (about a minute on 2 cores).

Usage:
    python -m benchmarks.cli_latency [--runs 7] [--model EXPORT]
        [--before DIR] [--out FILE]
"""

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from keras_attention.cli.launch import PROCESS_GC_THRESHOLD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCE = "one two three"
WORDS = "one two three four five six seven eight nine ten".split()
FRENCH = "un deux trois quatre cinq six sept huit neuf dix".split()

# The phases inside one process, printed as `name seconds` lines.
PHASES = r"""
import gc, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
gc.set_threshold(int(sys.argv[4]), *gc.get_threshold()[1:])
start = time.perf_counter()
def mark(name):
    global start
    now = time.perf_counter()
    print(name, now - start, flush=True)
    start = now
import tensorflow as tf
import tensorflow_text
mark("import tensorflow + tensorflow_text")
path, loader = sys.argv[1], sys.argv[2]
if loader == "signature":
    from keras_attention.cli.saved_model import Signature
    mark("import keras_attention")
    run = Signature(path, "serving_default")
    mark("load (Signature)")
    call = lambda: run(text=[sys.argv[3]])
else:
    loaded = tf.saved_model.load(path)
    mark("load (tf.saved_model.load)")
    function = loaded.signatures["serving_default"]
    call = lambda: function(tf.constant([sys.argv[3]]))
call()
mark(f"first call ({loader})")
call()
mark(f"second call ({loader})")
"""


def _cpu_of_children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command, env, cwd=None):
    """`(wall, cpu, stdout)` of one whole process."""
    cpu = _cpu_of_children()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          cwd=cwd)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed: {done.stderr[-2000:]}")
    return wall, _cpu_of_children() - cpu, done.stdout


def tiny_export(folder):
    """A tiny Translator trained and exported by the command line."""
    pairs = os.path.join(folder, "pairs.tsv")
    with open(pairs, "w") as f:
        for i in range(40):
            idx = [(i * 3 + k * 7) % 10 for k in range(1 + i % 3)]
            f.write(" ".join(WORDS[j] for j in idx) + "\t"
                    + " ".join(FRENCH[j] for j in idx) + "\n")
    model = os.path.join(folder, "tiny.keras")
    export = os.path.join(folder, "export")
    cli = [sys.executable, "-m", "keras_attention"]
    for args in (
        ["train", "--data", pairs, "--out", model, "--epochs", "2",
         "--seed", "1", "--units", "8", "--embedding-dim", "8",
         "--tokenizer", "whitespace"],
        ["export", "--model", model, "--out", export],
    ):
        run_once(cli + args, os.environ.copy())
    return export


def whole_commands(export, runs, before, cache):
    # The command line's cache (XLA programs) in a folder of its own,
    # filled by the warm-up round. The processes start in that folder, so
    # that the package comes from PYTHONPATH (`python -m` puts the current
    # folder first on the path): this checkout's, or `--before`'s.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", XDG_CACHE_HOME=cache)
    translate = [sys.executable, "-m", "keras_attention", "translate",
                 "--model", export, SENTENCE]
    candidates = {
        "import": ([sys.executable, "-c",
                    "import tensorflow, tensorflow_text"], env),
        "translate": (translate, dict(env, PYTHONPATH=ROOT)),
    }
    if before:
        candidates["translate before"] = (
            translate, dict(env, PYTHONPATH=os.path.abspath(before))
        )
    figures = {name: [] for name in candidates}
    for round_ in range(runs + 1):
        for name, (command, environment) in candidates.items():
            wall, cpu, _ = run_once(command, environment, cwd=cache)
            if round_:  # the first round warms the disk cache
                figures[name].append((wall, cpu))
    return figures


def phases(export, runs, folder):
    times = {}
    for _ in range(runs):
        for loader in ("signature", "tf.saved_model.load"):
            _, _, out = run_once(
                [sys.executable, "-c", PHASES, export, loader, SENTENCE,
                 str(PROCESS_GC_THRESHOLD)],
                dict(os.environ, PYTHONPATH=ROOT), cwd=folder,
            )
            for line in out.splitlines():
                name, seconds = line.rsplit(" ", 1)
                times.setdefault(name, []).append(float(seconds))
    return times


def report(figures, times, runs, export):
    load = os.getloadavg()
    lines = [
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} "
        f"{load[1]:.2f} {load[2]:.2f}, Python {platform.python_version()}, "
        f"{runs} runs each (medians), model {export}",
        "",
        "| command | wall s (median) | min | max | CPU s (median) |",
        "|---|---|---|---|---|",
    ]
    for name, values in figures.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        lines.append(
            f"| {name} | {statistics.median(walls):.2f} | {min(walls):.2f} "
            f"| {max(walls):.2f} | {statistics.median(cpus):.2f} |"
        )
    lines += ["", "| phase, in one process | s (median) |", "|---|---|"]
    for name, values in times.items():
        lines.append(f"| {name} | {statistics.median(values):.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--model", default=None,
                        help="an exported SavedModel (default: a tiny one)")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="a folder holding an older keras_attention")
    parser.add_argument("--out", default=None, help="also write here")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1; got {args.runs}")
    with tempfile.TemporaryDirectory() as folder:
        export = os.path.abspath(args.model or tiny_export(folder))
        figures = whole_commands(export, args.runs, args.before, folder)
        times = phases(export, args.runs, folder)
        text = report(figures, times, args.runs,
                      "tiny (8 units)" if args.model is None else export)
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
