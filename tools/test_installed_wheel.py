"""The tests run against the installed wheel, not the source tree.

`tools/test_wheel.sh` copies this file beside the library's test files into a
folder outside the repository and runs them with the wheel's virtual
environment; these checks make the run fail if `keras_attention` came from
anywhere but that environment's site-packages.
"""

import importlib.metadata
import os
import pathlib
import sys
import sysconfig

import numpy as np

import keras_attention

DISTRIBUTION = "keras-seq2seq-attention"


def test_imported_from_the_installed_wheel():
    site_packages = pathlib.Path(sysconfig.get_paths()["purelib"]).resolve()
    package = pathlib.Path(keras_attention.__file__).resolve()
    assert package.is_relative_to(site_packages), package
    # The source tree's package and its folder are not on the path.
    source_root = os.environ.get("KERAS_ATTENTION_SOURCE_ROOT")
    if source_root:
        root = pathlib.Path(source_root).resolve()
        assert not package.is_relative_to(root / "keras_attention")
        on_path = {pathlib.Path(p or os.getcwd()).resolve() for p in sys.path}
        assert root not in on_path, sys.path
    assert sys.prefix != sys.base_prefix, "not in a virtual environment"


def test_not_an_editable_install():
    files = importlib.metadata.files(DISTRIBUTION)
    names = {file.as_posix() for file in files}
    for package in ("", "layers/", "rnn/", "ops/", "decoding/",
                    "alignment/", "visualization/"):
        assert f"keras_attention/{package}__init__.py" in names, package
    assert not any(name.endswith(".pth") for name in names), names


def test_version_from_the_metadata():
    assert keras_attention.__version__ == importlib.metadata.version(
        DISTRIBUTION
    )


def test_every_public_layer_runs():
    query = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    value = np.random.default_rng(1).normal(size=(2, 5, 4)).astype("float32")
    for layer in (
        keras_attention.DotAttention(),
        keras_attention.MultiplicativeAttention(),
        keras_attention.AdditiveAttention(units=4),
    ):
        context, weights = layer(query, value)
        assert tuple(context.shape) == (2, 3, 4)
        np.testing.assert_allclose(
            np.asarray(weights).sum(-1), 1.0, rtol=1e-5
        )
    output = keras_attention.AttentionalOutput(6)(context, query)
    assert tuple(output.shape) == (2, 3, 6)


def test_attention_rnn_runs():
    import keras

    rng = np.random.default_rng(2)
    targets = rng.normal(size=(2, 3, 4)).astype("float32")
    memory = rng.normal(size=(2, 5, 4)).astype("float32")
    decoder = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(4),
            keras_attention.AdditiveAttention(4),
            attention_layer_size=4,
        )
    )
    outputs, alignments = decoder(targets, memory)
    assert tuple(outputs.shape) == (2, 3, 4)
    assert tuple(alignments.shape) == (2, 3, 5)


def test_every_module_of_the_package_imports():
    """Every module the source tree has is in the wheel and imports (a
    module that needs an extra not installed here may say so, nothing
    else)."""
    import importlib
    import pkgutil

    names = [
        info.name
        for info in pkgutil.walk_packages(
            keras_attention.__path__, prefix="keras_attention."
        )
    ]
    source_root = os.environ.get("KERAS_ATTENTION_SOURCE_ROOT")
    if source_root:
        tree = pathlib.Path(source_root) / "keras_attention"
        expected = {
            ".".join(("keras_attention",) + path.relative_to(tree).with_suffix("").parts)
            .removesuffix(".__init__")
            for path in tree.rglob("*.py")
        }
        assert expected - {"keras_attention"} <= set(names), sorted(
            expected - set(names)
        )
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            missing = (error.name or "").split(".")[0]
            assert missing and missing != "keras_attention", (name, error)
