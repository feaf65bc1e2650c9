"""Packages a G2P run for shipping: the model's weights of one checkpoint
(without the optimizer's state, a third of a checkpoint's size), the run's
`run.json` and its held-out splits (so `evaluate --run` scores them without
the training data).

    python benchmarks/g2p/package_run.py RUN WEIGHTS OUT [--float16]

`WEIGHTS`: `RUN/model.weights.h5` or one of `RUN/checkpoints/`; several
separated by commas are averaged (`run_dir.average_checkpoints`, e.g. the
checkpoints of the last epochs). `--float16` stores the weights as
float16 (`run_dir.store_float16`: half the size; the model computes in
its own dtype from the rounded weights).
"""

import argparse
import os
import shutil

from keras_attention.training.splits import save_held_out
from examples.g2p import data as data_lib
from examples.g2p import train as train_lib
from keras_attention.training import run_dir as run_lib


def package(run, weights, out, float16=False):
    paths = weights.split(",")
    seq2seq, _, _, configs = train_lib.load_trained(run, paths[-1])
    if len(paths) > 1:
        run_lib.average_checkpoints(seq2seq, paths)
    os.makedirs(out, exist_ok=True)
    seq2seq.save_weights(os.path.join(out, "model.weights.h5"))
    if float16:
        run_lib.store_float16(os.path.join(out, "model.weights.h5"))
    shutil.copy(os.path.join(run, run_lib.RUN_CONFIG), out)
    held_out = {}
    for name in run_lib.SPLIT_FILES:
        rows = run_lib.load_split(run, name)
        held_out[name] = rows
    if any(rows is None for rows in held_out.values()):
        # A run written before the split files: split its data again.
        save_held_out(
            out, train_lib.load_splits(configs[0]), data_lib.lexicon_rows
        )
    else:
        for name, rows in held_out.items():
            run_lib.save_split(out, name, rows)
    return sorted(os.listdir(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("weights")
    parser.add_argument("out")
    parser.add_argument(
        "--float16", action="store_true", help="store the weights as float16"
    )
    args = parser.parse_args()
    print(package(args.run, args.weights, args.out, args.float16))


if __name__ == "__main__":
    main()
