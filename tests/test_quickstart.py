"""examples/quickstart.py runs end to end on tiny data."""

import ast
import json
import pathlib

import pytest

pytest.importorskip("matplotlib")

from examples import quickstart  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_tiny_run_trains_decodes_and_plots(tmp_path):
    summary = quickstart.main(["--tiny", "--out", str(tmp_path)])

    png = tmp_path / "attention.png"
    assert png.stat().st_size > 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    losses = summary["loss"]
    assert len(losses) == 3 and losses[-1] < losses[0]
    # Greedy decoding ran on new strings and gave letters (or nothing).
    assert len(summary["decoded"]) == 5
    for source, output in summary["decoded"].items():
        assert set(source) <= set(quickstart.LETTERS)
        assert set(output) <= set(quickstart.LETTERS)
    assert 0.0 <= summary["exact_match"] <= 1.0


def test_data_is_the_reversal():
    texts, source, target_in, target_out = quickstart.make_data(4, 6, seed=3)
    for text, src, t_in, t_out in zip(texts, source, target_in, target_out):
        n = len(text)
        assert quickstart.decode_ids(src) == text
        assert t_in[0] == quickstart.START
        assert quickstart.decode_ids(t_in) == text[::-1]
        assert quickstart.decode_ids(t_out) == text[::-1]
        assert t_out[n] == quickstart.END and not t_out[n + 1:].any()


def test_imports_only_public_names():
    """The example uses `keras_attention.X` for public X, nothing private."""
    import keras_attention

    tree = ast.parse((ROOT / "examples" / "quickstart.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom):
                modules = [node.module]
            for module in modules:
                assert not module.startswith("keras_attention.") and (
                    module != "examples"
                ), module
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "keras_attention"
        ):
            assert node.attr in keras_attention.__all__, node.attr
