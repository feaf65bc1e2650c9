"""`Translator.from_run`: a run directory reloads with no other argument."""

import json
import os
import shutil

import pytest

from keras_attention.seq2seq import Translator
from keras_attention.training import run_dir
from keras_attention.translator import runs

COMPAT = os.path.join(os.path.dirname(__file__), "data", "compat")

pytestmark = pytest.mark.tf_only


def test_legacy_run_directory_gives_its_translations():
    """The committed run of the examples' code (a `"text"` section and
    WordPiece vocabulary files) translates as that code did."""
    with open(os.path.join(COMPAT, "expected.json")) as f:
        expected = json.load(f)
    translator = Translator.from_run(os.path.join(COMPAT, "nmt_run"))
    assert translator.translate(expected["sources"]) == expected["greedy"]
    assert translator.source_tokenizer.lower_case is True
    assert translator.target_tokenizer.lower_case is False


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(os.path.join(COMPAT, "nmt_run"), folder)
    return str(folder)


def test_tokenizers_section_round_trip(run):
    legacy = Translator.from_run(run)
    config = run_dir.load_run_config(run)
    config[runs.TOKENIZERS] = runs.tokenizers_section(
        legacy.source_tokenizer, legacy.target_tokenizer, 12, True
    )
    run_dir.save_run_config(run, config)
    for name in (run_dir.SOURCE_VOCAB, run_dir.TARGET_VOCAB):
        os.remove(os.path.join(run, name))
    translator = Translator.from_run(run)
    assert translator.max_tokens == 12
    sources = ["3 mars 1999", "lundi 4 juin 2001"]
    assert translator.translate(sources) == Translator.from_run(
        os.path.join(COMPAT, "nmt_run"), None
    ).translate(sources, max_length=11)


def edit(run, section, **values):
    config = run_dir.load_run_config(run)
    config[section].update(values)
    run_dir.save_run_config(run, config)


def test_broken_runs_are_named(run, tmp_path):
    with pytest.raises(ValueError, match="No run.json"):
        Translator.from_run(str(tmp_path))
    os.remove(os.path.join(run, run_dir.SOURCE_VOCAB))
    with pytest.raises(ValueError, match="names no tokenizers"):
        Translator.from_run(run)


def test_weights_problems_are_named(run):
    edit(run, "model", units=24)
    with pytest.raises(ValueError, match=r"does not fit the run's model.*units=24"):
        Translator.from_run(run)
    edit(run, "model", units=16, source_vocab_size=7)
    with pytest.raises(ValueError, match="source_vocab_size=7"):
        Translator.from_run(run)
    edit(run, "model", source_vocab_size=None)
    os.remove(os.path.join(run, run_dir.WEIGHTS))
    with pytest.raises(ValueError, match="No weights file"):
        Translator.from_run(run)
    with open(os.path.join(run, run_dir.WEIGHTS), "wb") as f:
        f.write(b"\x89HDF\r\n")  # a truncated file
    with pytest.raises(ValueError, match="damaged"):
        Translator.from_run(run)


def test_export_run_with_an_ensemble_of_itself_translates_as_the_run(
    run, tmp_path
):
    """`export_run(run, ensemble=[run])`: the members' averaged
    probabilities are the run's own, so the SavedModel translates as the
    run does; a member with other tokenizers is refused, naming it."""
    import tensorflow as tf

    from keras_attention.translator import export_run

    sources = ["3 mars 1999", "lundi 4 juin 2001"]
    expected = Translator.from_run(run).translate(sources)
    path = export_run(run, str(tmp_path / "export"), ensemble=[run])
    assert path == str(tmp_path / "export")
    signature = tf.saved_model.load(path).signatures["serving_default"]
    out = signature(tf.constant(sources))["translation"].numpy()
    assert [t.decode("utf-8") for t in out] == expected
    assert export_run(run) == run_dir.run_path(run, run_dir.EXPORT)

    other = str(tmp_path / "other")
    shutil.copytree(run, other)
    config = run_dir.load_run_config(other)
    config["text"]["source_lower_case"] = False
    run_dir.save_run_config(other, config)
    with pytest.raises(ValueError, match="same vocabularies") as info:
        export_run(run, str(tmp_path / "x"), ensemble=[run, other])
    assert repr(other) in str(info.value)
    translator = Translator.from_run(run)
    with pytest.raises(ValueError, match=r"differ: \['ensemble\[1\]'\]"):
        translator.export(
            str(tmp_path / "y"), ensemble=[translator, Translator.from_run(other)]
        )
