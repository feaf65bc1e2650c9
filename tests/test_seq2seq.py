"""`keras_attention.seq2seq.Seq2Seq` on every backend: one `keras.Model`
that fits, saves to `.keras`, loads with `safe_mode=True`, decodes and
aligns."""

import os

import numpy as np
import pytest

import keras
from keras import ops

import keras_attention as ka
from keras_attention.seq2seq import MaskedAccuracy
from keras_attention.seq2seq import MaskedLoss
from keras_attention.seq2seq import MaskedMean
from keras_attention.seq2seq import Seq2Seq
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.seq2seq.tokens import START_ID
from keras_attention.training import loop

SOURCE = np.array([[5, 6, 7, 3], [8, 5, 3, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5], [2, 6, 0]], "int32")
TARGET_OUT = np.array([[4, 5, 3], [6, 3, 0]], "int32")
VARIANTS = [
    {"model": "luong", "score": "general"},
    {"model": "luong", "score": "dot", "cell": "gru",
     "attention_values": "embedding"},
    {"model": "stepwise", "score": "additive"},
    {"model": "stepwise", "score": "location", "bidirectional": False},
    {"model": "luong", "score": "general", "alignment_head": "lexical"},
]


def _model(**kwargs):
    kwargs = {"source_vocab_size": 9, "target_vocab_size": 7,
              "embedding_dim": 4, "units": 4, "dropout": 0.0, **kwargs}
    return Seq2Seq(**kwargs)


def _inputs():
    return {"source_ids": SOURCE, "target_in": TARGET_IN}


@pytest.mark.parametrize("variant", VARIANTS)
def test_outputs_and_config_round_trip(variant):
    keras.utils.set_random_seed(0)
    model = _model(**variant)
    assert isinstance(model, keras.Model)
    out = model(_inputs())
    assert tuple(out["logits"].shape) == (2, 3, 7)
    assert tuple(out["attention"].shape) == (2, 3, 4)
    assert tuple(out["alignment"].shape) == (2, 3, 4)
    assert ("lexical" in out) == (variant.get("alignment_head") == "lexical")
    again = Seq2Seq.from_config(model.get_config())
    again.set_weights(model.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(again(_inputs())["logits"]),
        ops.convert_to_numpy(out["logits"]), atol=1e-6,
    )


@pytest.mark.parametrize("variant", VARIANTS[:3])
def test_steps_equal_teacher_forcing(variant):
    """Decoding step by step with `encode`/`step` gives the log-softmax of
    the teacher-forced logits, row by row."""
    keras.utils.set_random_seed(1)
    model = _model(**variant)
    logits = ops.convert_to_numpy(model(_inputs())["logits"])
    expected = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    state = model.encode(SOURCE)
    for t in range(TARGET_IN.shape[1]):
        step_logits, _, _ = model.step_logits(TARGET_IN[:, t], state)
        log_probs, state, attention = model.step(TARGET_IN[:, t], state)
        rows = TARGET_IN[:, t] != 0
        np.testing.assert_allclose(
            ops.convert_to_numpy(log_probs)[rows], expected[rows, t],
            atol=1e-5,
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(step_logits)[rows], logits[rows, t],
            atol=1e-5,
        )
        assert tuple(attention.shape) == (2, 4)


def test_greedy_generate_decodes_as_the_log_softmax_step():
    """`generate` decodes greedily from `step_logits` (`from_logits=True`):
    the tokens and scores of `greedy_decode` over `step`."""
    keras.utils.set_random_seed(3)
    model = _model()

    def no_log_softmax_step(tokens, state):
        raise AssertionError("greedy `generate` called `step`")

    model.step = no_log_softmax_step
    out = model.generate(SOURCE, max_length=6, strategy="greedy")
    del model.step
    reference = ka.greedy_decode(
        model.step, ops.full((2,), START_ID, "int32"), model.encode(SOURCE),
        end_token=END_ID, max_length=6,
        forbidden_tokens=ka.seq2seq.generation.FORBIDDEN_TOKENS)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(out["tokens"]),
        ops.convert_to_numpy(reference["tokens"]))
    np.testing.assert_allclose(
        ops.convert_to_numpy(out["scores"]),
        ops.convert_to_numpy(reference["scores"]), rtol=1e-5, atol=1e-5)


def test_masked_source_positions_get_no_attention():
    model = _model(attend_source_end=False, unattended_source_ids=(6,))
    weights = ops.convert_to_numpy(model(_inputs())["attention"])
    assert np.all(weights[:, :, 3] == 0)  # [END] of the first source
    assert np.all(weights[0, :, 1] == 0)  # id 6
    assert np.all(weights[1, :, 3] == 0)  # padding


def test_fit_save_load_keras_file(tmp_path):
    keras.utils.set_random_seed(2)
    model = _model(alignment_head="lexical")
    model.compile(
        "adam", loss={"logits": MaskedLoss(), "lexical": MaskedMean()},
        metrics={"logits": [MaskedAccuracy()]},
    )
    history = model.fit(
        _inputs(), {"logits": TARGET_OUT, "lexical": TARGET_OUT},
        epochs=3, verbose=0,
    )
    assert history.history["loss"][-1] < history.history["loss"][0]
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded, Seq2Seq)
    for key in ("logits", "alignment", "lexical"):
        np.testing.assert_allclose(
            ops.convert_to_numpy(loaded(_inputs())[key]),
            ops.convert_to_numpy(model(_inputs())[key]), atol=1e-5,
        )
    # A tensor target is the `"logits"` target; the other outputs rest.
    plain = _model()
    plain.compile("adam", loss={"logits": MaskedLoss()})
    assert np.isfinite(plain.fit(_inputs(), TARGET_OUT, verbose=0)
                       .history["loss"][0])


def test_build_optimizer_creates_its_variables_before_fit():
    """`loop.build_optimizer` builds the optimizer of a compiled model
    (so that TensorFlow traces the train step once); `fit` then adds no
    variable, and trains."""
    keras.utils.set_random_seed(2)
    model = _model()
    model.compile("adam", loss={"logits": MaskedLoss()})
    assert model.built and not model.optimizer.built
    loop.build_optimizer(model)
    assert model.optimizer.built
    paths = [v.path for v in model.optimizer.variables]
    for weight in model.trainable_variables:
        name = weight.path.replace("/", "_")
        assert sum(p.endswith(name + "_momentum") for p in paths) == 1, name
    history = model.fit(_inputs(), TARGET_OUT, epochs=2, verbose=0)
    assert [v.path for v in model.optimizer.variables] == paths
    assert history.history["loss"][-1] < history.history["loss"][0]
    loop.build_optimizer(model)  # built already: nothing changes
    assert [v.path for v in model.optimizer.variables] == paths
    # Not compiled: nothing to build.
    loop.build_optimizer(_model())


def test_average_checkpoints_loads_the_mean_of_the_files(tmp_path):
    from keras_attention.training import run_dir

    model = _model()
    paths, arrays = [], []
    for i in range(3):
        weights = [w + i * 0.5 for w in model.get_weights()]
        model.set_weights(weights)
        arrays.append(weights)
        paths.append(str(tmp_path / f"epoch_{i}.weights.h5"))
        model.save_weights(paths[-1])
    assert run_dir.average_checkpoints(model, paths) is model
    for got, *each in zip(model.get_weights(), *arrays):
        np.testing.assert_allclose(got, np.mean(each, axis=0), atol=1e-6)
    run_dir.average_checkpoints(model, paths[:1])
    for got, want in zip(model.get_weights(), arrays[0]):
        np.testing.assert_array_equal(got, want)
    for bad in ([], paths[0]):
        with pytest.raises(ValueError, match="paths"):
            run_dir.average_checkpoints(model, bad)


def test_store_float16_halves_the_file_and_loads_the_rounded_weights(tmp_path):
    import h5py

    from keras_attention.training import run_dir

    model = _model()
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    weights = model.get_weights()
    assert run_dir.store_float16(path) == sum(
        w.dtype == np.float32 for w in weights)
    with h5py.File(path) as f:
        stored = []
        f.visititems(lambda _, item: stored.append(item[()].dtype)
                     if isinstance(item, h5py.Dataset) else None)
    assert sorted(map(str, stored)) == sorted(
        "float16" if w.dtype == np.float32 else str(w.dtype) for w in weights)
    assert os.listdir(tmp_path) == ["model.weights.h5"]
    loaded = _model()
    loaded.load_weights(path)
    for got, want in zip(loaded.get_weights(), weights):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want.astype(np.float16).astype(want.dtype))
    assert run_dir.store_float16(path) == 0  # float16 already


@pytest.mark.parametrize(
    "strategy,options",
    [("greedy", {}), ("beam", {"beam_width": 3}),
     ("nbest", {"n_best": 2, "beam_width": 3}),
     ("sample", {"seed": 1, "top_k": 3})],
)
def test_generate(strategy, options):
    keras.utils.set_random_seed(3)
    model = _model(model="stepwise", score="additive")
    out = model.generate(SOURCE, max_length=5, strategy=strategy, **options)
    tokens = ops.convert_to_numpy(out["tokens"])
    assert tokens.shape[0] == 2 and tokens.shape[-1] <= 5
    if strategy == "greedy":
        # The first token is the argmax of the first step, [PAD] and
        # [START] excluded (generate's default `forbidden_tokens`).
        log_probs, _, _ = model.step(
            np.full((2,), 2, "int32"), model.encode(SOURCE)
        )
        log_probs = ops.convert_to_numpy(log_probs).copy()
        log_probs[:, [0, 2]] = -np.inf
        np.testing.assert_array_equal(tokens[:, 0], np.argmax(log_probs, -1))


def test_generate_rejects_an_unknown_strategy():
    with pytest.raises(ValueError, match="strategy"):
        _model().generate(SOURCE, strategy="viterbi")


def test_align_reads_the_alignment_output():
    model = _model(alignment_head="lexical")
    weights = ops.convert_to_numpy(model.align(SOURCE, TARGET_IN))
    assert weights.shape == (2, 3, 4)
    np.testing.assert_allclose(weights.sum(-1)[TARGET_IN != 0], 1.0, atol=1e-5)


@pytest.mark.parametrize("name,value", [
    ("source_vocab_size", None), ("target_vocab_size", 0),
])
def test_vocabulary_sizes_are_checked(name, value):
    with pytest.raises(ValueError, match=name):
        _model(**{name: value})
