"""Training quality of the vocabulary projection's dtype under mixed_bfloat16.

    python -m benchmarks.projection_quality [--data ../shared/data/fra-eng/fra.txt]
        [--pairs 40000] [--dev 2000] [--epochs 3] [--units 256]
        --projection-dtype float32|policy

Trains a `Translator` (wordpiece vocabularies of 8,000, a 256-unit Luong
model, batch 64) under `mixed_bfloat16` on the first `--pairs` of the
Anki fra-eng pairs shuffled with seed 0 (French to English), validates
on the next `--dev`, and prints the Keras history (losses, masked
accuracy) with the training time. Run it once per `--projection-dtype`
(`Seq2Seq(projection_dtype=...)`) to compare the float32 projection with
the bfloat16 one (`policy`, what `auto` picks under this policy).
"""

import argparse
import json
import os
import random
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/fra-eng/fra.txt")
    parser.add_argument("--pairs", type=int, default=40000)
    parser.add_argument("--dev", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--projection-dtype", required=True,
                        choices=["float32", "policy"])
    args = parser.parse_args(argv)
    for name in ("pairs", "dev", "epochs", "units"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")

    import keras

    from keras_attention.translator import Translator

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    with open(args.data, encoding="utf-8") as f:
        pairs = [line.split("\t")[:2] for line in f if "\t" in line]
    random.Random(0).shuffle(pairs)
    train = pairs[: args.pairs]
    dev = pairs[args.pairs : args.pairs + args.dev]
    sources, targets = [p[1] for p in train], [p[0] for p in train]
    translator = Translator.from_texts(
        sources, targets, units=args.units, vocabulary_size=8000,
        projection_dtype=args.projection_dtype,
    )
    projection = translator.seq2seq.output_projection
    start = time.time()
    history = translator.fit(
        sources, targets, batch_size=64, epochs=args.epochs,
        validation_data=([p[1] for p in dev], [p[0] for p in dev]),
        verbose=2,
    )
    print(json.dumps({
        "projection_compute_dtype": projection.compute_dtype,
        "seconds": round(time.time() - start),
        "history": {k: [round(x, 4) for x in v]
                    for k, v in history.history.items()},
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
