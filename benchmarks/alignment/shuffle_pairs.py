"""Shuffles a pairs file and its Pharaoh links the same way (fixed seed).

The Anki file is sorted by length; the example's `--max-examples N` keeps
the first N pairs, so a subset of a shuffled file covers every length. The
first `--keep-first` lines (the gold pairs) stay first.

    python -m benchmarks.alignment.shuffle_pairs --data IN --links IN.align \\
        --keep-first 100 --out-data OUT --out-links OUT.align
"""

import argparse
import random


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--links", nargs="*", default=[])
    p.add_argument("--keep-first", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-data", required=True)
    p.add_argument("--out-links", nargs="*", default=[])
    args = p.parse_args(argv)
    with open(args.data, encoding="utf-8") as f:
        data = f.read().splitlines()
    links = []
    for path in args.links:
        with open(path, encoding="utf-8") as f:
            links.append(f.read().splitlines())
        if len(links[-1]) != len(data):
            raise ValueError(
                f"{path} has {len(links[-1])} lines, {args.data} {len(data)}"
            )
    order = list(range(args.keep_first, len(data)))
    random.Random(args.seed).shuffle(order)
    order = list(range(args.keep_first)) + order
    with open(args.out_data, "w", encoding="utf-8") as f:
        f.writelines(data[i] + "\n" for i in order)
    for lines, path in zip(links, args.out_links):
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(lines[i] + "\n" for i in order)


if __name__ == "__main__":
    main()
