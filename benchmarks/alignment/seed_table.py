"""One table row per training setting over seeds (benchmarks/alignment/seeds.sh).

Reads each run directory's `aer.json` (score-alignment on the gold pairs)
and `test.json` (evaluate, greedy) and prints the median, minimum and
maximum of AER, BLEU and chrF, and every seed's AER, as a Markdown row:

    python -m benchmarks.alignment.seed_table --name bridge-dropout \
        runs/fra/seeds/bd_s0 runs/fra/seeds/bd_s1 ...
"""

import argparse
import json
import os
import statistics


def load(run_dir: str) -> dict:
    """AER (percent), BLEU and chrF of one run directory."""
    with open(os.path.join(run_dir, "aer.json")) as f:
        aer = json.load(f)
    with open(os.path.join(run_dir, "test.json")) as f:
        test = json.load(f)
    return {"aer": 100 * aer["aer"], "bleu": test["bleu"],
            "chrf": test["chrf"]}


def spread(values: list) -> str:
    """`median (min-max)` to one decimal."""
    return (f"{statistics.median(values):.1f} "
            f"({min(values):.1f}-{max(values):.1f})")


def row(name: str, runs: list) -> str:
    """The Markdown row of a setting: name, seeds, AER, BLEU, chrF, per seed."""
    per_seed = " / ".join(f"{r['aer']:.1f}" for r in runs)
    below = sum(r["aer"] <= 35.0 for r in runs)
    return (f"| {name} | {len(runs)} | {spread([r['aer'] for r in runs])} | "
            f"{below} of {len(runs)} | {per_seed} | "
            f"{spread([r['bleu'] for r in runs])} | "
            f"{spread([r['chrf'] for r in runs])} |")


HEADER = ("| setting | seeds | AER % median (min-max) | AER <= 35 % | "
          "AER % per seed | BLEU | chrF |\n|---|---|---|---|---|---|---|")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the setting's name")
    parser.add_argument("--header", action="store_true",
                        help="print the table header first")
    parser.add_argument("runs", nargs="+", help="run directories")
    args = parser.parse_args(argv)
    if args.header:
        print(HEADER)
    print(row(args.name, [load(r) for r in args.runs]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
