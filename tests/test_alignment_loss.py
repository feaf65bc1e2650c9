"""GuidedAlignmentLoss and links_to_matrix, on every Keras backend."""

import ast
import importlib.util
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest
from keras import ops

import keras_attention
from keras_attention import alignment as al

# ----------------------------------------------------------------------
# links_to_matrix.


def test_links_to_matrix_hand_worked():
    links = {(0, 0), (1, 0), (2, 1)}
    np.testing.assert_array_equal(
        al.links_to_matrix(links, 3, 3),
        [[1, 1, 0], [0, 0, 1], [0, 0, 0]],
    )
    # Marian: target 0 has two links, 1/2 each; the empty row stays zero.
    np.testing.assert_allclose(
        al.links_to_matrix(links, 3, 3, normalize=True),
        [[0.5, 0.5, 0], [0, 0, 1], [0, 0, 0]],
    )
    padded = al.links_to_matrix(links, 2, 3, padded_shape=(3, 4))
    np.testing.assert_array_equal(
        padded, [[1, 1, 0, -1], [0, 0, 1, -1], [-1, -1, -1, -1]]
    )


def test_links_to_matrix_bad_input():
    with pytest.raises(ValueError, match="out of range"):
        al.links_to_matrix({(3, 0)}, 2, 3)
    with pytest.raises(ValueError, match="non-negative"):
        al.links_to_matrix(set(), -1, 3)
    with pytest.raises(ValueError, match="padded_shape"):
        al.links_to_matrix(set(), 2, 3, padded_shape=(1, 3))
    with pytest.raises(ValueError, match="padding_value"):
        al.links_to_matrix(set(), 2, 3, padded_shape=(2, 3), padding_value=0)


# ----------------------------------------------------------------------
# The loss against a numpy reference.


def reference_loss(y_true, y_pred, cost_type, weight=1.0, normalize=False,
                   eps=1e-7, sample_weight=None):
    """The formula of the docstring, one target position at a time."""
    total = count = 0.0
    for b in range(y_true.shape[0]):
        for t in range(y_true.shape[1]):
            row = y_true[b, t].astype(np.float64)
            if np.all(row < 0):
                continue
            valid = row >= 0
            a = np.where(valid, row, 0.0)
            if normalize and a.sum() > 0:
                a = a / a.sum()
            p = y_pred[b, t].astype(np.float64)
            if cost_type == "ce":
                cost = -np.sum(a * np.log(np.clip(p, eps, 1 - eps)))
            else:
                cost = np.mean(((a - p) ** 2)[valid])
            w = 1.0 if sample_weight is None else sample_weight[b, t]
            total += w * cost
            count += w
    return weight * total / count if count else 0.0


def padded_batch(seed=0):
    """A batch of 3 pairs with different lengths, padded with -1.

    Pair 1 has a target row with no link; pair 2 is the longest.
    """
    rng = np.random.default_rng(seed)
    lengths = [(2, 3), (4, 5), (3, 2)]  # (T, S)
    links = [{(0, 0), (2, 1)}, {(0, 0), (1, 0), (4, 2), (3, 3)}, {(1, 0)}]
    t_max, s_max = 4, 5
    y_true = np.stack([
        al.links_to_matrix(l, t, s, padded_shape=(t_max, s_max))
        for l, (t, s) in zip(links, lengths)
    ])
    scores = rng.normal(size=(3, t_max, s_max))
    y_pred = np.zeros_like(scores)
    for b, (t, s) in enumerate(lengths):
        e = np.exp(scores[b, :t, :s])
        y_pred[b, :t, :s] = e / e.sum(-1, keepdims=True)
    return y_true.astype("float32"), y_pred.astype("float32")


@pytest.mark.parametrize("cost_type", ["ce", "mse"])
@pytest.mark.parametrize("normalize", [False, True])
def test_loss_matches_numpy_reference(cost_type, normalize):
    y_true, y_pred = padded_batch()
    loss = al.GuidedAlignmentLoss(cost_type, weight=0.5, normalize=normalize)
    expected = reference_loss(y_true, y_pred, cost_type, 0.5, normalize)
    got = float(ops.convert_to_numpy(loss(y_true, y_pred)))
    assert got == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("cost_type", ["ce", "mse"])
def test_loss_sample_weight(cost_type):
    y_true, y_pred = padded_batch(1)
    weights = np.ones(y_true.shape[:2], "float32")
    weights[1] = 0.0  # drop the second pair
    loss = al.GuidedAlignmentLoss(cost_type)
    expected = reference_loss(y_true, y_pred, cost_type, sample_weight=weights)
    got = loss(y_true, y_pred, sample_weight=weights)
    assert float(ops.convert_to_numpy(got)) == pytest.approx(expected, 1e-5)
    # Per-pair weights (batch,) broadcast over the target positions.
    got = loss(y_true, y_pred, sample_weight=weights[:, 0])
    assert float(ops.convert_to_numpy(got)) == pytest.approx(expected, 1e-5)


def test_loss_ignores_padded_positions():
    y_true, y_pred = padded_batch(2)
    loss = al.GuidedAlignmentLoss("mse")
    before = ops.convert_to_numpy(loss(y_true, y_pred))
    # Whatever the model puts at padded positions changes nothing.
    noisy = y_pred + (y_true < 0) * 0.7
    after = ops.convert_to_numpy(loss(y_true, noisy.astype("float32")))
    assert float(after) == pytest.approx(float(before), rel=1e-6)
    # A fully padded batch costs 0, not NaN.
    empty = loss(np.full((2, 3, 4), -1.0, "float32"), y_pred[:2, :3, :4])
    assert float(ops.convert_to_numpy(empty)) == 0.0


def test_loss_equals_keras_losses_without_padding():
    # OpenNMT-tf's guided_alignment_cost is Keras' CategoricalCrossentropy
    # / MeanSquaredError over the source axis: the same on a batch with no
    # padding.
    rng = np.random.default_rng(3)
    y_pred = keras.ops.convert_to_numpy(
        ops.softmax(rng.normal(size=(2, 3, 4)).astype("float32"))
    )
    y_true = (rng.random((2, 3, 4)) > 0.6).astype("float32")
    for cost_type, reference in (
        ("ce", keras.losses.CategoricalCrossentropy()),
        ("mse", keras.losses.MeanSquaredError()),
    ):
        got = al.GuidedAlignmentLoss(cost_type)(y_true, y_pred)
        want = reference(y_true, y_pred)
        np.testing.assert_allclose(
            ops.convert_to_numpy(got), ops.convert_to_numpy(want), rtol=1e-5
        )


def test_loss_reduction_none_and_float16_input():
    y_true, y_pred = padded_batch(4)
    loss = al.GuidedAlignmentLoss(reduction=None)
    costs = ops.convert_to_numpy(loss(y_true, y_pred.astype("float16")))
    assert costs.shape == (3, 4) and costs.dtype == np.float32
    assert np.all(np.isfinite(costs))
    assert np.all(costs[0, 2:] == 0.0)  # padded target rows


def test_loss_config_round_trip():
    loss = al.GuidedAlignmentLoss("mse", weight=0.3, normalize=True,
                                  epsilon=1e-6, name="ga")
    config = loss.get_config()
    assert config["cost_type"] == "mse" and config["weight"] == 0.3
    assert config["normalize"] and config["epsilon"] == 1e-6
    again = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(loss)
    )
    assert isinstance(again, al.GuidedAlignmentLoss)
    assert again.get_config() == config
    assert keras_attention.GuidedAlignmentLoss is al.GuidedAlignmentLoss


def test_loss_bad_arguments():
    with pytest.raises(ValueError, match="cost_type"):
        al.GuidedAlignmentLoss("kl")
    with pytest.raises(ValueError, match="weight"):
        al.GuidedAlignmentLoss(weight=-1.0)
    with pytest.raises(ValueError, match="epsilon"):
        al.GuidedAlignmentLoss(epsilon=0.0)


# ----------------------------------------------------------------------
# A tiny fit: guided attention reaches a reversed diagonal.

S = T = 5
VOCAB = 8


def tiny_model():
    source = keras.Input((S,), dtype="int32", name="source_ids")
    source_pos = keras.Input((S,), dtype="int32", name="source_positions")
    target_pos = keras.Input((T,), dtype="int32", name="target_positions")
    values = keras.layers.Embedding(VOCAB, 8)(source)
    keys = keras.layers.Embedding(S, 8)(source_pos)
    query = keras.layers.Embedding(T, 8)(target_pos)
    context, weights = keras_attention.MultiplicativeAttention(
        name="attention")(query, values, key=keys)
    logits = keras.layers.Dense(VOCAB, name="logits")(context)
    return keras.Model(
        [source, source_pos, target_pos],
        {"logits": logits, "attention": weights},
    )


def reversed_diagonal_share(model, x):
    weights = ops.convert_to_numpy(model.predict(x, verbose=0)["attention"])
    return np.mean(np.argmax(weights, -1) == np.arange(T)[::-1])


@pytest.mark.parametrize("cost_type", ["ce", "mse"])
def test_fit_guided_attention_reaches_reversed_diagonal(cost_type):
    # Every source position holds the same token: the translation loss
    # cannot tell positions apart, so only the guidance moves the attention.
    rng = np.random.default_rng(0)
    n = 256
    tokens = rng.integers(1, VOCAB, size=(n, 1))
    source = np.repeat(tokens, S, axis=1).astype("int32")
    positions = np.tile(np.arange(S, dtype="int32"), (n, 1))
    x = [source, positions, positions]
    reference = al.links_to_matrix({(S - 1 - t, t) for t in range(T)}, T, S)
    y = {"logits": source, "attention": np.repeat(reference[None], n, 0)}
    shares = {}
    for weight in (0.0, 1.0):
        keras.utils.set_random_seed(1)
        model = tiny_model()
        model.compile(
            optimizer=keras.optimizers.Adam(0.05),
            loss={
                "logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True),
                "attention": al.GuidedAlignmentLoss(cost_type, weight),
            },
        )
        model.fit(x, y, batch_size=32, epochs=25, verbose=0)  # 200 steps
        shares[weight] = reversed_diagonal_share(model, x)
        logits = ops.convert_to_numpy(model.predict(x, verbose=0)["logits"])
        assert np.mean(np.argmax(logits, -1) == source) == 1.0
    assert shares[1.0] == 1.0
    assert shares[0.0] < 0.5


# The optimizer was never built: nothing to restore, and Keras says so.
@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")
def test_compiled_model_keeps_the_loss_through_keras_file(tmp_path):
    model = tiny_model()
    loss = al.GuidedAlignmentLoss("mse", weight=0.25, normalize=True)
    model.compile(optimizer="adam", loss={"attention": loss})
    path = str(tmp_path / "guided.keras")
    model.save(path)
    again = keras.saving.load_model(path, safe_mode=True)
    restored = again.loss["attention"]
    assert isinstance(restored, al.GuidedAlignmentLoss)
    assert restored.get_config() == loss.get_config()


# ----------------------------------------------------------------------
# Backend-agnostic: no TensorFlow.


def test_alignment_package_imports_no_tensorflow():
    package = pathlib.Path(al.__file__).parent
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "tensorflow" for n in names), (
                f"{path.name}:{node.lineno}"
            )


def test_alignment_runs_without_tensorflow_on_jax():
    if importlib.util.find_spec("jax") is None:
        pytest.skip("JAX is not installed (e.g. the installed-wheel venv)")
    code = (
        "import sys, numpy as np\n"
        "from keras_attention import alignment as al\n"
        "y = al.links_to_matrix({(0, 0)}, 1, 2)[None]\n"
        "al.GuidedAlignmentLoss()(y, np.full((1, 1, 2), 0.5, 'float32'))\n"
        "al.symmetrize({(0, 0)}, {(0, 0)})\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
    )
    env = {**__import__("os").environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
