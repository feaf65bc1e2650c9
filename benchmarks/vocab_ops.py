"""Per-step vocabulary-wide ops of the decoders, timed one by one.

    python -m benchmarks.vocab_ops [--rows 1 5 64 320] [--vocab 5000]
        [--beam-width 5] [--repeats 15]

A decoding step reads the `(rows, vocab_size)` scores a few times: the
pick (greedy: an argmax; beam search: a top-k over each sentence's
`beam_width * vocab_size` extensions), the mask of the forbidden tokens,
the softmax of the picked token's log-probability. Which TensorFlow op
does each job costs very different times on CPU (`TopKV2` pushes every
element through a heap; a maximum is vectorized), and this table is what
`keras_attention.decoding` chose its ops by. Each op runs 50 times in
one `tf.function`, chained through a scalar so that none is folded; the
"chain only" row is that chain's own cost, to subtract. Medians of
`--repeats` calls, microseconds per op. The beam rows take the `rows` as
sentences of `--beam-width` rows (`-` where they do not divide).
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from keras_attention.decoding import selection  # noqa: E402

CHAIN = 50


def cases(rows: int, vocab: int, width: int):
    """name -> `fn(x)` over `x` `(rows, vocab)` float32."""
    allowed = tf.constant(np.arange(vocab) > 1)[None]
    penalty = tf.where(allowed, 0.0, float("-inf"))
    sentences = rows // width

    def flat(x):
        return tf.reshape(x, (sentences, -1))

    beam = {
        f"beam top-{width}, TopKV2 over {width} x vocab": lambda x: (
            tf.math.top_k(flat(x), width)[0]),
        f"beam top-{width}, selection.top_k (chunked)": lambda x: (
            selection.top_k(flat(x), width)[0]),
    }
    return {
        "chain only": lambda x: x[:, 0],
        "ArgMax": lambda x: tf.argmax(x, 1, output_type=tf.int32),
        "TopKV2, k = 1": lambda x: tf.math.top_k(x, 1)[0],
        "Max": lambda x: tf.reduce_max(x, 1),
        "Softmax": lambda x: tf.nn.softmax(x),
        "LogSoftmax": lambda x: tf.nn.log_softmax(x),
        "mask: SelectV2 of a (1, vocab) bool": lambda x: tf.where(
            allowed, x, float("-inf")),
        "mask: AddV2 of a (1, vocab) -inf row": lambda x: x + penalty,
        # Beam search: `rows` are whole sentences of `width` rows.
        **(beam if sentences and rows % width == 0 else {}),
    }


def time_op(fn, x, repeats: int) -> float:
    """Microseconds per call of `fn`, from a chain of `CHAIN` calls."""

    @tf.function
    def chain(x):
        carry = tf.zeros(())
        for _ in range(CHAIN):
            out = fn(x + carry)
            carry = carry + tf.cast(tf.reshape(out, [-1])[0], tf.float32) * 0
        return carry

    chain(x).numpy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        chain(x).numpy()
        times.append(time.perf_counter() - start)
    return common.median(times) / CHAIN * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 5, 64, 320])
    parser.add_argument("--vocab", type=int, default=5000)
    parser.add_argument("--beam-width", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    if min(args.rows) < 1 or args.vocab < 2 or args.repeats < 1:
        parser.error("--rows, --vocab and --repeats must be positive")
    if not 1 <= args.beam_width <= args.vocab:
        parser.error("--beam-width must lie in [1, --vocab]")
    names = list(cases(args.beam_width, args.vocab, args.beam_width))
    results = {}
    for rows in args.rows:
        x = tf.random.stateless_normal((rows, args.vocab), seed=(0, rows))
        for name, fn in cases(rows, args.vocab, args.beam_width).items():
            results[name, rows] = time_op(fn, x, args.repeats)
    print("| op over (rows, vocab) | " + " | ".join(
        f"rows {r}, us" for r in args.rows) + " |")
    print("|---|" + "---|" * len(args.rows))
    for name in names:
        print(f"| {name} | " + " | ".join(
            f"{results[name, r]:.1f}" if (name, r) in results else "-"
            for r in args.rows) + " |")
    print(f"\nvocabulary {args.vocab}; beam rows are sentences of "
          f"{args.beam_width} rows; {common.machine_info()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
