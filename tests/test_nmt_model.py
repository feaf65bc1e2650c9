"""Models, loss and input pipeline of the NMT example."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

import keras  # noqa: E402

from examples.nmt import config as config_lib  # noqa: E402
from examples.nmt import dates  # noqa: E402
from keras_attention.seq2seq import losses  # noqa: E402
from keras_attention.training import runs as model_lib  # noqa: E402
from keras_attention.seq2seq import layers as model_layers  # noqa: E402
from examples.nmt import text as text_lib  # noqa: E402
from keras_attention.training import dataset as dataset_lib  # noqa: E402
from examples.nmt import run as run_lib  # noqa: E402

pytestmark = pytest.mark.tf_only


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


# ----------------------------------------------------------------------
# Loss and metric against numpy.


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_masked_loss_matches_numpy(smoothing):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 5)).astype("float32")
    labels = np.array([[1, 2, 0, 0], [3, 4, 4, 0], [2, 0, 0, 0]])
    got = float(losses.MaskedLoss(smoothing)(labels, logits))
    log_p = _log_softmax(logits.astype("float64"))
    target = np.eye(5)[labels] * (1 - smoothing) + smoothing / 5
    per_token = -(target * log_p).sum(-1)
    mask = labels != 0
    expected = per_token[mask].mean()
    assert got == pytest.approx(expected, rel=1e-5)


def test_masked_loss_ignores_padding_logits():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 4)).astype("float32")
    labels = np.array([[1, 2, 0], [3, 0, 0]])
    changed = logits.copy()
    changed[labels == 0] = 100.0 * rng.normal(size=changed[labels == 0].shape)
    loss = losses.MaskedLoss()
    assert float(loss(labels, logits)) == pytest.approx(float(loss(labels, changed)))


def test_masked_accuracy_counts_only_real_tokens():
    metric = losses.MaskedAccuracy()
    labels = np.array([[1, 2, 0], [3, 0, 0]])
    logits = np.zeros((2, 3, 4), "float32")
    logits[0, 0, 1] = logits[0, 1, 3] = logits[1, 0, 3] = 1.0  # 2 of 3 right
    logits[0, 2, 0] = logits[1, 1, 0] = logits[1, 2, 0] = 1.0  # padding
    metric.update_state(labels, logits)
    assert float(metric.result()) == pytest.approx(2 / 3)
    metric.update_state(np.array([[1]]), np.eye(4, dtype="float32")[None, None, 2])
    assert float(metric.result()) == pytest.approx(2 / 4)


# ----------------------------------------------------------------------
# Step-wise decoding equals the teacher-forced sequence computation.


CONFIGS = [
    dict(model="luong", score="general", cell="lstm", bidirectional=True),
    dict(model="luong", score="dot", cell="gru", bidirectional=False, decoder_layers=2),
    dict(model="stepwise", score="additive", cell="lstm", bidirectional=True),
    dict(model="luong", score="additive", cell="lstm", bidirectional=True, bridge=False),
    dict(model="stepwise", score="dot", cell="lstm", bidirectional=False, bridge=False),
    dict(model="stepwise", score="general", cell="gru", bidirectional=False, decoder_layers=2),
    # The dates demo's month fix (issue 16): embeddings as values or keys,
    # the source [END] not attended.
    dict(model="luong", score="general", attention_values="embedding", attend_source_end=False),
    dict(model="luong", score="additive", attention_keys="embedding", bridge=False),
    dict(model="luong", score="general", attention_keys="embedding", attention_values="embedding"),
    dict(model="stepwise", score="general", attend_source_end=False),
    # The demo now (issue 16): the bridge dropped in training only.
    dict(model="luong", score="general", attention_values="embedding",
         attend_source_end=False, bridge_dropout=0.5),
    # Source ids never attended (the demo's punctuation, issue 16).
    dict(model="luong", score="general", unattended_source_ids=(5, 9)),
    dict(model="stepwise", score="additive", unattended_source_ids=(5,)),
]


@pytest.mark.parametrize("overrides", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_step_decoding_matches_teacher_forcing(overrides):
    keras.utils.set_random_seed(0)
    config = config_lib.ModelConfig(
        source_vocab_size=13, target_vocab_size=11, embedding_dim=6, units=5,
        dropout=0.0, **overrides,
    )
    seq2seq = model_lib.build_model(config)
    source = np.array([[4, 5, 6, 7, 3], [8, 9, 3, 0, 0]], "int32")
    target_in = np.array([[2, 4, 5, 6], [2, 7, 0, 0]], "int32")
    inputs = {"source_ids": source, "target_in": target_in}
    logits = np.asarray(seq2seq(inputs, training=False)["logits"])
    weights = np.asarray(seq2seq(inputs, training=False)["attention"])
    expected = _log_softmax(logits.astype("float64"))

    state = seq2seq.encode(tf.constant(source))
    for t in range(target_in.shape[1]):
        log_probs, state, attention = seq2seq.step(tf.constant(target_in[:, t]), state)
        log_probs, attention = np.asarray(log_probs), np.asarray(attention)
        for b in range(2):
            if target_in[b, t] == 0:
                continue
            np.testing.assert_allclose(log_probs[b], expected[b, t], atol=1e-5)
            np.testing.assert_allclose(attention[b], weights[b, t], atol=1e-5)
    # Padded source positions get no attention, nor unattended ids.
    assert np.all(weights[1, :, 3:] == 0)
    for token in config.unattended_source_ids:
        assert np.all(weights[np.broadcast_to(source[:, None] == token, weights.shape)] == 0)
    np.testing.assert_allclose(weights[0].sum(-1), 1.0, atol=1e-5)


def test_model_config_validation():
    with pytest.raises(ValueError, match="score"):
        config_lib.ModelConfig(5, 5, score="cosine")
    with pytest.raises(ValueError, match="units"):
        config_lib.ModelConfig(5, 5, units=0)
    with pytest.raises(ValueError, match="dropout"):
        config_lib.ModelConfig(5, 5, dropout=1.0)
    with pytest.raises(ValueError, match="bridge_dropout"):
        config_lib.ModelConfig(5, 5, bridge_dropout=1.0)
    config = config_lib.ModelConfig(5, 6, model="stepwise", units=3)
    assert config_lib.ModelConfig.from_json(config.to_json()) == config
    assert config.decoder_units == 6


def test_punctuation_ids_and_their_round_trip():
    vocab = list(text_lib.RESERVED_TOKENS) + [
        "vendredi", ",", "##,", ".", "20", "##.", "a.", "«", "...", "-", "##a",
    ]
    assert text_lib.punctuation_ids(vocab) == [5, 6, 7, 9, 11, 12, 13]
    config = config_lib.ModelConfig(
        len(vocab), 6, attend_source_punctuation=False,
        unattended_source_ids=(5, 7),
    )
    assert config_lib.ModelConfig.from_json(config.to_json()) == config


def test_train_masks_the_source_punctuation(tmp_path):
    """`--no-attend-source-punctuation`: `train` finds the punctuation of
    the learned source vocabulary, run.json keeps it, and no attention
    lands on it, also after the run is loaded again."""
    from examples.nmt import train as train_lib

    configs = (
        config_lib.DataConfig(num_dates=200, validation_fraction=0.1,
                              test_fraction=0.0),
        config_lib.TextConfig(source_vocab_size=200, target_vocab_size=200),
        config_lib.ModelConfig(embedding_dim=8, units=8,
                               attend_source_punctuation=False),
        config_lib.TrainConfig(epochs=1, batch_size=32, verbose=0,
                               mixed_precision="off"),
    )
    run_dir = str(tmp_path / "run")
    seq2seq, _ = train_lib.train(run_dir, *configs, log=lambda *_: None)
    vocab = text_lib.load_vocabulary(run_lib.run_path(run_dir, run_lib.SOURCE_VOCAB))
    comma = vocab.index(",")
    assert comma in seq2seq.unattended_source_ids
    assert list(seq2seq.unattended_source_ids) == text_lib.punctuation_ids(vocab)
    loaded, source, _, _ = run_lib.load_trained(run_dir)
    assert loaded.unattended_source_ids == seq2seq.unattended_source_ids
    ids = source.tokenize(tf.constant(["Freitag, 20. Oktober 1933"])).to_tensor()
    ids = np.asarray(ids, "int32")
    assert comma in ids
    weights = np.asarray(loaded(
        {"source_ids": ids, "target_in": np.array([[2, 4, 5, 6]], "int32")}
    )["attention"])
    hit = np.isin(ids[0], seq2seq.unattended_source_ids)
    assert hit.any() and np.all(weights[0][:, hit] == 0)
    np.testing.assert_allclose(weights[0].sum(-1), 1.0, atol=1e-5)


def test_bridge_dropout_zeroes_whole_sentences_in_training_only():
    layer = model_layers.BridgeDropout(0.5, seed=3)
    rng = np.random.default_rng(0)
    states = [rng.normal(size=(400, 4)).astype("float32") + 5.0,
              rng.normal(size=(400, 4)).astype("float32") + 5.0]
    for got, state in zip(layer(states, training=False), states):
        np.testing.assert_array_equal(np.asarray(got), state)
    got = [np.asarray(x) for x in layer(states, training=True)]
    dropped = np.all(got[0] == 0, axis=-1)
    # A sentence keeps all its states unchanged or loses all of them.
    for x, state in zip(got, states):
        np.testing.assert_array_equal(x[~dropped], state[~dropped])
        assert np.all(x[dropped] == 0)
    assert 0.4 < dropped.mean() < 0.6
    config = model_layers.BridgeDropout.from_config(layer.get_config())
    assert (config.rate, config.seed) == (0.5, 3)


def test_vocabulary_sizes_are_unset_until_learned():
    # The user's settings have no vocabulary sizes: a model cannot be built
    # from them until `train` sets the sizes of the learned vocabularies.
    config = config_lib.ModelConfig(units=3)
    assert config.source_vocab_size is None
    assert config.target_vocab_size is None
    with pytest.raises(ValueError, match="source_vocab_size=None"):
        model_lib.build_model(config)
    with pytest.raises(ValueError, match="target_vocab_size"):
        config_lib.ModelConfig(target_vocab_size=0)


# ----------------------------------------------------------------------
# Input pipeline.


@pytest.fixture(scope="module")
def dates_processors(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    corpus = dates.generate_dates(120, seed=2)
    for side, index, lower in (("source", 0, True), ("target", 1, False)):
        vocab = text_lib.learn_vocabulary([p[index] for p in corpus.pairs], 300, lower)
        text_lib.save_vocabulary(vocab, str(root / f"{side}_vocab.txt"))
    source, target = run_lib.make_processors(str(root), config_lib.TextConfig())
    return corpus, source, target


@pytest.mark.parametrize("buckets", [None, (6, 9)])
def test_dataset_shifts_targets_and_keeps_every_pair(dates_processors, buckets):
    corpus, source, target = dates_processors
    ds = dataset_lib.make_dataset(corpus, source, target, 16, bucket_boundaries=buckets)
    seen = 0
    for inputs, target_out in ds:
        src, tin = inputs["source_ids"].numpy(), inputs["target_in"].numpy()
        out = target_out.numpy()
        assert src.dtype == np.int32 and tin.shape == out.shape
        assert np.all(tin[:, 0] == text_lib.START_ID)
        # target_out is target_in shifted by one token.
        np.testing.assert_array_equal(tin[:, 1:], out[:, :-1] * (tin[:, 1:] != 0))
        assert np.all((out == text_lib.END_ID).sum(1) == 1)
        if buckets:
            lengths = np.maximum((src != 0).sum(1), (tin != 0).sum(1) + 1)
            bucket = np.searchsorted(buckets, lengths, side="right")
            assert len(set(bucket)) == 1
        seen += len(src)
    assert seen == len(corpus)


def test_padded_widths():
    assert dataset_lib.padded_widths((8, 12, 16, 24, 32), 64) == [7, 11, 15, 23, 31, 64]
    # Boundaries at or above the longest sentence add nothing; none: one width.
    assert dataset_lib.padded_widths((6, 40, 80), 32) == [5, 32]
    assert dataset_lib.padded_widths(None, 32) == [32]
    assert dataset_lib.padded_widths((), 10) == [10]


@pytest.mark.parametrize("buckets", [None, (6, 9), (12, 14, 16)])
def test_fixed_shapes_pad_each_batch_to_its_bucket(dates_processors, buckets):
    """Under XLA the batches must come in few shapes: each is padded to its
    bucket's width (the batch itself unchanged but for the zero padding)."""
    corpus, source, target = dates_processors
    widths = dataset_lib.padded_widths(buckets, max(source.max_tokens, target.max_tokens))
    plain = dataset_lib.make_dataset(corpus, source, target, 16, bucket_boundaries=buckets)
    fixed = dataset_lib.make_dataset(
        corpus, source, target, 16, bucket_boundaries=buckets, fixed_shapes=True
    )
    shapes = set()
    for (a_in, a_out), (b_in, b_out) in zip(plain, fixed):
        width = b_in["source_ids"].shape[1]
        longest = max(a_in["source_ids"].shape[1], a_in["target_in"].shape[1] + 1)
        assert width == min(w for w in widths if w >= longest)
        assert b_in["target_in"].shape[1] == b_out.shape[1] == width - 1
        shapes.add(width)
        for key in ("source_ids", "target_in"):
            a, b = a_in[key].numpy(), b_in[key].numpy()
            np.testing.assert_array_equal(b[:, : a.shape[1]], a)
        assert not b_in["source_ids"].numpy()[:, a_in["source_ids"].shape[1]:].any()
        # target_in drops the last column of the padded target: beyond the
        # plain batch's width it holds the longest rows' [END] (whose
        # target_out is padding, so masked) and zeros.
        extra = b_in["target_in"].numpy()[:, a_in["target_in"].shape[1]:]
        assert set(np.unique(extra)) <= {0, text_lib.END_ID}
        np.testing.assert_array_equal(b_out.numpy()[:, : a_out.shape[1]], a_out.numpy())
        assert not b_out.numpy()[:, a_out.shape[1]:].any()
    assert len(shapes) <= len(widths)
    if buckets == (12, 14, 16):  # dates of 9 to 17 tokens: every bucket
        assert shapes == {11, 13, 15, 64}, shapes
