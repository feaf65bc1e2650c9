"""Our models of `benchmarks.peers` on JAX: a worker process.

`benchmarks.peers` starts it as `python -m benchmarks.peers_jax` (the
Keras backend is fixed per process; this module sets `KERAS_BACKEND=jax`
before Keras loads) and times its calls in the same interleaved rounds as
the TensorFlow and TFA candidates, over the protocol of
`benchmarks/peers_worker.py`. At the sizes it is given it builds, with
the builders of `benchmarks/peers_models.py`:

- `ours-{stepwise,sequence}-{score}-train-jax`: the step-wise
  (`AttentionRNN`, input feeding) and the sequence-mode (`keras_attention.
  LSTM` encoder and decoder) models, float32, for each score of
  `sizes["tfa_attentions"]`, compiled with `jit_compile=True` (one
  `jax.jit` program: forward, gradients and the optimizer's update),
  `MaskedLoss` (the masked token mean of the TensorFlow step) and
  `FusedAdam` (Keras' Adam on JAX). One call is `model.train_on_batch`,
  which reads the loss back to the host;
- `ours-{greedy,beam}_jax-b{batch}`: `greedy_decode` and
  `beam_search_decode` of `peers_models.Decoders` (the step-wise Luong
  model, the exported signatures' decoders) inside `jax.jit`, the way
  `Seq2Seq.generate` compiles them (`CompiledGenerate`: a stateless
  function of the variables' values under a `keras.StatelessScope`), at
  each batch of `sizes["decode_batches"]`; one call reads the tokens back.

Every candidate is warmed up (traced and compiled) in `setup`.
"""

import os

os.environ["KERAS_BACKEND"] = "jax"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import peers_models as models  # noqa: E402
from benchmarks.peers_worker import serve  # noqa: E402
from keras_attention.seq2seq import FusedAdam  # noqa: E402
from keras_attention.seq2seq import MaskedLoss  # noqa: E402
from keras_attention.seq2seq.compiled import CompiledGenerate  # noqa: E402

DECODERS = ("greedy", "beam")


def training_calls(sizes):
    """name -> one jitted training step of each model."""
    source, target_in, target_out = models.numpy_batch(sizes, sizes["batch"])
    calls = {}
    for score in sizes["tfa_attentions"]:
        for kind in ("stepwise", "sequence"):
            if kind == "stepwise":
                model = models.stepwise_model(sizes, score)[0]
            else:
                model = models.sequence_model(sizes, score)
            model.compile(optimizer=FusedAdam(), loss=MaskedLoss(),
                          jit_compile=True)
            calls[f"ours-{kind}-{score}-train-jax"] = (
                lambda m=model: m.train_on_batch([source, target_in],
                                                 target_out)
            )
    return calls


def decoding_calls(sizes):
    """name -> one jitted decode of each decoder at each batch size."""
    model, parts = models.stepwise_model(sizes, "luong")
    decoders = models.Decoders(sizes, parts)
    compiled = {
        "greedy": CompiledGenerate(model, decoders.greedy_tokens),
        "beam": CompiledGenerate(model, decoders.beam_tokens),
    }
    calls = {}
    for batch in sizes["decode_batches"]:
        source = models.numpy_batch(sizes, batch, seed=1)[0]
        for name in DECODERS:
            calls[f"ours-{name}_jax-b{batch}"] = (
                lambda f=compiled[name], x=source: f(x)
            )
    return calls


def sync(result):
    """Waits for a call's result, read back to the host."""
    flat = keras.tree.flatten(result)
    if flat:
        np.asarray(flat[0])


def setup(sizes):
    keras.utils.set_random_seed(0)
    keras.config.set_dtype_policy("float32")
    calls = dict(training_calls(sizes), **decoding_calls(sizes))
    for fn in calls.values():
        for _ in range(sizes["warmup"]):
            sync(fn())
    return calls


def versions():
    return {"jax": jax.__version__, "keras": keras.__version__,
            "jax_device": jax.devices()[0].device_kind}


def main():
    serve(setup, versions(), sync)


if __name__ == "__main__":
    main()
