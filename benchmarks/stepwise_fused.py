"""Step-wise training step, fused decoder vs the generic loop, on TF.

The step-wise model of `benchmarks.peers` (`AttentionRNN(AttentionWrapper(
cell, score))`, input feeding, TFA's linear attention layer) at TFA's
sizes, one `tf.function` train step each with `AttentionRNN(fused=False)`
(the generic loop) and the default fused loop, in float32 and
mixed_bfloat16 (float32 vocabulary projection), for each case: the Luong
score (`MultiplicativeAttention(use_scale=True)`) with an LSTM cell, and
the Bahdanau score (`AdditiveAttention(units, normalize=True)`, TFA's
normed Bahdanau) with an LSTM and a GRU cell; `location-lstm`, the
location-sensitive score (`LocationSensitiveAttention(units, filters=32,
kernel_size=31)`, Tacotron 2's) and the monotonic score
(`BahdanauMonotonicAttention(units, normalize=True, score_bias_init=-1)`,
"parallel" mode) with an LSTM cell, on request. Medians of
interleaved rounds, target tokens per second.

    python -m benchmarks.stepwise_fused [--quick] [--repeats N]
        [--cases luong-lstm bahdanau-lstm bahdanau-gru luong-gru
         location-lstm monotonic-lstm]
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks import peers_models as models  # noqa: E402
from benchmarks.peers import SIZES  # noqa: E402
from benchmarks.peers import interleave  # noqa: E402
from benchmarks.peers import local_timer  # noqa: E402

CASES = ("luong-lstm", "bahdanau-lstm", "bahdanau-gru", "luong-gru")
# Cases run only when named (`--cases`).
MORE_CASES = ("location-lstm", "monotonic-lstm")
POLICIES = ("float32", "mixed_bfloat16")


def timers(sizes, cases):
    source, target_in, target_out = models.batch_of(sizes, sizes["batch"])
    result = {}
    for case in cases:
        score, cell = case.split("-")
        for policy in POLICIES:
            for fused in (False, "auto"):
                keras.config.set_dtype_policy(policy)
                model, _ = models.stepwise_model(
                    sizes, score, logits_dtype="float32", fused=fused,
                    cell=cell,
                )
                keras.config.set_dtype_policy("float32")
                step = models.train_step(model)
                name = f"{case}-{policy}-{'fused' if fused else 'generic'}"
                result[name] = local_timer(
                    lambda s=step: s(source, target_in, target_out),
                    sizes["warmup"],
                )
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--cases", nargs="+", choices=CASES + MORE_CASES,
                        default=CASES)
    args = parser.parse_args(argv)
    sizes = SIZES[args.quick]
    times = interleave(
        timers(sizes, args.cases), args.repeats or sizes["repeats"]
    )
    tokens = sizes["batch"] * sizes["target_length"]
    med = {name: common.median(t) for name, t in times.items()}
    rows = {}
    for case in args.cases:
        for policy in POLICIES:
            fused = med[f"{case}-{policy}-fused"]
            generic = med[f"{case}-{policy}-generic"]
            rows[f"{case} {policy}"] = {
                "generic_tokens_per_s": round(tokens / generic),
                "fused_tokens_per_s": round(tokens / fused),
                "speedup": round(generic / fused, 2),
            }
    print(json.dumps({"sizes": sizes, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
