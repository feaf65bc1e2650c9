"""Misuse of `keras_attention.alignment`: every argument outside its
documented domain gets a clear error naming it, or the documented result.

The link tools are numpy/Python; `GuidedAlignmentLoss` runs on every Keras
backend, and the tests of its padding (a result and a gradient that
padded positions never influence, whatever they hold) run on TensorFlow,
JAX and PyTorch.
"""

import math

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention import alignment as al

FEW = settings(max_examples=20, deadline=None)

GOOD = [{(0, 0), (1, 1)}, {(0, 1)}]
# A link that is not a pair of non-negative integers.
BAD_LINKS = st.one_of(
    st.tuples(st.floats(0.01, 5.0).filter(lambda x: x != int(x)),
              st.integers(0, 3)),
    st.tuples(st.integers(0, 3), st.integers(max_value=-1)),
    st.tuples(st.just(math.nan), st.just(0)),
    st.sampled_from(["0-0", "1-2", (0,), (0, 1, 2), None, 3, (True, 0),
                     ("0", "1")]),
)


# ----------------------------------------------------------------------
# Corpora and links.


@FEW
@given(bad=BAD_LINKS, where=st.sampled_from(["hypotheses", "sure",
                                             "possible"]))
def test_alignment_scores_refuses_bad_links(bad, where):
    corpora = {"hypotheses": [set(GOOD[0]), set(GOOD[1])],
               "sure": [set(GOOD[0]), set(GOOD[1])],
               "possible": [set(), set()]}
    corpora[where][1] = [(0, 0), bad]
    with pytest.raises(ValueError, match=f"`{where}"):
        al.alignment_scores(**corpora)


def test_one_set_where_a_corpus_is_expected_raises():
    with pytest.raises(ValueError, match="`hypotheses`.*one alignment"):
        al.alignment_scores({(0, 0), (1, 1)}, [{(0, 0), (1, 1)}])
    with pytest.raises(ValueError, match=r"`sure`.*\[links\]"):
        al.alignment_scores([{(0, 0)}], [(0, 0)])
    with pytest.raises(ValueError, match="`forward`"):
        al.symmetrize_corpus({(0, 0)}, [{(0, 0)}])
    # The list of one alignment is the documented way: AER 0.
    scores = al.alignment_scores([{(0, 0), (1, 1)}], [{(0, 0), (1, 1)}])
    assert scores["aer"] == 0.0


def test_read_pharaoh_pairs_raise_with_the_way_out(tmp_path):
    path = tmp_path / "gold.txt"
    path.write_text("0-0 1?1\n0-1\n")
    gold = al.read_pharaoh(str(path))
    with pytest.raises(ValueError, match=r"\(sure, possible\) pair"):
        al.alignment_scores([{(0, 0)}, {(0, 1)}], gold)
    sure = [s for s, _ in gold]
    possible = [p for _, p in gold]
    scores = al.alignment_scores([{(0, 0)}, {(0, 1)}], sure, possible)
    assert scores["aer"] == 0.0


def test_string_links_raise_pointing_at_parse_pharaoh():
    with pytest.raises(ValueError, match="parse_pharaoh"):
        al.alignment_scores([["0-0", "1-1"]], [{(0, 0), (1, 1)}])
    with pytest.raises(ValueError, match="parse_pharaoh"):
        al.symmetrize("0-0 1-1", {(0, 0)})


def test_integer_valued_floats_and_numpy_ints_are_links():
    links = {(np.int64(1), 0), (2.0, np.int32(1))}
    assert al.symmetrize(links, links, "union") == {(1, 0), (2, 1)}
    assert al.alignment_scores([links], [{(1, 0), (2, 1)}])["aer"] == 0.0
    assert al.transpose_links(links) == {(0, 1), (1, 2)}


@FEW
@given(bad=BAD_LINKS)
def test_symmetrize_and_links_to_matrix_refuse_bad_links(bad):
    with pytest.raises(ValueError, match="`forward`"):
        al.symmetrize({(0, 0), bad}, {(0, 0)})
    with pytest.raises(ValueError, match="`reverse`"):
        al.symmetrize({(0, 0)}, [bad])
    with pytest.raises(ValueError, match="`links`"):
        al.links_to_matrix([bad], 4, 4)
    with pytest.raises(ValueError, match="`links`"):
        al.transpose_links([bad])
    with pytest.raises(ValueError, match="`sure`"):
        al.format_pharaoh([bad])


def test_float_links_are_no_longer_truncated():
    with pytest.raises(ValueError, match=r"\(1\.7, 0\)"):
        al.symmetrize({(1.7, 0)}, {(1, 0)}, "intersection")
    with pytest.raises(ValueError, match=r"\(1\.7, 0\)"):
        al.links_to_matrix({(1.7, 0)}, 2, 3)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"target_length": 2.5}, "target_length"),
        ({"target_length": -1}, "target_length"),
        ({"source_length": True}, "source_length"),
        ({"source_length": "3"}, "source_length"),
        ({"normalize": "yes"}, "normalize"),
        ({"padded_shape": (4,)}, "padded_shape"),
        ({"padded_shape": (4.5, 4)}, r"padded_shape\[0\]"),
        ({"padded_shape": (1, 4)}, "padded_shape"),
        ({"padded_shape": (4, 4), "padding_value": 0.0}, "padding_value"),
        ({"padded_shape": (4, 4), "padding_value": math.nan},
         "padding_value"),
        ({"padded_shape": (4, 4), "padding_value": -math.inf},
         "padding_value"),
        ({"dtype": "int32"}, "dtype"),
    ],
)
def test_links_to_matrix_arguments(kwargs, name):
    args = {"links": {(0, 0)}, "target_length": 2, "source_length": 3}
    args.update(kwargs)
    with pytest.raises(ValueError, match=f"`?{name}"):
        al.links_to_matrix(**args)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: al.hard_links([[0.5, 0.5]], threshold=math.nan),
         "threshold"),
        (lambda: al.hard_links([[0.5, 0.5]], "threshold", math.inf),
         "threshold"),
        (lambda: al.hard_links([[0.5, 0.5]], threshold="0.5"), "threshold"),
        (lambda: al.hard_links([[0.5, 0.5]], "max"), "method"),
        (lambda: al.hard_links([0.5, 0.5]), "matrix"),
        (lambda: al.hard_links([["a", "b"]]), "matrix"),
        (lambda: al.hard_links([[0.5], [0.5, 0.1]]), "matrix"),
        (lambda: al.symmetrize({(0, 0)}, {(0, 0)}, "grow-diag-finally"),
         "method"),
        (lambda: al.symmetrize_corpus([], [], "gdfa"), "method"),
        (lambda: al.parse_pharaoh(["0-0"]), "line"),
        (lambda: al.parse_pharaoh("0-0", one_based="yes"), "one_based"),
        (lambda: al.parse_pharaoh("0-0 1:1"), "malformed"),
        (lambda: al.format_pharaoh({(0, 0)}, one_based=1), "one_based"),
        (lambda: al.word_groups("vend ##redi"), "tokens"),
        (lambda: al.word_groups([1, 2]), "tokens"),
        (lambda: al.word_groups(["a"], scheme="bpe"), "scheme"),
        (lambda: al.word_groups(["a"], special_tokens="[PAD]"),
         "special_tokens"),
        (lambda: al.word_attention(np.ones((1, 1)), ["a", "b"], ["c"]),
         "weights"),
        (lambda: al.word_attention(np.ones((2, 2)), "ab", ["c"]),
         "source_tokens"),
        (lambda: al.word_links_to_token_links({(0, 5)}, ["a"], ["b"]),
         "out of range"),
        (lambda: al.word_links_to_token_links({(0.5, 0)}, ["a"], ["b"]),
         "links"),
    ],
)
def test_link_tools_raise_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_write_pharaoh_checks_the_corpus(tmp_path):
    with pytest.raises(ValueError, match="`sure`"):
        al.write_pharaoh(str(tmp_path / "a.txt"), {(0, 0)})
    with pytest.raises(ValueError, match=r"`possible\[0\]`"):
        al.write_pharaoh(str(tmp_path / "a.txt"), [{(0, 0)}], [["0?1"]])


def test_nan_weights_are_no_links():
    matrix = [[math.nan, 0.2], [math.nan, math.nan], [0.9, math.nan]]
    assert al.hard_links(matrix) == {(1, 0), (0, 2)}
    assert al.hard_links(matrix, "threshold", 0.5) == {(0, 2)}


# ----------------------------------------------------------------------
# GuidedAlignmentLoss: arguments.

BAD_LOSS_ARGS = {
    "weight": st.one_of(st.sampled_from([math.nan, math.inf, "a", None,
                                         True]),
                        st.floats(max_value=-1e-9, allow_infinity=False)),
    "epsilon": st.one_of(st.sampled_from([0.0, 0.5, 0.9, math.nan,
                                          math.inf, "x", None]),
                         st.floats(max_value=0.0, allow_infinity=False),
                         st.floats(min_value=0.5, allow_infinity=False)),
    "cost_type": st.sampled_from(["CE", "l2", "", None, 1]),
    "normalize": st.sampled_from(["yes", 1, None, 0.0]),
}


@FEW
@given(name=st.sampled_from(sorted(BAD_LOSS_ARGS)), data=st.data())
def test_bad_loss_arguments_raise_naming_the_argument(name, data):
    bad = data.draw(BAD_LOSS_ARGS[name])
    with pytest.raises(
        ValueError, match=f"GuidedAlignmentLoss: `{name}`.*Received: {name}"
    ):
        al.GuidedAlignmentLoss(**{name: bad})


def test_wrong_types_are_type_errors_too():
    with pytest.raises(TypeError, match="`weight`"):
        al.GuidedAlignmentLoss(weight="a")


def reference():
    """Two pairs, the second padded: 2 real target rows of 2 sources."""
    return al.links_to_matrix({(0, 0), (1, 1), (2, 2)}, 3, 3), (
        al.links_to_matrix({(0, 0), (1, 1)}, 2, 2, padded_shape=(3, 3))
    )


def y_true():
    return np.stack(reference()).astype("float32")


def clean_pred():
    rng = np.random.default_rng(0)
    p = rng.random((2, 3, 3)).astype("float32")
    return p / p.sum(-1, keepdims=True)


@pytest.mark.parametrize(
    "pred_shape, weight_shape",
    [((2, 2, 3), None), ((2, 3, 2), None), ((1, 3, 3), None),
     ((2, 3), None), ((2, 3, 3), (2, 4)), ((2, 3, 3), (3,)),
     ((2, 3, 3), (2, 3, 1))],
)
def test_shapes_that_do_not_agree_raise(pred_shape, weight_shape):
    loss = al.GuidedAlignmentLoss()
    pred = np.full(pred_shape, 0.3, "float32")
    weight = None if weight_shape is None else np.ones(weight_shape)
    name = "y_pred" if weight_shape is None else "sample_weight"
    with pytest.raises(ValueError, match=f"GuidedAlignmentLoss: .*{name}"):
        loss(y_true(), pred, sample_weight=weight)


# ----------------------------------------------------------------------
# GuidedAlignmentLoss: padded positions never influence the loss or its
# gradient, on every backend.


def loss_and_grad(loss, target, pred):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        pred = tf.constant(pred)
        with tf.GradientTape() as tape:
            tape.watch(pred)
            value = loss(target, pred)
        return float(value), tape.gradient(value, pred).numpy()
    if backend == "jax":
        import jax

        value, grad = jax.value_and_grad(lambda p: loss(target, p))(pred)
        return float(value), np.asarray(grad)
    import torch

    pred = torch.tensor(pred, requires_grad=True)
    value = loss(torch.tensor(target), pred)
    value.backward()
    return float(value.detach()), pred.grad.numpy()


@pytest.mark.parametrize("cost_type", ["ce", "mse"])
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("junk", [math.nan, math.inf, -math.inf, 1e30])
def test_padded_positions_never_influence_loss_or_gradient(
    cost_type, normalize, junk
):
    loss = al.GuidedAlignmentLoss(cost_type, weight=0.5,
                                  normalize=normalize)
    target = y_true()
    clean = clean_pred()
    dirty = clean.copy()
    dirty[target < 0] = junk  # padded rows and padded source positions
    value, grad = loss_and_grad(loss, target, clean)
    dirty_value, dirty_grad = loss_and_grad(loss, target, dirty)
    assert math.isfinite(dirty_value)
    assert np.all(np.isfinite(dirty_grad))
    np.testing.assert_allclose(dirty_value, value, rtol=1e-6)
    np.testing.assert_allclose(dirty_grad, grad, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(dirty_grad[target < 0], 0.0)


def test_zero_weight_and_tiny_epsilon_are_valid():
    target, pred = y_true(), clean_pred()
    assert float(ops.convert_to_numpy(
        al.GuidedAlignmentLoss(weight=0.0)(target, pred))) == 0.0
    value = al.GuidedAlignmentLoss(epsilon=1e-30)(target, pred)
    assert math.isfinite(float(ops.convert_to_numpy(value)))
