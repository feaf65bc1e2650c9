"""The arguments of `keras_attention.seq2seq.Seq2Seq`: every one checked
before a layer is made, by `Seq2Seq.check_arguments` (which the examples'
`ModelConfig` shares), the dtype policy kept by `get_config`, and the
registered names of what `.keras` files of the model carry."""

import inspect
import json
import math
import os
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

from keras_attention.checks import ArgumentTypeError
from keras_attention.seq2seq import FusedAdam
from keras_attention.seq2seq import MaskedAccuracy
from keras_attention.seq2seq import MaskedLoss
from keras_attention.seq2seq import MaskedMean
from keras_attention.seq2seq import Seq2Seq
from keras_attention.seq2seq import layers as layers_lib
from keras_attention.seq2seq import seq2seq as seq2seq_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = np.array([[5, 6, 7, 3], [8, 5, 3, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5], [2, 6, 0]], "int32")
TARGET_OUT = np.array([[4, 5, 3], [6, 3, 0]], "int32")
TINY = {"source_vocab_size": 9, "target_vocab_size": 7, "embedding_dim": 4,
        "units": 4, "dropout": 0.0}
INT_ARGUMENTS = ("source_vocab_size", "target_vocab_size", "embedding_dim",
                 "units", "encoder_layers", "decoder_layers",
                 "attention_units")
FLOAT_ARGUMENTS = ("dropout", "bridge_dropout")
BOOL_ARGUMENTS = ("bidirectional", "bridge", "attend_source_end")


def _model(**kwargs):
    return Seq2Seq(**{**TINY, **kwargs})


def _inputs():
    return {"source_ids": SOURCE, "target_in": TARGET_IN}


def _refused(name, value, error=ValueError, **kwargs):
    """The constructor refuses `name=value` with a message that names the
    argument and the received value."""
    with pytest.raises(error) as info:
        _model(**{name: value, **kwargs})
    message = str(info.value)
    assert f"`{name}" in message, message
    assert "Received" in message, message
    return message


# ----------------------------------------------------------------------
# The defects: each refused now, naming the argument.
@pytest.mark.parametrize("name,value", [
    ("score", "foo"),  # built additive attention
    ("score", "Dot"),
    ("cell", "lstn"),  # built a GRU
    ("alignment_head", "lexicon"),  # built a guided head
    ("attention_keys", "embeddings"),  # took the encoder states
    ("attention_values", "embeddings"),
    ("model", "transformer"),  # built the step-wise decoder
    ("projection_dtype", "bfloat16"),
])
def test_unknown_choices_are_refused(name, value):
    message = _refused(name, value)
    assert repr(value) in message and "must be one of" in message


@pytest.mark.parametrize("name", ["attention_keys", "attention_values"])
def test_embedding_attention_inputs_are_luong_only(name):
    # The step-wise decoder ignored them.
    message = _refused(name, "embedding", model="stepwise")
    assert "model='luong'" in message and "model='stepwise'" in message


@pytest.mark.parametrize("score", seq2seq_lib.STATEFUL_SCORES)
def test_stateful_scores_need_the_stepwise_decoder(score):
    message = _refused("score", score, model="luong")
    assert "model='stepwise'" in message and "model='luong'" in message
    assert _model(score=score, model="stepwise").score == score


def test_dot_score_over_embedding_keys_needs_their_size():
    # The dot attention raised, naming its own `query` and `key`.
    with pytest.raises(ValueError, match="embedding_dim=4, units=4"):
        _model(score="dot", attention_keys="embedding")
    _model(score="dot", attention_keys="embedding", embedding_dim=8)


def test_both_attention_inputs_embedding_need_the_bridge():
    with pytest.raises(ValueError, match="encoder would be unused"):
        _model(attention_keys="embedding", attention_values="embedding",
               bridge=False)


@pytest.mark.parametrize("name,value,error", [
    ("decoder_layers", 0, ValueError),  # no decoder, or an IndexError
    ("encoder_layers", 0, ValueError),
    ("embedding_dim", 0, ValueError),
    ("attention_units", 0, ValueError),
    ("units", "8", ArgumentTypeError),
    ("units", 8.0, ArgumentTypeError),
    ("units", True, ArgumentTypeError),
    ("units", np.float32(8), ArgumentTypeError),
    ("target_vocab_size", 3, ValueError),
    ("source_vocab_size", 3, ValueError),
    ("source_vocab_size", None, ArgumentTypeError),
])
def test_integer_arguments_are_checked(name, value, error):
    _refused(name, value, error)


def test_vocabulary_sizes_hold_the_reserved_tokens():
    message = _refused("target_vocab_size", 3)
    assert "[PAD] [UNK] [START] [END]" in message
    model = _model(source_vocab_size=4, target_vocab_size=4)
    out = model({"source_ids": np.minimum(SOURCE, 3),
                 "target_in": np.minimum(TARGET_IN, 3)})
    assert tuple(out["logits"].shape) == (2, 3, 4)


@pytest.mark.parametrize("name", FLOAT_ARGUMENTS)
@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, float("nan"),
                                   float("inf")])
def test_rates_are_in_zero_one(name, value):
    _refused(name, value)


@pytest.mark.parametrize("name", FLOAT_ARGUMENTS)
@pytest.mark.parametrize("value", ["0.1", None, True])
def test_rates_are_numbers(name, value):
    _refused(name, value, ArgumentTypeError)


@pytest.mark.parametrize("name", BOOL_ARGUMENTS)
def test_switches_are_bools(name):
    _refused(name, "False", ArgumentTypeError)
    _refused(name, 0, ArgumentTypeError)


def test_numpy_integers_are_python_ints_in_the_config():
    # `np.int64(9)` as a vocabulary size was refused.
    model = _model(
        source_vocab_size=np.int64(9), target_vocab_size=np.int32(7),
        units=np.int64(4), embedding_dim=np.int16(4),
        decoder_layers=np.int64(1), attention_units=np.int64(3),
        dropout=np.float32(0.25), bidirectional=np.bool_(False),
        unattended_source_ids=np.array([6, 8]),
    )
    config = model.get_config()
    for name in INT_ARGUMENTS:
        assert type(config[name]) is int, name
    assert type(config["dropout"]) is float and config["dropout"] == 0.25
    assert config["bidirectional"] is False
    assert config["unattended_source_ids"] == [6, 8]
    assert all(type(i) is int for i in config["unattended_source_ids"])
    json.dumps(config)
    assert tuple(model(_inputs())["logits"].shape) == (2, 3, 7)


@pytest.mark.parametrize("value,error", [
    ((9,), ValueError),  # source_vocab_size is 9: ids 0..8
    ((-1,), ValueError),
    ((1.5,), ArgumentTypeError),
    ((True,), ArgumentTypeError),
    (("5",), ArgumentTypeError),
    ("56", ArgumentTypeError),
    (5, ArgumentTypeError),
])
def test_unattended_source_ids_are_source_ids(value, error):
    _refused("unattended_source_ids", value, error)


def test_arguments_are_checked_before_any_layer(monkeypatch):
    def no_layer(*args, **kwargs):
        raise AssertionError("a layer was made before the checks")

    monkeypatch.setattr(keras.layers, "Embedding", no_layer)
    with pytest.raises(ValueError, match="decoder_layers"):
        _model(decoder_layers=0)
    with pytest.raises(ValueError, match="score"):
        _model(score="foo")


def test_check_arguments_fills_the_defaults_of_the_signature():
    parameters = inspect.signature(Seq2Seq.__init__).parameters
    checked = Seq2Seq.check_arguments()
    assert "source_vocab_size" not in checked  # no default: not checked
    for name, value in checked.items():
        assert value == parameters[name].default, name
    assert list(checked) == [
        n for n in parameters if n not in ("self", "kwargs")
    ][2:]
    assert Seq2Seq.check_arguments(units=np.int64(3))["units"] == 3
    assert Seq2Seq.check_arguments(
        source_vocab_size=9, unattended_source_ids=[8]
    )["unattended_source_ids"] == (8,)
    with pytest.raises(TypeError, match="unitz"):
        Seq2Seq.check_arguments(unitz=3)


def test_make_attention_and_heads_refuse_unknown_names():
    # No silent fallback below the constructor either.
    for score in seq2seq_lib.SCORES:
        assert layers_lib.make_attention(score, 4) is not None
    with pytest.raises(ValueError, match="score='foo'"):
        layers_lib.make_attention("foo", 4)
    with pytest.raises(ValueError, match="alignment_head='lexicon'"):
        layers_lib.make_head_layers("lexicon", 4, 7)


# ----------------------------------------------------------------------
# The examples' `ModelConfig`: Seq2Seq's defaults and checks.
def test_model_config_takes_the_defaults_and_checks_of_seq2seq():
    from keras_attention.training import settings as config_lib

    parameters = inspect.signature(Seq2Seq.__init__).parameters
    config = config_lib.ModelConfig()
    for name, value in Seq2Seq.check_arguments().items():
        assert getattr(config, name) == parameters[name].default == value
    assert config_lib.MODEL_TYPES == seq2seq_lib.MODELS
    assert config_lib.SCORES == seq2seq_lib.SCORES
    assert config_lib.ALIGNMENT_HEADS == seq2seq_lib.ALIGNMENT_HEADS
    for kwargs, match in (
        ({"cell": "lstn"}, "cell"),
        ({"decoder_layers": 0}, "decoder_layers"),
        ({"target_vocab_size": 3}, "target_vocab_size"),
        ({"source_vocab_size": 9, "unattended_source_ids": (9,)},
         "unattended_source_ids"),
        ({"dropout": float("nan")}, "dropout"),
    ):
        with pytest.raises(ValueError, match=match):
            config_lib.ModelConfig(**kwargs)
    config = config_lib.ModelConfig(units=np.int64(3),
                                    unattended_source_ids=[5])
    assert type(config.units) is int and config.unattended_source_ids == (5,)


# ----------------------------------------------------------------------
# Property tests: values outside an argument's domain are refused, naming
# it; valid draws build.
def _bad_ints(low):
    return st.one_of(
        st.integers(max_value=low - 1),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.text(max_size=3),
        st.integers(low, 64).map(float),  # 8.0 is not an integer
        st.integers(low, 64).map(str),
    )


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_out_of_domain_integers_are_refused(data):
    name = data.draw(st.sampled_from(INT_ARGUMENTS))
    low = 4 if name.endswith("vocab_size") else 1
    value = data.draw(_bad_ints(low))
    with pytest.raises((ValueError, TypeError), match=f"`{name}`"):
        _model(**{name: value})


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_out_of_domain_rates_are_refused(data):
    name = data.draw(st.sampled_from(FLOAT_ARGUMENTS))
    value = data.draw(st.one_of(
        st.floats(max_value=0.0, exclude_max=True),
        st.floats(min_value=1.0),
        st.just(math.nan),
        st.booleans(),
        st.text(max_size=3),
        st.none(),
    ))
    with pytest.raises((ValueError, TypeError), match=f"`{name}`"):
        _model(**{name: value})


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(("model", "score", "cell", "attention_keys",
                          "attention_values", "alignment_head",
                          "projection_dtype")),
    value=st.one_of(st.text(max_size=8), st.integers(), st.none(),
                    st.booleans()),
)
def test_unknown_choices_are_refused_property(name, value):
    valid = {
        "model": seq2seq_lib.MODELS, "score": seq2seq_lib.SCORES,
        "cell": seq2seq_lib.CELLS,
        "attention_keys": seq2seq_lib.ATTENTION_INPUTS,
        "attention_values": seq2seq_lib.ATTENTION_INPUTS,
        "alignment_head": seq2seq_lib.ALIGNMENT_HEADS,
        "projection_dtype": seq2seq_lib.PROJECTION_DTYPES,
    }[name]
    if value in valid:
        return
    with pytest.raises(ValueError, match=f"`{name}` must be one of"):
        _model(**{name: value})


@st.composite
def _valid_arguments(draw):
    model = draw(st.sampled_from(seq2seq_lib.MODELS))
    scores = seq2seq_lib.SCORES if model == "stepwise" else tuple(
        s for s in seq2seq_lib.SCORES if s not in seq2seq_lib.STATEFUL_SCORES
    )
    inputs = ("encoder",) if model == "stepwise" else (
        seq2seq_lib.ATTENTION_INPUTS
    )
    integer = st.one_of(st.integers(1, 2), st.integers(1, 2).map(np.int64))
    arguments = {
        "source_vocab_size": draw(st.integers(9, 12)),
        "target_vocab_size": draw(st.integers(7, 10)),
        "model": model,
        "score": draw(st.sampled_from(scores)),
        "cell": draw(st.sampled_from(seq2seq_lib.CELLS)),
        "bidirectional": draw(st.booleans()),
        "embedding_dim": draw(st.integers(2, 4)),
        "units": draw(st.integers(2, 4)),
        "encoder_layers": draw(integer),
        "decoder_layers": draw(integer),
        "dropout": draw(st.floats(0.0, 0.5)),
        "attention_units": draw(st.one_of(st.none(), st.integers(1, 4))),
        "bridge": draw(st.booleans()),
        "bridge_dropout": draw(st.sampled_from((0.0, 0.5))),
        "attend_source_end": draw(st.booleans()),
        "unattended_source_ids": tuple(draw(st.lists(
            st.integers(0, 8), max_size=2
        ))),
        "attention_keys": draw(st.sampled_from(inputs)),
        "attention_values": draw(st.sampled_from(inputs)),
        "alignment_head": draw(st.sampled_from(seq2seq_lib.ALIGNMENT_HEADS)),
        "projection_dtype": draw(
            st.sampled_from(seq2seq_lib.PROJECTION_DTYPES)
        ),
    }
    if arguments["attention_keys"] == arguments["attention_values"] == (
        "embedding"
    ):
        arguments["bridge"] = True  # else the encoder would be unused
    if arguments["score"] == "dot" and arguments["attention_keys"] == (
        "embedding"
    ):
        # The dot score compares keys and queries of one size.
        arguments["embedding_dim"] = arguments["units"] * (
            2 if arguments["bidirectional"] else 1
        )
    return arguments


@settings(max_examples=6, deadline=None)
@given(_valid_arguments())
def test_valid_arguments_build(arguments):
    model = Seq2Seq(**arguments)
    config = model.get_config()
    for name, value in arguments.items():
        expected = list(value) if isinstance(value, tuple) else value
        assert config[name] == expected, name
    out = model(_inputs(), training=False)
    assert tuple(out["logits"].shape) == (
        2, 3, arguments["target_vocab_size"]
    )


# ----------------------------------------------------------------------
# The dtype policy is part of the config.
@pytest.mark.parametrize("how", ["global", "argument"])
def test_dtype_policy_survives_a_keras_file(tmp_path, how):
    saved = keras.config.dtype_policy()
    try:
        keras.utils.set_random_seed(0)
        if how == "global":
            keras.config.set_dtype_policy("mixed_bfloat16")
            model = _model()
        else:
            model = _model(dtype="mixed_bfloat16")
        assert model.dtype_policy.name == "mixed_bfloat16"
        assert model.get_layer("source_embedding").dtype_policy.name == (
            "mixed_bfloat16"
        )
        want = ops.convert_to_numpy(model(_inputs())["logits"])
        path = str(tmp_path / "model.keras")
        model.save(path)
        keras.config.set_dtype_policy("float32")
        loaded = keras.saving.load_model(path, safe_mode=True)
        assert loaded.dtype_policy.name == "mixed_bfloat16"
        assert loaded.get_config()["dtype"] == model.get_config()["dtype"]
        got = ops.convert_to_numpy(loaded(_inputs())["logits"])
        np.testing.assert_array_equal(got, want)
        # The global policy is left as it was.
        assert keras.config.dtype_policy().name == "float32"
    finally:
        keras.config.set_dtype_policy(saved)


# ----------------------------------------------------------------------
# Registered names.
def test_new_files_carry_the_keras_attention_names(tmp_path):
    model = _model(alignment_head="lexical")
    model.compile(
        FusedAdam(1e-3),
        loss={"logits": MaskedLoss(), "lexical": MaskedMean()},
        metrics={"logits": [MaskedAccuracy()]},
    )
    model.fit(_inputs(), {"logits": TARGET_OUT, "lexical": TARGET_OUT},
              epochs=1, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        text = archive.read("config.json").decode("utf-8")
    for name in ("MaskedLoss", "MaskedMean", "MaskedAccuracy", "FusedAdam",
                 "Seq2Seq"):
        assert f'"keras_attention>{name}"' in text, name
    assert '"nmt>' not in text and "examples.nmt>" not in text
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded.optimizer, FusedAdam)


@pytest.mark.parametrize("old, rate", [("nmt>BridgeDropout", 0.3)])
def test_old_layer_names_still_load(old, rate):
    from keras_attention.seq2seq.layers import BridgeDropout

    assert keras.saving.get_registered_name(BridgeDropout) == (
        "keras_attention>BridgeDropout")
    layer = keras.saving.deserialize_keras_object(
        {"module": "nmt", "class_name": "BridgeDropout",
         "config": {"rate": rate, "seed": None, "name": "b"},
         "registered_name": old},
        safe_mode=True,
    )
    assert isinstance(layer, BridgeDropout) and layer.rate == rate


@pytest.mark.parametrize("cls,old,config", [
    (MaskedLoss, "nmt>MaskedLoss", {"label_smoothing": 0.1,
                                     "name": "masked_loss"}),
    (MaskedMean, "nmt>MaskedMean", {"name": "masked_mean"}),
    (MaskedAccuracy, "nmt>MaskedAccuracy", {"name": "masked_accuracy"}),
    (FusedAdam, "examples.nmt>FusedAdam", {"learning_rate": 0.01}),
])
def test_old_registered_names_still_load(cls, old, config):
    assert keras.saving.get_registered_name(cls) == (
        f"keras_attention>{cls.__name__}"
    )
    module = "examples.nmt" if cls is FusedAdam else "nmt"
    obj = keras.saving.deserialize_keras_object(
        {"module": module, "class_name": cls.__name__, "config": config,
         "registered_name": old},
        safe_mode=True,
    )
    assert type(obj) is cls
    if cls is MaskedLoss:
        assert obj.label_smoothing == 0.1


def test_import_keras_attention_alone_loads_a_seq2seq_file(tmp_path):
    path = str(tmp_path / "model.keras")
    _model().save(path)
    code = (
        "import sys, keras, keras_attention\n"
        "model = keras.models.load_model(sys.argv[1])\n"
        "print(type(model).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, path], capture_output=True, text=True,
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "Seq2Seq"
