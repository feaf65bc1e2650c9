"""`Seq2Seq.generate` compiled (`tf.function`, `jax.jit`, `torch.no_grad`)
against the eager decoder (`compile=False`): the same outputs, one trace
for repeated calls, a new function for new options, new weights followed,
fresh samples without a seed, and the eager errors."""

import numpy as np
import pytest

import keras
from keras import ops

from keras_attention.checks import ArgumentTypeError
from keras_attention.seq2seq import Seq2Seq
from keras_attention.seq2seq.tokens import END_ID

BACKEND = keras.backend.backend()
SOURCE = np.array([[5, 6, 7, 3], [8, 5, 3, 0]], "int32")
STRATEGIES = [
    ("greedy", {}),
    ("beam", {"beam_width": 3}),
    ("nbest", {"n_best": 2, "beam_width": 3}),
    ("sample", {"seed": 1, "top_k": 3}),
]


def _model(**kwargs):
    keras.utils.set_random_seed(3)
    kwargs = {"source_vocab_size": 9, "target_vocab_size": 7,
              "embedding_dim": 4, "units": 4, "dropout": 0.0, **kwargs}
    return Seq2Seq(**kwargs)


def _numpy(out):
    return {k: None if v is None else ops.convert_to_numpy(v)
            for k, v in out.items()}


def _assert_same(compiled, eager):
    """Tokens exactly, scores to 1e-5. On JAX the compiled outputs keep
    `max_length` columns: the eager ones padded with the end token and
    zero attention."""
    compiled, eager = _numpy(compiled), _numpy(eager)
    width = compiled["tokens"].shape[-1]
    extra = width - eager["tokens"].shape[-1]
    assert extra == 0 or (BACKEND == "jax" and extra > 0)
    pad = [(0, 0)] * (eager["tokens"].ndim - 1) + [(0, extra)]
    np.testing.assert_array_equal(
        compiled["tokens"],
        np.pad(eager["tokens"], pad, constant_values=END_ID),
    )
    np.testing.assert_array_equal(compiled["lengths"], eager["lengths"])
    for name in ("scores", "log_probs"):
        np.testing.assert_allclose(
            compiled[name], eager[name], rtol=1e-5, atol=1e-5
        )
    attention = np.pad(eager["attention"], pad + [(0, 0)])
    np.testing.assert_allclose(compiled["attention"], attention, atol=1e-5)


@pytest.mark.parametrize("strategy,options", STRATEGIES)
def test_compiled_equals_eager(strategy, options):
    model = _model(model="stepwise", score="additive")
    eager = model.generate(
        SOURCE, max_length=5, strategy=strategy, compile=False, **options
    )
    compiled = model.generate(
        SOURCE, max_length=5, strategy=strategy, **options
    )
    _assert_same(compiled, eager)
    # The Luong (sequence-mode) decoder too, on the cheapest strategy.
    if strategy == "greedy":
        model = _model(model="luong", score="general")
        _assert_same(
            model.generate(SOURCE, max_length=5),
            model.generate(SOURCE, max_length=5, compile=False),
        )


def test_traced_once_per_options():
    model = _model()
    function = model.make_generate_function(max_length=4)
    assert model.make_generate_function(max_length=4) is function
    for _ in range(3):
        model.generate(SOURCE, max_length=4)
    if BACKEND == "torch":  # Nothing is traced: eager under no_grad.
        assert function.traces == 0
        return
    assert function.traces == 1
    # A second batch size (and source length): TensorFlow's signature has
    # unknown sizes (no new trace); JAX compiles once per shape.
    for _ in range(2):
        model.generate(SOURCE[:1, :3], max_length=4)
    assert function.traces == (1 if BACKEND == "tensorflow" else 2)
    # Other options, another function; the first one is kept.
    other = model.make_generate_function(max_length=4, strategy="beam")
    assert other is not function
    assert model.make_generate_function(max_length=5) is not function
    assert model.make_generate_function(max_length=4) is function
    assert other is not model.make_generate_function(
        max_length=4, strategy="beam", beam_width=2
    )


def test_new_weights_are_followed():
    model = _model()
    before = _numpy(model.generate(SOURCE, max_length=4))
    # The output bias makes token 5 the argmax of every step.
    bias = np.zeros((7,), "float32")
    bias[5] = 100.0
    model.get_layer("logits").bias.assign(bias)
    weights = model.get_weights()
    model.set_weights(weights)
    after = _numpy(model.generate(SOURCE, max_length=4))
    assert not np.array_equal(after["tokens"][:, :4], before["tokens"][:, :4])
    np.testing.assert_array_equal(after["tokens"], np.full((2, 4), 5))
    _assert_same(
        model.generate(SOURCE, max_length=4),
        model.generate(SOURCE, max_length=4, compile=False),
    )


def test_sampling_without_a_seed_draws_anew():
    model = _model()
    source = np.tile(SOURCE, (4, 1))
    draws = [
        _numpy(model.generate(
            source, max_length=6, strategy="sample", temperature=5.0
        ))["tokens"]
        for _ in range(2)
    ]
    assert not np.array_equal(draws[0], draws[1])
    # A SeedGenerator advances too; an int seed draws the same.
    generator = keras.random.SeedGenerator(7)
    draws = [
        _numpy(model.generate(
            source, max_length=6, strategy="sample", temperature=5.0,
            seed=generator,
        ))["tokens"]
        for _ in range(2)
    ]
    assert not np.array_equal(draws[0], draws[1])
    draws = [
        _numpy(model.generate(
            source, max_length=6, strategy="sample", seed=4
        ))["tokens"]
        for _ in range(2)
    ]
    np.testing.assert_array_equal(draws[0], draws[1])


@pytest.mark.parametrize("options,error", [
    ({"strategy": "viterbi"}, ValueError),
    ({"strategy": "beam", "beam_width": 0}, ValueError),
    ({"strategy": "nbest", "n_best": 3, "beam_width": 2}, ValueError),
    ({"strategy": "sample", "temperature": -1.0}, ValueError),
    ({"strategy": "sample", "seed": "x"}, ArgumentTypeError),
    ({"max_length": -1}, ValueError),
    ({"max_length": 2.0}, ValueError),
    ({"max_length": 2**31 - 1}, ValueError),
])
def test_invalid_options_raise_as_eagerly(options, error):
    model = _model()
    messages = []
    for compile in (False, True):
        with pytest.raises(error) as caught:
            model.generate(SOURCE, compile=compile, **options)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_compile_false_and_the_model_attribute_decode_eagerly():
    model = _model()
    function = model.make_generate_function(max_length=3)
    model.generate(SOURCE, max_length=3, compile=False)
    model.compile_generate = False
    model.generate(SOURCE, max_length=3)
    assert function.traces == 0
    model.compile_generate = True
    model.generate(SOURCE, max_length=3)
    assert function.traces == (0 if BACKEND == "torch" else 1)
    with pytest.raises(ArgumentTypeError, match="compile"):
        model.generate(SOURCE, compile="yes")


def test_tensor_options_decode_eagerly():
    """A per-sentence `max_length` is a tensor: no compiled function, the
    eager decoder (which checks its values)."""
    model = _model()
    limits = ops.convert_to_tensor(np.array([2, 3], "int32"))
    assert model.make_generate_function(max_length=limits) is None
    out = _numpy(model.generate(SOURCE, max_length=limits))
    assert (out["lengths"] <= [2, 3]).all()


@pytest.mark.skipif(BACKEND != "torch", reason="PyTorch's no_grad")
def test_torch_generates_without_gradients():
    out = _model().generate(SOURCE, max_length=3, strategy="beam")
    assert not out["scores"].requires_grad
