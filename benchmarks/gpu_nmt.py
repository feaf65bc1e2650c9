"""Training speed at tensorflow/nmt's setting: target tokens per second.

    python -m benchmarks.gpu_nmt [--steps 50] [--warmup 5] [--out FILE]
    python -m benchmarks.gpu_nmt --tiny       # tiny sizes, seconds on a CPU

tensorflow/nmt's IWSLT'15 English-Vietnamese benchmark trains 2-layer LSTMs
of 512 units with Luong attention (`scaled_luong`: a "general" score),
embeddings of 512, dropout 0.2, SGD at learning rate 1.0 with the gradient
norm clipped at 5, batch 128 (`nmt/standard_hparams/iwslt15.json`), and
reports 32.2K words/s on a TitanX (0.17 s a step), 15.3K on a K40m,
counting the words of both the source and the target.

This script trains a `keras_attention.seq2seq.Seq2Seq` of that size on
synthetic batches (random ids, no padding; by default 21 source and 22
target tokens a sentence, the 43 words a pair that 32.2K words/s at 0.17 s
a step of 128 pairs imply), vocabularies of 17,191 (English) and 7,709
(Vietnamese) ids, compiled with `jit_compile=True` (on JAX, one `jax.jit`
program a step: forward, gradients and the update) and `MaskedLoss`, one
`train_on_batch` a step (which reads the loss back to the host). It
prints one line: the device, the median step time over `--steps` steps
after `--warmup` steps (the first compiles), target tokens per second
(`target_tokens_per_s`) and source-and-target words per second
(`words_per_s`, tensorflow/nmt's count).

`--model luong` (the default) is the sequence-mode decoder (the decoder
LSTMs run over the whole target, attention after them); `--model stepwise`
feeds the attentional vector back into the decoder's input at each step,
as tensorflow/nmt's `AttentionWrapper` does. The encoder is 2 layers of
512 (the FLOPs of tensorflow/nmt's one bidirectional layer of 512 a
direction); `--bidirectional` makes it bidirectional layers of 256 a
direction, `--layers / 2` of them.

The Keras backend is JAX unless `KERAS_BACKEND` says otherwise; on JAX the
script imports no TensorFlow (nor does `keras_attention.seq2seq`), so it
runs where JAX with CUDA is the only framework.
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.seq2seq import MaskedLoss  # noqa: E402
from keras_attention.seq2seq import Seq2Seq  # noqa: E402

# tensorflow/nmt's reference (IWSLT'15 En-Vi, batch 128, words of both
# sides per second).
REFERENCE = {"TitanX": 32_200, "K40m": 15_300}
# The vocabulary's reserved ids (`keras_attention.seq2seq.tokens`).
START, END, FIRST_WORD = 2, 3, 4

DEFAULTS = dict(
    batch=128, units=512, layers=2, embedding_dim=512, source_length=21,
    target_length=22, source_vocab=17191, target_vocab=7709, steps=50,
    warmup=5,
)
TINY = dict(
    batch=4, units=16, layers=2, embedding_dim=8, source_length=5,
    target_length=6, source_vocab=40, target_vocab=30, steps=3, warmup=1,
)


def device_name():
    """The device the backend computes on, e.g. `gpu:0 (NVIDIA H200)`."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        name = f"{device.platform}:{device.id}"
        if device.device_kind != device.platform:
            name += f" ({device.device_kind})"
        return name
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return f"cuda:0 ({torch.cuda.get_device_name(0)})"
        return "cpu"
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return gpus[0].name if gpus else "cpu"


def make_batch(args, seed=0):
    """Random ids, no padding: the source ends with `[END]`, the decoder
    input starts with `[START]`, the target output ends with `[END]`."""
    rng = np.random.default_rng(seed)
    source = rng.integers(FIRST_WORD, args.source_vocab,
                          size=(args.batch, args.source_length))
    source[:, -1] = END
    words = rng.integers(FIRST_WORD, args.target_vocab,
                         size=(args.batch, args.target_length - 1))
    column = np.ones((args.batch, 1), "int64")
    target_in = np.concatenate([START * column, words], axis=1)
    target_out = np.concatenate([words, END * column], axis=1)
    inputs = {"source_ids": source.astype("int32"),
              "target_in": target_in.astype("int32")}
    return inputs, {"logits": target_out.astype("int32")}


def make_model(args):
    bidirectional = args.bidirectional
    model = Seq2Seq(
        source_vocab_size=args.source_vocab,
        target_vocab_size=args.target_vocab,
        model=args.model,
        score="general",
        cell="lstm",
        bidirectional=bidirectional,
        embedding_dim=args.embedding_dim,
        units=args.units // 2 if bidirectional else args.units,
        encoder_layers=max(1, args.layers // 2) if bidirectional
        else args.layers,
        decoder_layers=args.layers,
        dropout=args.dropout,
        dtype=args.dtype_policy,
    )
    if args.optimizer == "sgd":
        optimizer = keras.optimizers.SGD(1.0, global_clipnorm=5.0)
    else:
        optimizer = keras.optimizers.Adam(global_clipnorm=5.0)
    model.compile(optimizer=optimizer, loss={"logits": MaskedLoss()},
                  jit_compile=True)
    return model


def measure(args):
    """The step times: the first (it compiles), and the timed ones."""
    keras.utils.set_random_seed(args.seed)
    model = make_model(args)
    inputs, targets = make_batch(args, args.seed)

    def step():
        start = time.perf_counter()
        loss = model.train_on_batch(inputs, targets)  # read back: a float
        return time.perf_counter() - start, loss

    first, _ = step()
    for _ in range(max(0, args.warmup - 1)):
        step()
    times, losses = zip(*(step() for _ in range(args.steps)))
    return first, list(times), losses[-1], model.count_params()


def report(args, first, times, loss, params):
    seconds = statistics.median(times)
    target = args.batch * args.target_length
    words = args.batch * (args.source_length + args.target_length)
    return {
        "device": device_name(),
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "model": args.model,
        "bidirectional": args.bidirectional,
        "layers": args.layers,
        "units": args.units,
        "embedding_dim": args.embedding_dim,
        "batch": args.batch,
        "source_length": args.source_length,
        "target_length": args.target_length,
        "vocab": [args.source_vocab, args.target_vocab],
        "dtype_policy": args.dtype_policy,
        "optimizer": args.optimizer,
        "params": params,
        "steps": args.steps,
        "step_ms": round(1000 * seconds, 3),
        "step_ms_min_max": [round(1000 * min(times), 3),
                            round(1000 * max(times), 3)],
        "first_step_s": round(first, 2),
        "target_tokens_per_s": round(target / seconds, 1),
        "words_per_s": round(words / seconds, 1),
        "vs_titanx_words": round(words / seconds / REFERENCE["TitanX"], 3),
        "final_loss": float(loss),
    }


# The fields of the printed line, in order; `device` is last and takes
# the rest of the line (it may hold spaces).
LINE_FIELDS = ("target_tokens_per_s", "words_per_s", "vs_titanx_words",
               "step_ms", "first_step_s", "backend", "model", "layers",
               "units", "batch", "dtype_policy", "device")


def line(result):
    """The one line the script prints: `gpu_nmt key=value ...`."""
    return "gpu_nmt " + " ".join(
        f"{name}={result[name]}" for name in LINE_FIELDS
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true",
                        help="tiny sizes and 3 steps (a CPU check)")
    for name, value in DEFAULTS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int,
                            default=None, help=f"default {value}")
    parser.add_argument("--model", choices=("luong", "stepwise"),
                        default="luong")
    parser.add_argument("--bidirectional", action="store_true")
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--optimizer", choices=("sgd", "adam"),
                        default="sgd")
    parser.add_argument("--dtype-policy", default="float32",
                        help="e.g. mixed_bfloat16 or mixed_float16")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the result as JSON here")
    args = parser.parse_args(argv)
    sizes = TINY if args.tiny else DEFAULTS
    for name, value in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if min(getattr(args, name) for name in DEFAULTS if name != "warmup") < 1:
        parser.error("sizes and --steps must be >= 1")
    if args.source_length < 2 or args.target_length < 2:
        parser.error("--source-length and --target-length must be >= 2")
    return args


def main(argv=None):
    args = parse_args(argv)
    result = report(args, *measure(args))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    print(line(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
