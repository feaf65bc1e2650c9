"""Which command lines run without Keras (`keras_attention.cli.launch`):
`translate` and `evaluate` on a LiteRT or ONNX model. The processes
themselves are checked in tests/test_portable_export.py."""

import pytest

from keras_attention.cli import launch


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
