"""Run directories are transactional (`keras_attention.training.run_dir`):
a finished run is not trained over without `overwrite`, an interrupted run
is not described by other settings, run.json, the weights and the history
are written through a temporary name, and damaged files (a truncated
run.json, a truncated backup) are one `ValueError` naming the file and
what to do. The recipes' command lines turn those into one `error:` line
(exit 2), and Ctrl-C into one line (exit 130).
"""

import json
import os

import keras
import numpy as np
import pytest

from keras_attention.recipes import parser as recipe_parser
from keras_attention.training import loop
from keras_attention.training import run_dir as run_lib

CONFIG = {"model": {"units": 8, "embedding_dim": 4}, "train": {"epochs": 2}}


def _finished_run(path):
    run_lib.claim(str(path))
    run_lib.save_run_config(str(path), CONFIG)
    for name in (run_lib.WEIGHTS, run_lib.HISTORY, run_lib.METRICS):
        (path / name).write_text("old")
    (path / run_lib.EXPORT).mkdir()
    (path / run_lib.EXPORT / "saved_model.pb").write_text("old")
    (path / "notes.txt").write_text("mine")
    return path


def _interrupted_run(path):
    run_lib.claim(str(path))
    run_lib.save_run_config(str(path), CONFIG)
    (path / run_lib.BACKUP).mkdir()
    (path / run_lib.BACKUP / "latest.weights.h5").write_text("state")
    return path


def test_a_finished_run_is_refused_without_overwrite(tmp_path):
    run = _finished_run(tmp_path / "run")
    assert run_lib.is_finished(str(run)) and not run_lib.is_interrupted(str(run))
    with pytest.raises(ValueError, match="finished run .*overwrite"):
        run_lib.claim(str(run))
    assert (run / run_lib.WEIGHTS).read_text() == "old"
    assert (run / run_lib.EXPORT / "saved_model.pb").exists()


def test_overwrite_removes_what_the_old_run_wrote_and_nothing_else(tmp_path):
    run = _finished_run(tmp_path / "run")
    run_lib.claim(str(run), overwrite=True)
    assert sorted(os.listdir(run)) == ["notes.txt"]


def test_a_file_is_not_a_run_directory(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        run_lib.claim(str(path))


def test_an_interrupted_run_resumes_with_its_own_settings(tmp_path):
    run = _interrupted_run(tmp_path / "run")
    assert run_lib.is_interrupted(str(run))
    run_lib.claim(str(run))  # not refused: it resumes
    # The same settings (tuples as JSON lists): accepted.
    run_lib.save_run_config(str(run), json.loads(json.dumps(CONFIG)))


def test_an_interrupted_run_keeps_its_run_json_when_settings_differ(tmp_path):
    run = _interrupted_run(tmp_path / "run")
    before = (run / run_lib.RUN_CONFIG).read_bytes()
    other = {"model": {"units": 16, "embedding_dim": 4}, "train": {"epochs": 2}}
    with pytest.raises(ValueError, match=r"model\.units: 8 -> 16.*unchanged"):
        run_lib.save_run_config(str(run), other)
    assert (run / run_lib.RUN_CONFIG).read_bytes() == before
    # Overwriting is the way out.
    run_lib.claim(str(run), overwrite=True)
    run_lib.save_run_config(str(run), other)
    assert run_lib.load_run_config(str(run))["model"]["units"] == 16


def test_a_failed_write_leaves_the_old_file_and_no_partial_file(tmp_path):
    path = tmp_path / "model.weights.h5"
    path.write_text("old")

    def write(partial):
        with open(partial, "w") as f:
            f.write("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_lib.write_atomically(str(path), write)
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["model.weights.h5"]
    # The temporary name keeps Keras' `.weights.h5` ending.
    assert run_lib.temporary_path(str(path)).endswith(".weights.h5")


@pytest.mark.parametrize(
    "text, match",
    [('{"model": {"units": 8', "not valid JSON"), ("[1, 2]", "JSON list")],
)
def test_a_damaged_run_json_is_named(tmp_path, text, match):
    (tmp_path / run_lib.RUN_CONFIG).write_text(text)
    with pytest.raises(ValueError, match=match) as info:
        run_lib.load_run_config(str(tmp_path))
    assert str(tmp_path / run_lib.RUN_CONFIG) in str(info.value)


def test_run_json_with_a_byte_order_mark_loads(tmp_path):
    (tmp_path / run_lib.RUN_CONFIG).write_bytes(
        b"\xef\xbb\xbf" + json.dumps(CONFIG).encode()
    )
    assert run_lib.load_run_config(str(tmp_path)) == CONFIG


def _tiny_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    return model


def test_a_truncated_backup_is_one_error_naming_it(tmp_path):
    backup = tmp_path / run_lib.BACKUP
    x, y = np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")
    # A backup written by one epoch, then both of its files cut short.
    model = _tiny_model()
    model.fit(x, y, epochs=1, verbose=0, callbacks=[
        loop.RunBackup(str(backup), double_checkpoint=True,
                       delete_checkpoint=False),
    ])
    names = sorted(os.listdir(backup))
    assert "latest.weights.h5" in names
    for name in names:
        if name.endswith((".h5", ".bkp")) and "weights" in name:
            data = (backup / name).read_bytes()
            (backup / name).write_bytes(data[: len(data) // 3])
    with pytest.raises(ValueError, match="backup in .* does not load") as info:
        _tiny_model().fit(x, y, epochs=2, verbose=0, callbacks=[
            loop.RunBackup(str(backup), double_checkpoint=True),
        ])
    assert str(backup) in str(info.value)
    assert "\n" not in str(info.value)


def test_a_backup_of_other_sizes_is_one_error(tmp_path):
    backup = tmp_path / run_lib.BACKUP
    x, y = np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")
    _tiny_model().fit(x, y, epochs=1, verbose=0, callbacks=[
        loop.RunBackup(str(backup), delete_checkpoint=False),
    ])
    wider = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5)])
    wider.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="other settings"):
        wider.fit(x, np.zeros((4, 5), "float32"), epochs=2, verbose=0,
                  callbacks=[loop.RunBackup(str(backup))])


def _parser(func):
    parser, sub = recipe_parser.new_parser("recipe", "a test recipe")
    p = sub.add_parser("train")
    p.add_argument("--out", default="runs/x")
    p.set_defaults(func=func)
    return parser


def test_ctrl_c_is_one_line_and_status_130(capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    assert recipe_parser.run_main(_parser(interrupted), ["train"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "recipe train: interrupted" in err and "runs/x" in err


@pytest.mark.parametrize(
    "error",
    [ValueError("bad\nvalue"), OSError(2, "No such file", "x.tsv")],
)
def test_user_errors_are_one_line_and_status_2(capsys, monkeypatch, error):
    monkeypatch.delenv("NMT_DEBUG", raising=False)

    def failing(args):
        raise error

    assert recipe_parser.run_main(_parser(failing), ["train"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("recipe train: error: ") and err.count("\n") == 1


def test_the_nmt_recipe_refuses_a_finished_run(tmp_path, capsys):
    from examples.nmt import cli

    run = _finished_run(tmp_path / "run")
    status = cli.main(["train", "--out", str(run), "--epochs", "1"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "finished run" in err and "--overwrite" in err
    assert (run / run_lib.WEIGHTS).read_text() == "old"


def test_the_nmt_recipe_keeps_an_interrupted_run_of_other_settings(
    tmp_path, capsys
):
    from examples.nmt import cli

    run = _interrupted_run(tmp_path / "run")
    before = (run / run_lib.RUN_CONFIG).read_bytes()
    status = cli.main([
        "train", "--out", str(run), "--epochs", "1", "--num-dates", "200",
    ])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "interrupted run" in err and err.count("\n") == 1
    assert (run / run_lib.RUN_CONFIG).read_bytes() == before


@pytest.fixture
def nmt_run_copy(tmp_path):
    """A copy of the tiny trained NMT run (without its export)."""
    import shutil

    from tests import tiny_runs

    copy = tmp_path / "run"
    shutil.copytree(
        tiny_runs.nmt_run(0)[0], copy,
        ignore=shutil.ignore_patterns(run_lib.EXPORT),
    )
    return copy


def _export_error(run, capsys):
    from examples.nmt import cli

    status = cli.main(["export", "--run", str(run), "--out", str(run / "x")])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (run / "x").exists()
    return err


def test_export_of_truncated_weights_is_one_error_naming_the_file(
    nmt_run_copy, capsys
):
    weights = nmt_run_copy / run_lib.WEIGHTS
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    err = _export_error(nmt_run_copy, capsys)
    assert str(weights) in err and "damaged" in err


def test_export_of_edited_settings_names_the_setting(nmt_run_copy, capsys):
    path = nmt_run_copy / run_lib.RUN_CONFIG
    config = json.loads(path.read_text(encoding="utf-8"))
    config["model"]["units"] = 24
    path.write_text(json.dumps(config), encoding="utf-8")
    err = _export_error(nmt_run_copy, capsys)
    assert "does not fit the run's model" in err and "units=24" in err


def test_export_of_a_run_without_weights_says_to_resume(nmt_run_copy, capsys):
    (nmt_run_copy / run_lib.WEIGHTS).unlink()
    err = _export_error(nmt_run_copy, capsys)
    assert "has not finished training" in err
