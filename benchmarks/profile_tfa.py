"""TFA 0.23's decoder, profiled op by op: the TFA side of
`benchmarks.profile_step --decode ... --tfa-python PYTHON`.

    python -m benchmarks.profile_tfa --decode greedy|beam --batch 64
        --steps 20 --sizes JSON [--parallel]

Runs under the TFA venv of `make bench-peers` (TensorFlow 2.15, TFA 0.23),
in the repository's root. Builds the Luong model of `benchmarks.peers_tfa`
at `--sizes` (those of `benchmarks.peers`, as JSON), warms its greedy or
beam `tf.function` up, profiles `--steps` calls with
`benchmarks.profile_ops.profile` on one inter-op thread (`--parallel`
keeps TensorFlow's) and prints one JSON line: `untraced_s`, `traced_s`,
`totals` (microseconds per op type over the calls), `counts` and
`versions`. Imports only TensorFlow, TFA and the benchmarks' TensorFlow
helpers, never `keras_attention`.
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decode", choices=["greedy", "beam"],
                        required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sizes", required=True,
                        help="the sizes of benchmarks.peers, as JSON")
    parser.add_argument("--parallel", action="store_true")
    args = parser.parse_args(argv)
    if not args.parallel:
        tf.config.threading.set_inter_op_parallelism_threads(1)
    # After the threads are set: TFA's import runs TensorFlow ops.
    import tensorflow_addons as tfa

    from benchmarks import peers_tfa
    from benchmarks.profile_ops import profile

    sizes = dict(json.loads(args.sizes), decode_batches=[args.batch],
                 tfa_attentions=["luong"])
    call = peers_tfa.setup(sizes)[f"tfa-{args.decode}-b{args.batch}"]
    result = profile(call, args.steps)
    print(json.dumps({
        "untraced_s": result["untraced_s"],
        "traced_s": result["traced_s"],
        "totals": dict(result["totals"]),
        "counts": dict(result["counts"]),
        "versions": {"tensorflow": tf.__version__, "tfa": tfa.__version__},
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
