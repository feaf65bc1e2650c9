"""G2P training speed: the fused step-wise decoder against the generic loop.

The shipped model's configuration (`examples/g2p/pretrained/run.json`:
step-wise, additive attention, bidirectional encoder of 256 units a
direction, embeddings 128, dropout 0.2, label smoothing 0.1, batch 256,
its dtype policy and XLA setting resolved as `train` resolves them) is
built twice: with `AttentionRNN`'s default fused loop and with
`decoder_rnn.fused = False` (the generic loop: autodiff through the cell
and the attention at every step). Both are compiled as `train` compiles
them and fit on the same batches of the training half (the example's input
pipeline, length buckets), `--steps` batches a round, interleaved rounds.
Prints the median seconds per batch of each, their ratio (the median of
the per-round ratios), and the epoch time each gives for the training
half.

    python -m benchmarks.g2p.fused_step [--lexicon PATH] [--run RUN]
        [--steps 30] [--rounds 5] [--json FILE]
"""

import argparse
import json
import math
import os
import sys
import time

from benchmarks import common
from keras_attention.training import acceleration
from keras_attention.training import runs as training_runs
from examples.g2p import config as config_lib
from examples.g2p import train as train_lib
from keras_attention.training import dataset as dataset_lib

RECIPE_RUN = os.path.join("examples", "g2p", "pretrained")


def build(model_config, train_config, fused, total_steps):
    """The recipe's compiled `Seq2Seq`; `fused=False`: the generic loop."""
    policy = acceleration.mixed_precision_policy(train_config.mixed_precision)
    with acceleration.dtype_policy(policy):
        seq2seq = training_runs.build_model(model_config)
        if not fused:
            seq2seq.decoder_rnn.fused = False
        training_runs.compile_model(seq2seq, train_config, total_steps)
    return seq2seq


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--lexicon", default=None,
        help="WORD<TAB>PHONES file to draw the batches from (default: the "
        "run's own, for the shipped model ../shared/data/cmudict-g2p/"
        "train.tsv, the training half of the standard split)",
    )
    parser.add_argument(
        "--run", default=RECIPE_RUN,
        help="the run whose configuration is timed (default: the shipped "
        "model's)",
    )
    parser.add_argument("--steps", type=int, default=30,
                        help="batches per timed round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the figures")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.rounds < 1:
        parser.error("--steps and --rounds must be >= 1")
    configs = train_lib.load_configs(args.run)
    if args.lexicon:
        configs = config_lib.replace(
            configs, {"data": {"lexicon": args.lexicon}}
        )
    data_config, model_config, train_config = configs
    splits = train_lib.load_splits(data_config)
    source, target = train_lib.make_processors()
    corpus = train_lib.as_corpus(splits["train"])
    steps_per_epoch = math.ceil(len(corpus.pairs) / train_config.batch_size)
    models = {
        name: build(model_config, train_config, fused, steps_per_epoch)
        for name, fused in (("fused", True), ("generic", False))
    }
    fixed = bool(models["fused"].jit_compile)
    batches = dataset_lib.make_dataset(
        corpus, source, target, train_config.batch_size, shuffle=True,
        bucket_boundaries=train_config.bucket_boundaries,
        seed=train_config.seed, fixed_shapes=fixed,
    ).take(args.steps).cache()
    for name, model in models.items():  # compile (and cache the batches)
        model.fit(batches, epochs=1, steps_per_epoch=args.steps, verbose=0)

    def timer(model):
        def run():
            start = time.perf_counter()
            model.fit(batches, epochs=1, steps_per_epoch=args.steps,
                      verbose=0)
            return time.perf_counter() - start
        return run

    times = {name: [] for name in models}
    for r in range(args.rounds):
        order = list(models.items())
        if r % 2:
            order.reverse()
        for name, model in order:
            times[name].append(timer(model)() / args.steps)
    result = {
        "machine": common.machine_info(),
        "policy": str(models["fused"].dtype_policy.name),
        "jit_compile": fixed,
        "batch_size": train_config.batch_size,
        "steps_per_epoch": steps_per_epoch,
        "seconds_per_batch": {n: round(common.median(t), 4)
                              for n, t in times.items()},
        "epoch_seconds": {n: round(common.median(t) * steps_per_epoch)
                          for n, t in times.items()},
        "generic_over_fused": round(
            common.paired_ratio(times["generic"], times["fused"]), 2
        ),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
