"""How a command line's process starts (`keras_attention.cli.launch`):
which commands run without Keras (`translate` and `evaluate` on a LiteRT
or ONNX model; the processes themselves are checked in
tests/test_portable_export.py), and the garbage collector of a command
line's process (seen from inside real processes)."""

import atexit
import gc
import os
import subprocess
import sys

import pytest

from keras_attention.cli import launch

# Seconds a subprocess may take (importing Keras and its backend).
TIMEOUT = 300
# Imported by Python at start-up from the PYTHONPATH: an exit handler
# registered before the package is imported, so it runs after the
# package's, and reports the collector as the process ends.
PROBE = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(
    f"probe: threshold {gc.get_threshold()[0]} frozen {gc.get_freeze_count() > 0}\\n"
))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["translate", "--model", "m.tflite", "hello"],
        ["translate", "--model=dir/M.TFLITE"],
        ["evaluate", "--model", "m.onnx", "--data", "pairs.tsv"],
        ["--verbose", "translate", "--beam-width", "3", "--model", "m.onnx"],
    ],
)
def test_portable_commands_run_without_keras(argv):
    assert launch.portable_command(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["translate", "--model", "saved_model_dir", "hello.tflite"],
        ["translate", "--model", "m.keras"],
        ["translate", "--model"],
        ["export", "--model", "run", "--out", "m.tflite"],
        ["serve", "--model", "m.tflite"],
        ["train", "--data", "m.onnx"],
    ],
)
def test_other_commands_import_keras(argv):
    assert not launch.portable_command(argv)


def _probe(tmp_path, argv, **env):
    (tmp_path / "sitecustomize.py").write_text(PROBE)
    path = os.pathsep.join(
        p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p
    )
    result = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True,
        timeout=TIMEOUT, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=path, TF_CPP_MIN_LOG_LEVEL="3", **env),
    )
    assert result.returncode == 0, result.stderr
    lines = [l for l in result.stderr.splitlines() if l.startswith("probe:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_the_command_lines_process_collects_less_often_and_freezes_at_exit(
    tmp_path,
):
    line = _probe(tmp_path, ["-m", "keras_attention", "--help"])
    assert line == f"probe: threshold {launch.PROCESS_GC_THRESHOLD} frozen True"


def test_a_recipes_command_line_is_set_the_same(tmp_path):
    line = _probe(
        tmp_path, ["-c", "import keras_attention"],
        **{launch.QUIET_START_VARIABLE: "1"},
    )
    assert line == f"probe: threshold {launch.PROCESS_GC_THRESHOLD} frozen True"


def test_importing_the_package_leaves_the_collector_as_it_is(tmp_path):
    default = _probe(tmp_path, ["-c", "pass"])
    assert default.endswith("frozen False")
    assert _probe(tmp_path, ["-c", "import keras_attention"]) == default


def test_only_a_command_lines_process_is_set(monkeypatch):
    before = gc.get_threshold()
    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-c", "pass"])
    monkeypatch.delenv(launch.QUIET_START_VARIABLE, raising=False)
    launch.collect_for_one_command()
    assert gc.get_threshold() == before
    monkeypatch.setattr(sys, "argv", ["/usr/bin/" + launch.SCRIPT, "--help"])
    try:
        launch.collect_for_one_command()
        assert gc.get_threshold() == (launch.PROCESS_GC_THRESHOLD, *before[1:])
    finally:
        gc.set_threshold(*before)
        atexit.unregister(gc.freeze)
