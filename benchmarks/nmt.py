"""NMT throughput: training (target tokens/s) and SavedModel decoding.

Training: the sequence-mode model (`model="luong"`: decoder LSTM over the
whole target, one attention call) against the step-wise model
(`model="stepwise"`: `AttentionWrapper` with input feeding run by
`AttentionRNN`) of `examples.nmt` at equal sizes, on random token batches
without padding, `train_on_batch` interleaved. Throughput is
`batch * target_length / median step time`.

Decoding: `encode` + `keras_attention.decoding.greedy_decode` /
`beam_search_decode` on token ids, in a `tf.Module` exported with
`tf.saved_model.save`, reloaded, and called side by side. The weights are
untrained, so no sentence stops early: every sentence is decoded to
`max_length` tokens, the worst case for a given length. Sentences per second
is `batch / median call time`.
"""

import tempfile

import numpy as np
import tensorflow as tf

from benchmarks import common

SIZES = {
    True: {  # quick
        "vocab": 500,
        "embedding_dim": 32,
        "units": 64,
        "batch": 32,
        "source_length": 16,
        "target_length": 16,
        "beam_width": 4,
        "warmup": 1,
        "repeats": 2,
        "decode_models": ("luong",),
    },
    False: {
        "vocab": 4000,
        "embedding_dim": 128,
        "units": 256,
        "batch": 64,
        "source_length": 32,
        "target_length": 32,
        "beam_width": 4,
        "warmup": 2,
        "repeats": 7,
        "decode_models": ("luong", "stepwise"),
    },
}


def _interfaces():
    """The example's model and the decoders, or the reason they are absent."""
    try:
        import types

        from keras_attention.training.settings import ModelConfig
        from keras_attention.training.runs import build_model
    except ImportError as err:
        return None, None, f"examples.nmt is not available ({err})"
    try:
        from keras_attention import decoding
    except ImportError as err:
        return None, None, f"keras_attention.decoding is not available ({err})"
    nmt_model = types.SimpleNamespace(
        ModelConfig=ModelConfig, build_model=build_model
    )
    return nmt_model, decoding, None


def make_config(nmt_model, sizes, model_type, score):
    return nmt_model.ModelConfig(
        source_vocab_size=sizes["vocab"],
        target_vocab_size=sizes["vocab"],
        model=model_type,
        score=score,
        cell="lstm",
        bidirectional=True,
        embedding_dim=sizes["embedding_dim"],
        units=sizes["units"],
        dropout=0.0,
    )


class Decoder(tf.Module):
    """Token ids in, greedy and beam-search decodes out (for export)."""

    def __init__(self, seq2seq, decoding, max_length, beam_width):
        super().__init__(name="decoder")
        self.seq2seq = seq2seq
        self.decoding = decoding
        self.max_length = max_length
        self.beam_width = beam_width
        self.model_variables = [
            v.value for v in seq2seq.variables
        ]

    def _start(self, source_ids):
        state = self.seq2seq.encode(source_ids)
        start = tf.fill([tf.shape(source_ids)[0]], 1)
        return start, state

    @tf.function(
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
        autograph=False,
    )
    def greedy(self, source_ids):
        start, state = self._start(source_ids)
        out = self.decoding.greedy_decode(
            self.seq2seq.step, start, state, end_token=2,
            max_length=self.max_length,
        )
        return {"tokens": out["tokens"], "scores": out["scores"]}

    @tf.function(
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
        autograph=False,
    )
    def beam(self, source_ids):
        start, state = self._start(source_ids)
        out = self.decoding.beam_search_decode(
            self.seq2seq.step, start, state, end_token=2,
            max_length=self.max_length, beam_width=self.beam_width,
        )
        return {"tokens": out["tokens"], "scores": out["scores"]}


def _batch(sizes, seed=0):
    rng = np.random.default_rng(seed)
    b, s, t, v = (
        sizes["batch"],
        sizes["source_length"],
        sizes["target_length"],
        sizes["vocab"],
    )
    # Ids from 3 up: no padding (0) and no start/end tokens (1, 2) inside.
    source = tf.constant(rng.integers(3, v, size=(b, s)), "int32")
    target_in = tf.constant(rng.integers(3, v, size=(b, t)), "int32")
    target_out = tf.constant(rng.integers(3, v, size=(b, t)), "int32")
    return source, target_in, target_out


def run_training(nmt_model, sizes, score, log=print):
    import keras

    source, target_in, target_out = _batch(sizes)
    models = {}
    for model_type in ("luong", "stepwise"):
        model = nmt_model.build_model(
            make_config(nmt_model, sizes, model_type, score)
        )
        model.compile(
            optimizer="adam",
            loss={
                "logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                )
            },
        )
        models[model_type] = model
    inputs = {"source_ids": source, "target_in": target_in}
    calls = {
        name: (lambda m=m: m.train_on_batch(inputs, target_out))
        for name, m in models.items()
    }
    times = common.interleaved(
        {n: (lambda c=c: tf.constant(c())) for n, c in calls.items()},
        warmup=sizes["warmup"],
        repeats=sizes["repeats"],
    )
    tokens = sizes["batch"] * sizes["target_length"]
    figures = {
        f"training, {n} model ({score}): target tokens/s":
            round(tokens / common.median(t))
        for n, t in times.items()
    }
    figures[f"training, step-wise / sequence-mode time ({score})"] = round(
        common.paired_ratio(times["stepwise"], times["luong"]), 2
    )
    for k, v in figures.items():
        log(f"  {k}: {v}")
    return figures


def run_decoding(nmt_model, decoding, sizes, model_type, score, log=print):
    seq2seq = nmt_model.build_model(
        make_config(nmt_model, sizes, model_type, score)
    )
    module = Decoder(
        seq2seq, decoding, sizes["target_length"], sizes["beam_width"]
    )
    source = _batch(sizes)[0]
    with tempfile.TemporaryDirectory() as path:
        tf.saved_model.save(
            module,
            path,
            signatures={
                "greedy": module.greedy.get_concrete_function(),
                "beam": module.beam.get_concrete_function(),
            },
        )
        loaded = tf.saved_model.load(path)
        calls = {
            name: (lambda f=loaded.signatures[name]: f(source))
            for name in ("greedy", "beam")
        }
        times = common.interleaved(
            calls, warmup=sizes["warmup"], repeats=sizes["repeats"]
        )
    figures = {}
    for name, t in times.items():
        label = "greedy" if name == "greedy" else (
            f"beam search (width {sizes['beam_width']})"
        )
        key = (
            f"SavedModel {label}, {model_type} model ({score}): sentences/s"
        )
        figures[key] = round(sizes["batch"] / common.median(t), 1)
        log(f"  {key}: {figures[key]}")
    return figures


def run_nmt(config, log=print):
    nmt_model, decoding, missing = _interfaces()
    if missing:
        log(f"  skipped: {missing}")
        return {"skipped": missing}
    sizes = dict(SIZES[bool(config.get("quick"))])
    sizes.update(config.get("sizes", {}))
    score = config.get("score", "additive")
    result = {
        "model": (
            f"bidirectional LSTM encoder, {sizes['units']} units per "
            f"direction, {sizes['embedding_dim']}-d embeddings, vocabulary "
            f"{sizes['vocab']}, {score} score; batch {sizes['batch']}, "
            f"source {sizes['source_length']} and target "
            f"{sizes['target_length']} tokens, no padding"
        ),
        "sizes": sizes,
        "figures": {},
        "notes": [
            "Decoding uses untrained weights: every sentence runs to the "
            f"length limit ({sizes['target_length']} tokens).",
        ],
    }
    result["figures"].update(run_training(nmt_model, sizes, score, log=log))
    for model_type in sizes["decode_models"]:
        try:
            result["figures"].update(
                run_decoding(
                    nmt_model, decoding, sizes, model_type, score, log=log
                )
            )
        except Exception as err:  # report, do not lose the other figures
            note = f"decoding of the {model_type} model failed: {err!r}"[:500]
            log(f"  {note}")
            result["notes"].append(note)
    return result
