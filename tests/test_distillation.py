"""Token-level distillation: the loss on distributions, the teachers'
distributions and their trip through the pipeline, `Translator.fit` with
teachers, on every backend (the pipeline is `tf.data` on all of them).

Each check has an independent numpy reading: the cross-entropy against
`(1 - w) onehot + w teacher`, the teachers' softmaxes of one sentence at a
time (no padding), the pipeline's rows against the pair they belong to
whatever the shuffling and bucketing did.
"""

import copy

import keras
import numpy as np
import pytest

from keras_attention.seq2seq import Translator
from keras_attention.seq2seq.losses import MaskedAccuracy
from keras_attention.seq2seq.losses import MaskedLoss
from keras_attention.training import distillation
from keras_attention.training.dataset import make_dataset

WORDS = {"le": "the", "un": "a", "chat": "cat", "chien": "dog",
         "noir": "black", "blanc": "white"}


def corpus(n=48, seed=0):
    rng = np.random.default_rng(seed)
    words = list(WORDS)
    sources = [" ".join(rng.choice(words, size=rng.integers(1, 6)))
               for _ in range(n)]
    return sources, [" ".join(WORDS[w] for w in s.split()) for s in sources]


SOURCES, TARGETS = corpus()


def np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def np_soft_loss(q, logits, smoothing=0.0):
    total = q.sum(-1)
    mask = total > 0
    v = q.shape[-1]
    q = (1 - smoothing) * q + smoothing * total[..., None] / v
    per_token = -(q * np_log_softmax(logits)).sum(-1)
    return (per_token * mask).sum() / max(mask.sum(), 1)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_loss_on_distributions_matches_numpy(smoothing):
    rng = np.random.default_rng(1)
    b, t, v = 3, 5, 7
    q = rng.dirichlet(np.ones(v), size=(b, t)).astype("float32")
    q[0, 3:] = 0.0  # padding rows
    q[2, 1:] = 0.0
    logits = rng.normal(size=(b, t, v)).astype("float32")
    logits[0, 3:] = 1e4  # whatever the padded positions hold
    got = keras.ops.convert_to_numpy(
        MaskedLoss(smoothing).call(keras.ops.array(q), keras.ops.array(logits))
    )
    np.testing.assert_allclose(got, np_soft_loss(q, logits, smoothing),
                               rtol=1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_one_hot_distributions_give_the_ids_loss(smoothing):
    rng = np.random.default_rng(2)
    ids = rng.integers(1, 6, size=(4, 6))
    ids[1, 4:] = 0
    ids[3, 2:] = 0
    one_hot = np.eye(6, dtype="float32")[ids] * (ids > 0)[..., None]
    logits = keras.ops.array(rng.normal(size=(4, 6, 6)).astype("float32"))
    loss = MaskedLoss(smoothing)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loss.call(keras.ops.array(one_hot), logits)),
        keras.ops.convert_to_numpy(loss.call(keras.ops.array(ids), logits)),
        rtol=1e-5,
    )
    accuracy = [MaskedAccuracy(), MaskedAccuracy()]
    accuracy[0].update_state(keras.ops.array(one_hot), logits)
    accuracy[1].update_state(keras.ops.array(ids), logits)
    assert float(accuracy[0].result()) == float(accuracy[1].result())


def test_padded_rows_get_no_gradient():
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the gradient is read with TensorFlow's tape")
    import tensorflow as tf

    rng = np.random.default_rng(3)
    q = rng.dirichlet(np.ones(4), size=(2, 3)).astype("float32")
    q[1, 1:] = 0.0
    logits = tf.Variable(rng.normal(size=(2, 3, 4)).astype("float32") * 50)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(MaskedLoss(0.1).call(tf.constant(q), logits))
    grad = tape.gradient(loss, logits).numpy()
    assert np.all(np.isfinite(grad))
    assert not grad[1, 1:].any() and grad[0].any()


def untrained(units, tokenizers_of=None):
    """A dot-score translator of `units`; with the tokenizers of
    `tokenizers_of` (a translator) where given."""
    model = Translator.from_texts(
        SOURCES, TARGETS, source_tokenizer="whitespace",
        target_tokenizer="whitespace", units=units, embedding_dim=units,
        dropout=0.0, score="dot",
    )
    if tokenizers_of is None:
        return model
    return Translator(model.seq2seq, tokenizers_of.source_tokenizer,
                      tokenizers_of.target_tokenizer)


@pytest.fixture(scope="module")
def teachers():
    """Two tiny translators of the same tokenizers, trained apart."""
    keras.utils.set_random_seed(0)
    first = untrained(8)
    second = untrained(8, tokenizers_of=first)
    for seed, model in enumerate((first, second)):
        keras.utils.set_random_seed(seed)
        model.compile(keras.optimizers.Adam(0.03))
        model.fit(SOURCES, TARGETS, batch_size=16, epochs=3, verbose=0)
    return first, second


def student_of(teacher):
    keras.utils.set_random_seed(5)
    return untrained(4, tokenizers_of=teacher)


def one_by_one(translators, sources, targets):
    """The teachers' mean softmax, one unpadded pair at a time."""
    source, target = translators[0].framed_tokenizers
    out = []
    for s, t in zip(sources, targets):
        s_ids = np.asarray(source.tokenize([s]).to_tensor())
        t_ids = np.asarray(target.tokenize([t]).to_tensor())
        inputs = {"source_ids": s_ids, "target_in": t_ids[:, :-1]}
        probs = [
            np.exp(np_log_softmax(keras.ops.convert_to_numpy(
                m.seq2seq(inputs, training=False)["logits"]
            ).astype("float64")))
            for m in translators
        ]
        out.append(np.mean(probs, axis=0)[0])
    return out


# The pairs read one at a time (eager model calls: slow on JAX), once per
# module: the first 24, which span four of `teacher_distributions`' batches
# of 7 (one cut in the middle) and are the first batch of the student's
# dataset in `test_fit_with_teachers_trains_on_the_mixture`.
REFERENCE_PAIRS = 24


@pytest.fixture(scope="module")
def teacher_rows(teachers):
    return one_by_one(teachers, SOURCES[:REFERENCE_PAIRS],
                      TARGETS[:REFERENCE_PAIRS])


def test_teacher_distributions_follow_the_pairs(teachers, teacher_rows):
    source, target = teachers[0].framed_tokenizers
    pairs = type("Pairs", (), {"pairs": list(zip(SOURCES, TARGETS))})
    flat, splits = distillation.teacher_distributions(
        [t.seq2seq for t in teachers], pairs, source, target, batch_size=7
    )
    assert flat.dtype == np.float16 and len(splits) == len(SOURCES) + 1
    # Every pair holds one row per target token (its own length, in order).
    lengths = [target.tokenize([t]).to_tensor().shape[1] - 1 for t in TARGETS]
    np.testing.assert_array_equal(np.diff(splits), lengths)
    for i, rows in enumerate(teacher_rows):
        np.testing.assert_allclose(
            flat[splits[i]:splits[i + 1]].astype("float64"), rows, atol=2e-3
        )
    np.testing.assert_allclose(flat.astype("float64").sum(-1), 1.0, atol=1e-2)


@pytest.mark.parametrize("fixed_shapes", [False, True])
def test_pipeline_keeps_each_pairs_distributions(teachers, fixed_shapes):
    """A teacher whose distributions are a known function of the pair's own
    tokens: after shuffling, bucketing and padding, every row of every batch
    is `(1 - w) onehot(t) + w onehot((3 t + 1) mod V)`."""
    source, target = teachers[0].framed_tokenizers
    pairs = type("Pairs", (), {"pairs": list(zip(SOURCES, TARGETS))})
    v = teachers[0].target_tokenizer.vocabulary_size
    rows, lengths = [], []
    for t in TARGETS:
        ids = np.asarray(target.tokenize([t]).to_tensor())[0, 1:]
        rows.append(np.eye(v, dtype=np.float16)[(3 * ids + 1) % v])
        lengths.append(len(ids))
    splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    w = 0.3
    ds = make_dataset(
        pairs, source, target, 8, shuffle=True, seed=4,
        bucket_boundaries=(3, 5), teacher=(np.concatenate(rows), splits),
        distillation_weight=w, fixed_shapes=fixed_shapes,
    )
    seen = 0
    for inputs, targets in ds:
        q = np.asarray(targets["logits"])
        # The reference token holds 1 - w > w: each row's argmax.
        out = np.where(q.sum(-1) > 0, np.argmax(q, -1), 0)
        # target_out[:, :-1] is target_in[:, 1:]: the rows are the pair's.
        np.testing.assert_array_equal(
            out[:, :-1], np.asarray(inputs["target_in"])[:, 1:])
        expected = (
            (1 - w) * np.eye(v)[out] + w * np.eye(v)[(3 * out + 1) % v]
        ) * (out > 0)[..., None]
        np.testing.assert_allclose(q, expected, atol=1e-6)
        seen += int((out > 0).any(-1).sum())
    assert seen == len(SOURCES)


def test_fit_with_teachers_trains_on_the_mixture(teachers, teacher_rows):
    """The loss Keras reports for a distilled batch is numpy's cross-entropy
    of the student's logits against the mixture; `fit` with teachers runs
    and lowers it."""
    student = student_of(teachers[0])
    student.compile(keras.optimizers.Adam(0.03))
    w = 0.6
    # The first batch (no shuffling) is the pairs of `teacher_rows`.
    data = student.make_dataset(
        SOURCES, TARGETS, REFERENCE_PAIRS, teachers=teachers,
        distillation_weight=w,
    ).take(1)
    inputs, targets = next(iter(data))
    inputs = {k: np.asarray(x) for k, x in inputs.items()}
    logits = keras.ops.convert_to_numpy(
        student.seq2seq(inputs, training=False)["logits"])
    source, target = teachers[0].framed_tokenizers
    assert logits.shape[0] == len(teacher_rows)
    q = np.zeros(logits.shape)
    for i, rows in enumerate(teacher_rows):
        t_ids = np.asarray(target.tokenize([TARGETS[i]]).to_tensor())[0, 1:]
        q[i, : len(rows)] = (1 - w) * np.eye(logits.shape[-1])[t_ids] + w * rows
    reported = student.evaluate(data, verbose=0, return_dict=True)["loss"]
    np.testing.assert_allclose(reported, np_soft_loss(q, logits), rtol=2e-3)
    history = student.fit(SOURCES, TARGETS, batch_size=16, epochs=4,
                          teachers=teachers, distillation_weight=w,
                          validation_data=(SOURCES[:16], TARGETS[:16]),
                          verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert np.isfinite(history.history["val_loss"]).all()


def test_bad_teachers_and_weights_are_named(teachers):
    student = student_of(teachers[0])
    other = Translator.from_texts(
        ["x y"], ["z w"], source_tokenizer="whitespace",
        target_tokenizer="whitespace", units=4, embedding_dim=4,
    )
    with pytest.raises(ValueError, match="teachers\\[1\\] has another source"):
        student.fit(SOURCES, TARGETS, teachers=[teachers[0], other],
                    epochs=1, verbose=0)
    renamed = copy.copy(teachers[0])
    renamed.target_tokenizer = copy.copy(teachers[0].target_tokenizer)
    vocabulary = list(renamed.target_tokenizer.vocabulary)
    vocabulary[-1], vocabulary[-2] = vocabulary[-2], vocabulary[-1]
    renamed.target_tokenizer.vocabulary = vocabulary
    with pytest.raises(ValueError, match="first difference at id"):
        student.fit(SOURCES, TARGETS, teachers=[renamed], verbose=0)
    with pytest.raises(TypeError, match="must be a `Translator`.*teachers\\[0\\]"):
        student.fit(SOURCES, TARGETS, teachers=[teachers[0].seq2seq],
                    verbose=0)
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((SOURCES, TARGETS))
    with pytest.raises(ValueError, match="two lists of strings"):
        student.fit(dataset, teachers=teachers, verbose=0)
    with pytest.raises(ValueError, match="at least one"):
        student.fit(SOURCES, TARGETS, teachers=[], verbose=0)
    for weight in (0.0, 1.5, float("nan"), -0.1):
        with pytest.raises(ValueError, match="distillation_weight"):
            student.fit(SOURCES, TARGETS, teachers=teachers,
                        distillation_weight=weight, verbose=0)
    with pytest.raises(TypeError, match="distillation_weight"):
        student.fit(SOURCES, TARGETS, teachers=teachers,
                    distillation_weight="half", verbose=0)
    source, target = teachers[0].framed_tokenizers
    pairs = type("Pairs", (), {"pairs": list(zip(SOURCES, TARGETS))})
    flat, splits = distillation.teacher_distributions(
        [teachers[0].seq2seq], pairs, source, target)
    with pytest.raises(ValueError, match="every pair of `corpus` \\(47 pairs\\)"):
        make_dataset(type("Pairs", (), {"pairs": pairs.pairs[:-1]}),
                     source, target, 8, teacher=(flat, splits))
