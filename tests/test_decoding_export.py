"""The new decoders in a graph: SavedModel export (TensorFlow) and
`jax.jit` (JAX)."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import beam_search_nbest
from keras_attention.decoding import ensemble_state
from keras_attention.decoding import ensemble_step
from keras_attention.decoding import greedy_decode
from keras_attention.decoding import replace_unknown
from keras_attention.decoding import sample_decode
from tests.test_decoding import END
from tests.test_decoding import START
from tests.test_decoding import ToyModel
from tests.test_decoding import np_

UNK = 4


@pytest.mark.tf_only
def test_new_decoders_export_to_saved_model(tmp_path):
    import tensorflow as tf

    models = [ToyModel(s, batch_size=2, vocab_size=6, source_length=4)
              for s in (50, 51)]
    generator = keras.random.SeedGenerator(5)

    class Translator(tf.Module):
        def __init__(self):
            super().__init__()
            self.seed_state = generator.state  # tracked: saved with it

        def state(self):
            return models[0].initial_state()

        @tf.function(input_signature=[tf.TensorSpec((), tf.int32)])
        def nbest(self, k):
            out = beam_search_nbest(
                models[0].step, START, self.state(), END, 7, n_best=k,
                coverage_penalty=0.4,
            )
            return {key: out[key] for key in ("tokens", "scores",
                                               "attention")}

        @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32),
                                      tf.TensorSpec((None,), tf.int32)])
        def beam_prefix(self, prefix, prefix_lengths):
            out = beam_search_decode(
                models[0].step, START, self.state(), END, 7, beam_width=3,
                coverage_penalty=0.4, convention="tfa", prefix=prefix,
                prefix_lengths=prefix_lengths,
            )
            return {"tokens": out["tokens"], "scores": out["scores"]}

        @tf.function(input_signature=[])
        def sample(self):
            out = sample_decode(models[0].step, START, self.state(), END, 7,
                                top_k=3, top_p=0.9, seed=generator)
            return {"tokens": out["tokens"], "log_probs": out["log_probs"]}

        @tf.function(input_signature=[tf.TensorSpec((None, 4), tf.int32)])
        def ensemble_unk(self, source):
            step = ensemble_step([m.step for m in models])
            state = ensemble_state(*[m.initial_state() for m in models])
            out = greedy_decode(step, START, state, END, 7)
            tokens = replace_unknown(out["tokens"], out["attention"],
                                     source, UNK)
            return {"tokens": tokens, "raw": out["tokens"]}

    module = Translator()
    k3 = module.nbest(tf.constant(3))
    prefix = tf.constant([[2, 3], [5, 0]])
    prefix_lengths = tf.constant([2, 1])
    beam = module.beam_prefix(prefix, prefix_lengths)
    source = tf.constant([[10, 11, 12, 13], [20, 21, 22, 23]])
    ens = module.ensemble_unk(source)
    # Only standard TensorFlow ops: no XLA op for the server to lack.
    for function in (module.nbest, module.beam_prefix, module.sample,
                     module.ensemble_unk):
        graph = function.get_concrete_function().graph
        op_types = {op.type for op in graph.get_operations()}
        for inner in graph._functions.values():
            op_types |= {node.op for node in inner.definition.node_def}
        assert not [op for op in op_types if op.startswith("Xla")]
    path = str(tmp_path / "translator")
    tf.saved_model.save(module, path, signatures={
        "nbest": module.nbest, "beam_prefix": module.beam_prefix,
        "sample": module.sample, "ensemble_unk": module.ensemble_unk,
    })
    loaded = tf.saved_model.load(path)
    # Eager, in the tf.function and in the reloaded SavedModel: the same.
    eager = beam_search_nbest(models[0].step, START,
                              models[0].initial_state(), END, 7, n_best=3,
                              coverage_penalty=0.4)
    for got in (k3, loaded.signatures["nbest"](k=tf.constant(3))):
        np.testing.assert_array_equal(got["tokens"].numpy(),
                                      np_(eager["tokens"]))
        np.testing.assert_allclose(got["scores"].numpy(),
                                   np_(eager["scores"]), rtol=1e-5)
    assert loaded.nbest(tf.constant(2))["tokens"].shape[:2] == (2, 2)
    served = loaded.beam_prefix(prefix, prefix_lengths)
    np.testing.assert_array_equal(served["tokens"].numpy(),
                                  beam["tokens"].numpy())
    np.testing.assert_array_equal(served["tokens"].numpy()[0, :2], [2, 3])
    assert served["tokens"].numpy()[1, 0] == 5
    np.testing.assert_array_equal(
        loaded.ensemble_unk(source)["tokens"].numpy(), ens["tokens"].numpy()
    )
    raw, replaced = ens["raw"].numpy(), ens["tokens"].numpy()
    assert np.all(replaced[raw != UNK] == raw[raw != UNK])
    assert np.all(replaced[raw == UNK] >= 10)
    # The seed generator is a variable of the SavedModel: new draws each
    # call, and every token has a valid log-probability.
    draws = [loaded.sample()["tokens"].numpy() for _ in range(4)]
    assert any(not np.array_equal(draws[0], d) for d in draws[1:])
    assert np.all(loaded.sample()["log_probs"].numpy() > -1e8)


@pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="needs the JAX backend"
)
def test_new_decoders_under_jax_jit():
    import jax

    model = ToyModel(52, batch_size=3, vocab_size=6, source_length=4)
    prefix = ops.convert_to_tensor([[2, 3], [5, 0], [0, 0]])
    lengths = ops.convert_to_tensor([2, 1, 0])
    cases = (
        (beam_search_nbest, {"n_best": 2, "beam_width": 3,
                             "coverage_penalty": 0.5}),
        (beam_search_decode, {"convention": "tfa", "prefix": prefix,
                              "prefix_lengths": lengths}),
        (sample_decode, {"seed": 3, "top_k": 3, "top_p": 0.8}),
        (greedy_decode, {"prefix": prefix, "prefix_lengths": lengths}),
    )
    for decode, kwargs in cases:
        jitted = jax.jit(
            lambda state: decode(model.step, START, state, END, 7, **kwargs)
        )(model.initial_state())
        eager = decode(model.step, START, model.initial_state(), END, 7,
                       **kwargs)
        n = np_(eager["tokens"]).shape[-1]
        np.testing.assert_array_equal(
            np_(jitted["tokens"])[..., :n], np_(eager["tokens"])
        )
        np.testing.assert_allclose(
            np_(jitted["scores"]), np_(eager["scores"]), rtol=1e-5
        )


# `static_max_length`: per-sentence limits at a static output width, the
# form that compiles under XLA.

STATIC_CASES = (
    (greedy_decode, {}),
    (beam_search_decode, {"beam_width": 3, "coverage_penalty": 0.3}),
    (beam_search_nbest, {"n_best": 2, "beam_width": 3}),
    (sample_decode, {"temperature": 0.0}),
    (greedy_decode, {"prefix": [[2, 3], [5, 0], [0, 0]],
                     "prefix_lengths": [2, 1, 0]}),
)
LIMITS = [3, 0, 6]


def _assert_padded_equal(wide, narrow, width):
    tokens = np_(wide["tokens"])
    assert tokens.shape[-1] == width
    n = np_(narrow["tokens"]).shape[-1]
    np.testing.assert_array_equal(tokens[..., :n], np_(narrow["tokens"]))
    assert np.all(tokens[..., n:] == END)
    if narrow["attention"] is not None:
        attention = np_(wide["attention"])
        np.testing.assert_allclose(
            attention[..., :n, :], np_(narrow["attention"]), atol=1e-6
        )
        assert np.all(attention[..., n:, :] == 0.0)
    for key in ("lengths", "scores", "log_probs"):
        np.testing.assert_allclose(
            np_(wide[key]), np_(narrow[key]), rtol=1e-5, atol=1e-6
        )


@pytest.mark.parametrize("case", range(len(STATIC_CASES)))
def test_static_max_length_pads_the_outputs_of_per_sentence_limits(case):
    decode, kwargs = STATIC_CASES[case]
    model = ToyModel(53, batch_size=3, vocab_size=6, source_length=4)
    limits = ops.convert_to_tensor(LIMITS, "int32")
    narrow = decode(model.step, START, model.initial_state(), END, limits,
                    **kwargs)
    wide = decode(model.step, START, model.initial_state(), END, limits,
                  static_max_length=9, **kwargs)
    _assert_padded_equal(wide, narrow, 9)
    assert np.all(np_(wide["lengths"]).reshape(3, -1).max(1) <= LIMITS)


def _compiled(decode, kwargs, model, static):
    """`decode` compiled with the limits as a traced input: XLA on
    TensorFlow, `jax.jit` on JAX."""
    def run(state, limits):
        return decode(model.step, START, state, END, limits,
                      static_max_length=static, **kwargs)

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(run, jit_compile=True, autograph=False)
    if backend == "jax":
        import jax

        return jax.jit(run)
    pytest.skip("PyTorch has no compiled loop to check")


@pytest.mark.parametrize("case", range(len(STATIC_CASES)))
def test_static_max_length_compiles_with_per_sentence_limits(case):
    decode, kwargs = STATIC_CASES[case]
    model = ToyModel(54, batch_size=3, vocab_size=6, source_length=4)
    limits = ops.convert_to_tensor(LIMITS, "int32")
    compiled = _compiled(decode, kwargs, model, 8)(
        model.initial_state(), limits
    )
    eager = decode(model.step, START, model.initial_state(), END, limits,
                   **kwargs)
    _assert_padded_equal(compiled, eager, 8)


def test_static_max_length_bounds_unknown_limits_inside_a_trace():
    """Limits are values there: those above the static width count as it,
    as documented (no write outside the buffers)."""
    model = ToyModel(55, batch_size=3, vocab_size=6, source_length=4)
    limits = ops.convert_to_tensor([30, 2, 40], "int32")
    if keras.backend.backend() == "torch":
        pytest.skip("PyTorch has no compiled loop to check")
    out = _compiled(greedy_decode, {}, model, 5)(model.initial_state(), limits)
    capped = greedy_decode(model.step, START, model.initial_state(), END,
                           ops.convert_to_tensor([5, 2, 5], "int32"))
    _assert_padded_equal(out, capped, 5)


@pytest.mark.parametrize(
    "value, error, message",
    [
        (4, ValueError, r"at most `static_max_length`.*max_length=6"),
        (-1, ValueError, "`static_max_length` must be a non-negative"),
        ("8", TypeError, "`static_max_length` must be a non-negative"),
        (8.0, TypeError, "`static_max_length` must be a non-negative"),
        (True, TypeError, "`static_max_length` must be a non-negative"),
    ],
)
@pytest.mark.parametrize("decode", [greedy_decode, beam_search_decode,
                                    sample_decode])
def test_static_max_length_misuse_names_the_argument(
    decode, value, error, message
):
    model = ToyModel(56, batch_size=3, vocab_size=6, source_length=4)
    with pytest.raises(error, match=message):
        decode(model.step, START, model.initial_state(), END,
               ops.convert_to_tensor(LIMITS, "int32"),
               static_max_length=value)
    if value == 4:  # a Python int limit too
        with pytest.raises(error, match=message):
            decode(model.step, START, model.initial_state(), END, 6,
                   static_max_length=value)
