"""GPU readiness of the NMT example, checked on CPU.

- Every recurrent layer the example builds keeps the configuration with
  which Keras runs it on the cuDNN kernels of a GPU (tanh/sigmoid, no
  recurrent dropout, `unroll=False`, biases, `reset_after=True` for GRU),
  and the input pipeline pads on the right (cuDNN needs right-padded masks).
- Mixed precision (`mixed_float16`, `mixed_bfloat16`) keeps the logits, the
  attention softmax and the decoder's log-softmax in float32.
- `jit_compile=True` (XLA) trains our layers, with the same steps as
  without XLA.
"""

import importlib
import itertools

import keras
import numpy as np
import pytest
from keras import ops

pytestmark = pytest.mark.tf_only

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from keras_attention.training import acceleration  # noqa: E402
from keras_attention.training import settings as common_config  # noqa: E402
from examples.nmt import config as config_lib  # noqa: E402
from keras_attention.training import runs as model_lib  # noqa: E402
from keras_attention.training import dataset as dataset_lib  # noqa: E402
from examples.nmt import text as text_lib  # noqa: E402
from keras_attention.training import runs as train_lib  # noqa: E402
from keras_attention.ops import masked_softmax  # noqa: E402

# The module (the package attribute of the same name is a function).
tf_rnn = importlib.import_module("keras.src.backend.tensorflow.rnn")

VARIANTS = [
    dict(model=m, cell=c, bidirectional=b, encoder_layers=n, decoder_layers=n)
    for (m, c, b), n in zip(
        itertools.product(common_config.MODEL_TYPES, common_config.CELLS, (True, False)),
        itertools.cycle((1, 2)),
    )
]


def _ids(variant):
    return "-".join(f"{k}={v}" for k, v in variant.items())


def _config(**kwargs):
    base = dict(
        source_vocab_size=23, target_vocab_size=19, embedding_dim=4, units=4,
        dropout=0.3,
    )
    base.update(kwargs)
    return config_lib.ModelConfig(**base)


def _sublayers(model):
    return list(model._flatten_layers(include_self=False, recursive=True))


def _batch(batch=3, source_len=6, target_len=5, seed=0):
    """Right-padded random ids (0 = padding), every row non-empty."""
    rng = np.random.RandomState(seed)
    def ids(length, vocab):
        x = rng.randint(4, vocab, size=(batch, length))
        lengths = rng.randint(1, length + 1, size=batch)
        lengths[0] = length
        return np.where(np.arange(length)[None] < lengths[:, None], x, 0).astype("int32")
    source, target = ids(source_len, 23), ids(target_len + 1, 19)
    return {"source_ids": source, "target_in": target[:, :-1]}, target[:, 1:]


# ----------------------------------------------------------------------
# cuDNN eligibility.


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_recurrent_layers_keep_cudnn_configuration(variant):
    seq2seq = model_lib.build_model(_config(**variant))
    layers = _sublayers(seq2seq)
    rnns = [l for l in layers if isinstance(l, (keras.layers.LSTM, keras.layers.GRU))]
    # Encoder layers (both directions), and the sequence-mode decoder.
    expected = variant["encoder_layers"] * (2 if variant["bidirectional"] else 1)
    if variant["model"] == "luong":
        expected += variant["decoder_layers"]
    assert len(rnns) == expected
    layer_class = keras.layers.LSTM if variant["cell"] == "lstm" else keras.layers.GRU
    for rnn in rnns:
        assert isinstance(rnn, layer_class)
        assert rnn.cell.activation is keras.activations.tanh, rnn.name
        assert rnn.cell.recurrent_activation is keras.activations.sigmoid, rnn.name
        assert rnn.recurrent_dropout == 0, rnn.name
        assert rnn.unroll is False, rnn.name
        assert rnn.use_bias is True, rnn.name
        assert rnn.use_cudnn in ("auto", True), rnn.name
        if isinstance(rnn, keras.layers.GRU):
            assert rnn.reset_after is True, rnn.name
        # Keras' own test of the arguments (the GPU test aside).
        if isinstance(rnn, keras.layers.GRU):
            ok = tf_rnn._do_gru_arguments_support_cudnn(
                rnn.cell.activation, rnn.cell.recurrent_activation, rnn.unroll,
                rnn.use_bias, rnn.reset_after,
            )
        else:
            ok = tf_rnn._do_lstm_arguments_support_cudnn(
                rnn.cell.activation, rnn.cell.recurrent_activation, rnn.unroll,
                rnn.use_bias,
            )
        assert ok, rnn.name
    # The step-wise decoder's cells run in a scan (no cuDNN kernel for
    # attention with input feeding) but keep the same standard cells.
    cells = [
        l for l in layers
        if isinstance(l, (keras.layers.LSTMCell, keras.layers.GRUCell))
        and not any(l is r.cell for r in rnns)
    ]
    if variant["model"] == "stepwise":
        assert len(cells) == variant["decoder_layers"]
    for cell in cells:
        assert cell.activation is keras.activations.tanh
        assert cell.recurrent_activation is keras.activations.sigmoid
        assert cell.recurrent_dropout == 0


def test_cudnn_check_catches_a_regression():
    """The check above fails on a layer that Keras would not run on cuDNN."""
    bad = keras.layers.LSTM(4, recurrent_activation="hard_sigmoid")
    assert not tf_rnn._do_lstm_arguments_support_cudnn(
        bad.cell.activation, bad.cell.recurrent_activation, bad.unroll, bad.use_bias
    )
    bad = keras.layers.GRU(4, reset_after=False)
    assert not tf_rnn._do_gru_arguments_support_cudnn(
        bad.cell.activation, bad.cell.recurrent_activation, bad.unroll,
        bad.use_bias, bad.reset_after,
    )


class _Corpus:
    def __init__(self, pairs):
        self.pairs = pairs


def _write_vocab(path, words):
    path.write_text("\n".join(list(text_lib.RESERVED_TOKENS) + words) + "\n")
    return str(path)


@pytest.mark.parametrize("bucket_boundaries", [None, (3, 5)])
def test_pipeline_pads_on_the_right(tmp_path, bucket_boundaries):
    words = "un deux trois quatre cinq six sept huit one two three four five".split()
    vocab = _write_vocab(tmp_path / "vocab.txt", words)
    source = text_lib.load_tokenizer(vocab).framed(False, True, 64)
    target = text_lib.load_tokenizer(vocab).framed(True, True, 64)
    rng = np.random.RandomState(0)
    pairs = [
        (" ".join(rng.choice(words[:8], rng.randint(1, 8))),
         " ".join(rng.choice(words[8:], rng.randint(1, 6))))
        for _ in range(40)
    ]
    ds = dataset_lib.make_dataset(
        _Corpus(pairs), source, target, batch_size=8,
        bucket_boundaries=bucket_boundaries,
    )
    batches = 0
    for inputs, _ in ds:
        for ids in (inputs["source_ids"], inputs["target_in"]):
            mask = ops.convert_to_numpy(ids) != 0
            lengths = mask.sum(axis=1)
            assert (lengths > 0).all()
            right_padded = np.arange(mask.shape[1])[None] < lengths[:, None]
            np.testing.assert_array_equal(mask, right_padded)
        batches += 1
    assert batches >= 5


# ----------------------------------------------------------------------
# Mixed precision.


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("model_type", common_config.MODEL_TYPES)
def test_mixed_precision_keeps_logits_and_softmax_float32(policy, model_type):
    keras.config.set_dtype_policy(policy)
    compute = policy.split("_")[1]
    seq2seq = model_lib.build_model(_config(model=model_type, score="additive"))
    inputs, _ = _batch()
    assert seq2seq.attention.compute_dtype == compute
    logits = seq2seq(inputs)["logits"]
    assert logits.dtype == "float32"
    # `projection_dtype="auto"`: bfloat16 has float32's range.
    assert seq2seq.output_projection.compute_dtype == (
        "bfloat16" if compute == "bfloat16" else "float32"
    )
    weights = ops.convert_to_numpy(
        ops.cast(seq2seq(inputs)["attention"], "float32")
    )
    assert np.isfinite(weights).all()
    source_mask = inputs["source_ids"] != 0
    # Rows of real target tokens sum to one, padded target rows are zero.
    target_mask = inputs["target_in"] != 0
    np.testing.assert_allclose(weights.sum(-1), target_mask.astype("float32"), atol=1e-2)
    assert (weights[np.broadcast_to(~source_mask[:, None], weights.shape)] == 0).all()
    # Step-wise decoding: log-softmax over float32 logits.
    state = seq2seq.encode(inputs["source_ids"])
    log_probs, _, attention = seq2seq.step(inputs["target_in"][:, 0], state)
    assert log_probs.dtype == "float32" and attention.dtype == "float32"
    np.testing.assert_allclose(
        np.exp(ops.convert_to_numpy(log_probs)).sum(-1), 1.0, rtol=1e-5
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_attention_softmax_runs_in_float32(dtype):
    """Scores whose softmax underflows in half precision keep their tail."""
    scores = np.array([[0.0, -12.0, -20.0]], dtype="float32")
    weights = masked_softmax(ops.cast(scores, dtype), ops.ones((1, 3), "bool"))
    assert weights.dtype == "float32"
    expected = np.exp(scores) / np.exp(scores).sum()
    # exp(-20) ~ 2e-9 is below float16's smallest subnormal (6e-8).
    np.testing.assert_allclose(ops.convert_to_numpy(weights), expected, rtol=1e-2)
    assert ops.convert_to_numpy(weights)[0, 2] > 0


@pytest.mark.parametrize("value", ["float16", "bfloat16"])
def test_mixed_precision_flag_reaches_the_policy(value):
    from examples.nmt.cli import build_parser
    from examples.nmt.cli import configs_from_args

    args = build_parser().parse_args(["train", "--mixed-precision", value])
    train_config = configs_from_args(args)[3]
    assert train_config.mixed_precision == value
    assert acceleration.mixed_precision_policy(train_config.mixed_precision) == f"mixed_{value}"
    args = build_parser().parse_args(["train", "--mixed-precision"])
    assert configs_from_args(args)[3].mixed_precision == "float16"
    args = build_parser().parse_args(["train", "--mixed-precision", "off"])
    assert acceleration.mixed_precision_policy(configs_from_args(args)[3].mixed_precision) is None


def test_mixed_float16_fit_step_is_finite():
    keras.config.set_dtype_policy("mixed_float16")
    seq2seq = model_lib.build_model(_config(dropout=0.0))
    train_lib.compile_model(seq2seq, config_lib.TrainConfig(warmup_steps=1), 4)
    inputs, targets = _batch()
    history = seq2seq.fit(inputs, targets, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert isinstance(
        seq2seq.optimizer, keras.optimizers.LossScaleOptimizer
    )


# ----------------------------------------------------------------------
# XLA.


@pytest.mark.parametrize(
    "model_type, score", [("luong", "general"), ("stepwise", "additive")]
)
def test_jit_compile_trains_like_without_xla(model_type, score):
    """Both decoders train with XLA (the step-wise one: `AttentionRNN`'s
    loop has a known trip count on TensorFlow, a bounded while loop, so
    its gradient compiles), with the same steps as without XLA."""
    config = _config(
        model=model_type, score=score, dropout=0.0, bidirectional=True
    )
    inputs, targets = _batch(batch=4)
    weights, losses = [], []
    initial = None
    for jit in ("off", "on"):
        keras.utils.set_random_seed(0)
        seq2seq = model_lib.build_model(config)
        if initial is None:
            initial = seq2seq.get_weights()
        seq2seq.set_weights(initial)
        train_lib.compile_model(
            seq2seq, config_lib.TrainConfig(jit_compile=jit, warmup_steps=1), 3
        )
        assert seq2seq.jit_compile is (jit == "on")
        history = seq2seq.fit(
            inputs, targets, epochs=3, batch_size=4, verbose=0, shuffle=False
        )
        losses.append(history.history["loss"])
        weights.append(seq2seq.get_weights())
    assert losses[0][-1] < losses[0][0]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    for a, b in zip(weights[0], weights[1]):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-5)
