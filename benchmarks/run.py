"""Runs the benchmarks and writes `results.json` and `results.md`.

    python -m benchmarks.run [--quick] [--out DIR] [--sections ...]

`--quick` (under two minutes on two CPU cores) measures fewer shapes and
rounds; the full mode measures every shape (batch 64, source
and target 16, 64 and 256, dims 256 and 512), halving the batch of a case
whose Keras construction would not fit in `--memory-budget-gb`.
See `docs/benchmarks.md` for the method and the published figures.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import common  # noqa: E402
from benchmarks import layers  # noqa: E402
from benchmarks import report  # noqa: E402

SECTIONS = ("layers", "efficiency", "scaling", "nmt")


def make_config(quick, memory_budget_gb=None):
    gib = 2**30
    if quick:
        budget = (memory_budget_gb or 1.0) * gib
        return {
            "mode": "quick",
            "layers": {
                "batch": 64,
                "lengths": (16, 64, 256),
                "dims": (256,),
                "warmup": 1,
                "repeats": 3,
                "min_seconds": 0.5,
                "with_mha": False,
                "memory_budget_bytes": budget,
            },
            "efficiency": {
                "batch": 64,
                "lengths": (256,),
                "dims": (256,),
                "warmup": 1,
                "repeats": 3,
            },
            "scaling": {
                "batch": 8,
                "target": 32,
                "dim": 128,
                "sources": (16, 128, 1024),
                "warmup": 1,
                "repeats": 2,
                "memory_budget_bytes": budget,
            },
            "nmt": {"quick": True},
        }
    budget = (memory_budget_gb or 4.0) * gib
    return {
        "mode": "full",
        "layers": {
            "batch": 64,
            "lengths": (16, 64, 256),
            "dims": (256, 512),
            "warmup": 2,
            "repeats": 7,
            "min_seconds": 4.0,
            "with_mha": True,
            "memory_budget_bytes": budget,
        },
        "efficiency": {
            "batch": 64,
            "lengths": (64, 256),
            "dims": (256, 512),
            "warmup": 2,
            "repeats": 7,
            "min_seconds": 4.0,
        },
        "scaling": {
            "batch": 32,
            "target": 64,
            "dim": 256,
            "sources": (16, 32, 64, 128, 256, 512, 1024),
            "warmup": 1,
            "repeats": 5,
            "memory_budget_bytes": budget,
        },
        "nmt": {"quick": False},
    }


def run(quick=False, out="runs/benchmarks", sections=SECTIONS,
        memory_budget_gb=None, config=None, log=print):
    """Runs the chosen sections; returns the results dict (also written)."""
    config = config or make_config(quick, memory_budget_gb)
    started = time.perf_counter()
    results = {
        "mode": config["mode"],
        "machine": common.machine_info(),
        "config": config,
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    if "layers" in sections:
        log("Layers, forward+backward, ours against Keras:")
        results["layers"] = layers.run_layers(config["layers"], log=log)
        log(f"  ({time.perf_counter() - started:.0f} s so far)")
    if "efficiency" in sections:
        log("Efficiency against a batched matmul:")
        results["efficiency"] = layers.run_efficiency(
            config["efficiency"], log=log
        )
        log(f"  ({time.perf_counter() - started:.0f} s so far)")
    if "scaling" in sections:
        log("Scaling with the source length:")
        results["scaling"] = layers.run_scaling(config["scaling"], log=log)
        log(f"  ({time.perf_counter() - started:.0f} s so far)")
    if "nmt" in sections:
        log("NMT throughput:")
        from benchmarks import nmt

        results["nmt"] = nmt.run_nmt(config["nmt"], log=log)
        log(f"  ({time.perf_counter() - started:.0f} s so far)")
    results["targets"] = report.check_targets(results)
    results["seconds"] = time.perf_counter() - started
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(report.markdown(results))
    log(f"Wrote {out}/results.json and {out}/results.md "
        f"in {results['seconds']:.0f} s")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer shapes and rounds (< 2 min on 2 cores)")
    parser.add_argument("--out", default="runs/benchmarks",
                        help="output folder (default runs/benchmarks)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS,
                        default=list(SECTIONS))
    parser.add_argument("--memory-budget-gb", type=float, default=None,
                        help="largest estimated Keras step; the batch of a "
                        "case is halved until it fits (1 quick, 4 full)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.out, args.sections, args.memory_budget_gb)
    print(report.markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
