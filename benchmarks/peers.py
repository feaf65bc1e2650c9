"""Training and decoding speed against TFA 0.23 and the TF tutorial model.

    python -m benchmarks.peers [--quick] [--out DIR] [--tfa-python PATH]

(`make bench-peers` creates the TFA venv `.venv-tfa` first.) At the sizes of
TFA's NMT tutorial (vocabulary 5000, embedding 256, LSTM 256, batch 64,
source and target length 12, Adam, masked cross-entropy, one `tf.function`
train step) it measures target tokens per second of:

- TFA 0.23 `AttentionWrapper(LSTMCell)` + `BasicDecoder(TrainingSampler)`,
  Luong scaled and Bahdanau normed (`benchmarks/peers_tfa.py`, in its own
  process and venv with TensorFlow 2.15);
- ours, step-wise: `AttentionRNN(AttentionWrapper(LSTMCell, score))` with
  input feeding and TFA's attention layer (no activation);
- ours, sequence mode: LSTM decoder + attention + `AttentionalOutput`;
- the TensorFlow tutorial's architecture (bidirectional GRU encoder, GRU
  decoder, one-head `MultiHeadAttention` + residual + `LayerNormalization`);

and decoding sentences per second (batch 1 and 64, greedy and beam 5, to a
fixed length: the end token's output bias is -1e4 on both sides, so no
sentence stops early) of our step-wise model exported as a SavedModel
against TFA's `GreedyEmbeddingSampler` and `BeamSearchDecoder`; and, ours
only, what n-best lists (every beam with scores and attention), the
coverage penalty and a 2-model ensemble cost relative to plain beam 5
(`BEAM_OPTIONS`, in the same interleaved rounds).

Rounds interleave across the two processes: one call at a time, in
alternating order, medians over rounds, ratios as medians of per-round
ratios (`benchmarks.common`). The matmul peak of the same machine, in the
same run, puts the sequence-mode step's FLOP/s in proportion.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_attention as ka  # noqa: E402
from benchmarks import common  # noqa: E402

END_TOKEN = 2
START_TOKEN = 1
# GNMT beta of the `coverage` decoder.
COVERAGE_PENALTY = 0.2
# Our decoders that are timed against plain beam search (ours only).
BEAM_OPTIONS = {
    "nbest": "n-best (all {w} beams, scores, attention)",
    "coverage": f"beam {{w}} + coverage penalty {COVERAGE_PENALTY}",
    "ensemble": "beam {w}, ensemble of 2 models",
}
WORKER = pathlib.Path(__file__).with_name("peers_tfa.py")

SIZES = {
    False: {
        "vocab": 5000,
        "embedding_dim": 256,
        "units": 256,
        "batch": 64,
        "source_length": 12,
        "target_length": 12,
        "decode_length": 24,
        "beam_width": 5,
        "decode_batches": [1, 64],
        "tfa_attentions": ["luong", "bahdanau"],
        "warmup": 2,
        "repeats": 9,
    },
    True: {
        "vocab": 500,
        "embedding_dim": 32,
        "units": 32,
        "batch": 16,
        "source_length": 8,
        "target_length": 8,
        "decode_length": 10,
        "beam_width": 3,
        "decode_batches": [1, 16],
        "tfa_attentions": ["luong", "bahdanau"],
        "warmup": 1,
        "repeats": 3,
    },
}


def _attention(score, units):
    if score == "luong":
        return ka.MultiplicativeAttention(use_scale=True)
    return ka.AdditiveAttention(units, normalize=True)


def _output_bias(vocab):
    bias = np.zeros([vocab], "float32")
    bias[END_TOKEN] = -1e4
    return keras.initializers.Constant(bias)


def encoder(sizes, source):
    x = keras.layers.Embedding(sizes["vocab"], sizes["embedding_dim"])(source)
    return keras.layers.LSTM(
        sizes["units"], return_sequences=True, return_state=True
    )(x)


def stepwise_parts(sizes, score):
    """The step-wise decoder's layers: embedding, wrapper, projection."""
    units = sizes["units"]
    wrapper = ka.AttentionWrapper(
        keras.layers.LSTMCell(units),
        _attention(score, units),
        attention_layer_size=units,
        attention_activation=None,  # TFA's attention layer is linear
    )
    embedding = keras.layers.Embedding(sizes["vocab"], sizes["embedding_dim"])
    projection = keras.layers.Dense(
        sizes["vocab"], bias_initializer=_output_bias(sizes["vocab"])
    )
    return embedding, wrapper, projection


def stepwise_model(sizes, score):
    """The training model and the layers the translator reuses."""
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    encoder_model = keras.Model(source, encoder(sizes, source))
    memory, h, c = encoder_model(source)
    embedding, wrapper, projection = stepwise_parts(sizes, score)
    outputs, _ = ka.AttentionRNN(wrapper)(
        embedding(target), memory, initial_state=[h, c]
    )
    model = keras.Model([source, target], projection(outputs))
    return model, (encoder_model, embedding, wrapper, projection)


def sequence_model(sizes, score):
    units = sizes["units"]
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    memory, h, c = encoder(sizes, source)
    y = keras.layers.Embedding(sizes["vocab"], sizes["embedding_dim"])(target)
    decoded = keras.layers.LSTM(units, return_sequences=True)(
        y, initial_state=[h, c]
    )
    context, _ = _attention(score, units)(decoded, memory)
    attentional = ka.AttentionalOutput(units)(context, decoded)
    logits = keras.layers.Dense(sizes["vocab"])(attentional)
    return keras.Model([source, target], logits)


def tutorial_model(sizes):
    """The TF "NMT with attention" tutorial's model (GRU, one-head MHA)."""
    units = sizes["units"]
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    x = keras.layers.Embedding(sizes["vocab"], units)(source)
    memory = keras.layers.Bidirectional(
        keras.layers.GRU(units, return_sequences=True), merge_mode="sum"
    )(x)
    y = keras.layers.Embedding(sizes["vocab"], units)(target)
    decoded = keras.layers.GRU(units, return_sequences=True)(y)
    attended = keras.layers.MultiHeadAttention(num_heads=1, key_dim=units)(
        query=decoded, value=memory
    )
    hidden = keras.layers.LayerNormalization()(
        keras.layers.Add()([decoded, attended])
    )
    logits = keras.layers.Dense(sizes["vocab"])(hidden)
    return keras.Model([source, target], logits)


def train_step(model):
    """One `tf.function` step: Adam on the masked cross-entropy."""
    optimizer = keras.optimizers.Adam()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=None
    )

    @tf.function
    def step(source, target_in, target_out):
        with tf.GradientTape() as tape:
            logits = model([source, target_in], training=True)
            mask = tf.cast(target_out != 0, "float32")
            loss = tf.reduce_sum(loss_fn(target_out, logits) * mask)
            loss = loss / tf.reduce_sum(mask)
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    return step


_SOURCE = tf.TensorSpec([None, None], tf.int32)


def _batch(sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    v = sizes["vocab"]
    return tuple(
        tf.constant(rng.integers(3, v, size=(batch, length)), "int32")
        for length in (
            sizes["source_length"],
            sizes["target_length"],
            sizes["target_length"],
        )
    )


class Translator(tf.Module):
    """Our step-wise model's encoder and decoder over token ids, for export.

    `ensemble` is a list of more `(model, parts)` of `stepwise_model`: the
    `ensemble` signature decodes with all the models at once
    (`keras_attention.decoding.ensemble_step`).
    """

    def __init__(self, sizes, model, parts, ensemble=()):
        super().__init__(name="translator")
        self.sizes = sizes
        self.members = [parts] + [p for _, p in ensemble]
        self.tracked = [
            v.value for m in [model] + [m for m, _ in ensemble]
            for v in m.variables
        ]

    @staticmethod
    def _member_start(parts, source):
        encoder, _, wrapper, _ = parts
        memory, h, c = encoder(source)
        return wrapper.get_initial_state(memory, cell_state=[h, c])

    @staticmethod
    def _member_step(parts):
        _, embedding, wrapper, projection = parts

        def step(tokens, state):
            output, state, weights = wrapper.step(embedding(tokens), state)
            return tf.nn.log_softmax(projection(output)), state, weights

        return step

    def _start(self, source):
        return (
            tf.fill([tf.shape(source)[0]], START_TOKEN),
            self._member_start(self.members[0], source),
        )

    def step(self, tokens, state):
        return self._member_step(self.members[0])(tokens, state)

    def _beam(self, source, **options):
        start, state = self._start(source)
        return ka.beam_search_decode(
            self.step, start, state, end_token=END_TOKEN,
            max_length=self.sizes["decode_length"],
            beam_width=self.sizes["beam_width"], length_penalty=0.6,
            **options,
        )

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def greedy(self, source):
        start, state = self._start(source)
        out = ka.greedy_decode(
            self.step, start, state, end_token=END_TOKEN,
            max_length=self.sizes["decode_length"],
        )
        return {"tokens": out["tokens"]}

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def beam(self, source):
        return {"tokens": self._beam(source)["tokens"]}

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def coverage(self, source):
        """Beam search with GNMT's coverage penalty (the attention sums
        travel in the beam state)."""
        out = self._beam(source, coverage_penalty=COVERAGE_PENALTY)
        return {"tokens": out["tokens"]}

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def nbest(self, source):
        """Every beam, `(batch, beam_width, L)` tokens, scores, attention."""
        start, state = self._start(source)
        out = ka.decoding.beam_search_nbest(
            self.step, start, state, end_token=END_TOKEN,
            max_length=self.sizes["decode_length"],
            n_best=self.sizes["beam_width"], length_penalty=0.6,
        )
        return {k: out[k] for k in ("tokens", "scores", "attention")}

    @tf.function(input_signature=[_SOURCE], autograph=False)
    def ensemble(self, source):
        """Beam search over the members' averaged probabilities."""
        step = ka.decoding.ensemble_step(
            [self._member_step(p) for p in self.members]
        )
        state = ka.decoding.ensemble_state(
            *[self._member_start(p, source) for p in self.members]
        )
        out = ka.beam_search_decode(
            step, tf.fill([tf.shape(source)[0]], START_TOKEN), state,
            end_token=END_TOKEN, max_length=self.sizes["decode_length"],
            beam_width=self.sizes["beam_width"], length_penalty=0.6,
        )
        return {"tokens": out["tokens"]}


def matmul_peak(n=2048, repeats=5):
    """FLOP/s of a float32 `n x n` matmul in a `tf.function` (best of)."""
    a = tf.random.normal([n, n])
    b = tf.random.normal([n, n])
    f = tf.function(lambda: tf.matmul(a, b))
    f().numpy()
    best = min(_seconds(f) for _ in range(repeats))
    return 2 * n**3 / best


def _seconds(fn):
    start = time.perf_counter()
    result = fn()
    flat = tf.nest.flatten(result)
    if flat:
        flat[0].numpy()
    return time.perf_counter() - start


def sequence_step_flops(sizes):
    """Matmul FLOPs of one sequence-mode (Luong) training step.

    Forward: encoder and decoder LSTMs, the key projection, scores and
    context, the attentional layer and the vocabulary projection; the
    backward pass costs twice the forward.
    """
    b, s, t = sizes["batch"], sizes["source_length"], sizes["target_length"]
    e, u, v = sizes["embedding_dim"], sizes["units"], sizes["vocab"]
    lstm = 2 * 4 * u * (e + u)
    forward = (
        b * s * lstm
        + b * t * lstm
        + 2 * b * s * u * u
        + 2 * 2 * b * t * s * u
        + 2 * b * t * 2 * u * u
        + 2 * b * t * u * v
    )
    return 3 * forward


class TFAWorker:
    """The TFA process: one command at a time over pipes."""

    def __init__(self, python, sizes):
        self.process = subprocess.Popen(
            [python, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.info = self.ask({"cmd": "setup", "sizes": sizes})

    def ask(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the TFA worker exited")
        return json.loads(line)

    def timer(self, name):
        return lambda: self.ask({"cmd": "time", "name": name})["seconds"]

    def close(self):
        try:
            self.ask({"cmd": "quit"})
        except (RuntimeError, BrokenPipeError):
            pass
        self.process.wait(timeout=60)


def interleave(timers, repeats):
    """Rounds over `timers` (name -> callable returning seconds)."""
    times = {name: [] for name in timers}
    for r in range(repeats):
        order = list(timers.items())
        if r % 2:
            order.reverse()
        for name, timer in order:
            times[name].append(timer())
    return times


def local_timer(fn, warmup):
    for _ in range(warmup):
        _seconds(fn)
    return lambda: _seconds(fn)


def build_local(sizes, savedir):
    timers = {}
    source, target_in, target_out = _batch(sizes, sizes["batch"])
    warmup = sizes["warmup"]
    stepwise = {}
    for score in ("luong", "bahdanau"):
        model, parts = stepwise_model(sizes, score)
        stepwise[score] = (model, parts)
        for kind, m in (("stepwise", model), ("sequence", None)):
            m = m or sequence_model(sizes, score)
            step = train_step(m)
            timers[f"ours-{kind}-{score}-train"] = local_timer(
                lambda s=step: s(source, target_in, target_out), warmup
            )
    step = train_step(tutorial_model(sizes))
    timers["tutorial-train"] = local_timer(
        lambda: step(source, target_in, target_out), warmup
    )
    model, parts = stepwise["luong"]
    # The ensemble's second member: same sizes, its own weights.
    translator = Translator(
        sizes, model, parts, ensemble=[stepwise_model(sizes, "luong")]
    )
    names = ("greedy", "beam") + tuple(BEAM_OPTIONS)
    tf.saved_model.save(
        translator,
        savedir,
        signatures={
            name: getattr(translator, name).get_concrete_function()
            for name in names
        },
    )
    loaded = tf.saved_model.load(savedir)
    for batch in sizes["decode_batches"]:
        src = _batch(sizes, batch, seed=1)[0]
        for name in names:
            fn = loaded.signatures[name]
            timers[f"ours-{name}-b{batch}"] = local_timer(
                lambda f=fn, x=src: f(x), warmup
            )
    return timers, loaded


def summarise(sizes, times, peak, tfa_info):
    tokens = sizes["batch"] * sizes["target_length"]
    med = {n: common.median(t) for n, t in times.items()}
    rows = []
    for score, tfa_name in (("luong", "Luong scaled"), ("bahdanau",
                                                     "Bahdanau normed")):
        tfa = f"tfa-{score}-train"
        if tfa not in times:
            continue
        rows.append((f"TFA {tfa_info['tfa']} AttentionWrapper + BasicDecoder, "
                     f"{tfa_name} (TF {tfa_info['tensorflow']})", tfa, tfa))
        for kind in ("stepwise", "sequence"):
            rows.append((f"ours, {kind}, {tfa_name}",
                         f"ours-{kind}-{score}-train", tfa))
    rows.append(("TF tutorial (biGRU + one-head MHA)", "tutorial-train",
                 "tfa-luong-train"))
    training = []
    for label, name, ref in rows:
        training.append({
            "model": label,
            "tokens_per_s": round(tokens / med[name]),
            "vs_tfa": round(common.paired_ratio(times[ref], times[name]), 2),
        })
    flops = sequence_step_flops(sizes)
    seq = med["ours-sequence-luong-train"]
    decoding = []
    for batch in sizes["decode_batches"]:
        for name in ("greedy", "beam"):
            ours, tfa = f"ours-{name}-b{batch}", f"tfa-{name}-b{batch}"
            decoding.append({
                "decoder": name if name == "greedy" else (
                    f"beam {sizes['beam_width']}"),
                "batch": batch,
                "ours_sentences_per_s": round(batch / med[ours], 1),
                "tfa_sentences_per_s": round(batch / med[tfa], 1),
                "ratio": round(common.paired_ratio(times[tfa], times[ours]),
                               2),
            })
    options = []
    for batch in sizes["decode_batches"]:
        beam = f"ours-beam-b{batch}"
        for name, label in BEAM_OPTIONS.items():
            ours = f"ours-{name}-b{batch}"
            options.append({
                "decoder": label.format(w=sizes["beam_width"]),
                "batch": batch,
                "sentences_per_s": round(batch / med[ours], 1),
                "time_vs_beam": round(
                    common.paired_ratio(times[ours], times[beam]), 2
                ),
            })
    return {
        "sizes": sizes,
        "machine": common.machine_info(),
        "tfa": tfa_info,
        "training": training,
        "decoding": decoding,
        "decoding_options": options,
        "matmul_peak_gflops": round(peak / 1e9, 1),
        "sequence_step_gflop": round(flops / 1e9, 2),
        "sequence_gflops": round(flops / seq / 1e9, 1),
        "sequence_share_of_peak": round(flops / seq / peak, 2),
        "medians_s": {n: round(v, 5) for n, v in med.items()},
    }


def markdown(result):
    lines = ["| model | target tokens/s | vs TFA (same score) |",
             "|---|---|---|"]
    for row in result["training"]:
        lines.append(
            f"| {row['model']} | {row['tokens_per_s']:,} | "
            f"{row['vs_tfa']:.2f} |"
        )
    lines += ["", "| decoder | batch | ours (SavedModel) sentences/s | "
              "TFA sentences/s | ours / TFA |", "|---|---|---|---|---|"]
    for row in result["decoding"]:
        lines.append(
            f"| {row['decoder']} | {row['batch']} | "
            f"{row['ours_sentences_per_s']} | {row['tfa_sentences_per_s']} "
            f"| {row['ratio']:.2f} |"
        )
    lines += ["", "| our decoder (SavedModel) | batch | sentences/s | "
              f"time / beam {result['sizes']['beam_width']} |",
              "|---|---|---|---|"]
    for row in result["decoding_options"]:
        lines.append(
            f"| {row['decoder']} | {row['batch']} | "
            f"{row['sentences_per_s']} | {row['time_vs_beam']:.2f} |"
        )
    lines += [
        "",
        f"Matmul peak (float32 2048^3, same run): "
        f"{result['matmul_peak_gflops']} GFLOP/s. Sequence-mode Luong step: "
        f"{result['sequence_step_gflop']} GFLOP, "
        f"{result['sequence_gflops']} GFLOP/s = "
        f"{result['sequence_share_of_peak']:.0%} of the peak.",
    ]
    return "\n".join(lines) + "\n"


def default_tfa_python():
    root = pathlib.Path(__file__).resolve().parent.parent
    return str(root / ".venv-tfa" / "bin" / "python")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="runs/bench-peers")
    parser.add_argument("--tfa-python", default=default_tfa_python())
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    sizes = dict(SIZES[args.quick])
    if args.repeats:
        sizes["repeats"] = args.repeats
    if not os.path.exists(args.tfa_python):
        parser.error(
            f"no TFA interpreter at {args.tfa_python}: run `make bench-peers`"
            " (it creates .venv-tfa) or pass --tfa-python"
        )
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"TFA worker: {args.tfa_python}", flush=True)
    worker = TFAWorker(args.tfa_python, sizes)
    try:
        timers = {n: worker.timer(n) for n in worker.info["names"]}
        with tempfile.TemporaryDirectory() as savedir:
            local, _ = build_local(sizes, savedir)
            timers.update(local)
            print(f"{len(timers)} candidates, {sizes['repeats']} rounds",
                  flush=True)
            times = interleave(timers, sizes["repeats"])
    finally:
        worker.close()
    peak = matmul_peak()
    tfa_info = {k: worker.info[k] for k in ("tensorflow", "tfa")}
    result = summarise(sizes, times, peak, tfa_info)
    (out / "peers.json").write_text(json.dumps(result, indent=2))
    text = markdown(result)
    (out / "peers.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
