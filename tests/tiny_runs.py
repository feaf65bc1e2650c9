"""Tiny trained and exported runs of the examples, shared by the tests.

Each run is trained (and exported) once per test session: in the folder
that `tests/conftest.py` makes for the session (`SHARED_ENV`, removed at
its end), under a file lock, so that the pytest-xdist workers (separate
processes) share one copy; without that folder (or without `fcntl`), once
per process, in a temporary folder removed at exit. Tests read these runs
and must not change them: a test that changes a run works on a copy
(`shutil.copytree`).
"""

import atexit
import functools
import json
import os
import shutil
import tempfile

try:
    import fcntl
except ImportError:  # Windows: one copy per process.
    fcntl = None

# The environment variable that names the session's shared folder.
SHARED_ENV = "KERAS_ATTENTION_TEST_RUNS"

# Longest translation of the shared NMT export, in tokens (a date needs
# about ten): short loops keep the decoding tests fast.
NMT_MAX_OUTPUT_TOKENS = 16

G2P_WORDS = 400


def _folder(prefix):
    root = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def shared_folder(name, build):
    """The folder `name`, made by `build(folder)` once per session (see the
    module's docstring); `build` runs with the session's lock held."""
    root = os.environ.get(SHARED_ENV)
    if not root or fcntl is None:
        folder = _folder(f"tiny-{name}-")
        build(folder)
        return folder
    folder = os.path.join(root, name)
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not os.path.exists(folder + ".done"):
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(folder)
                build(folder)
                open(folder + ".done", "w").close()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


def _history(run_dir):
    with open(os.path.join(run_dir, "history.json")) as f:
        return json.load(f)


def nmt_configs(seed=0):
    """The NMT example on 300 dates, 8 units, one epoch (seconds)."""
    from examples.nmt import config as config_lib

    return (
        config_lib.DataConfig(
            num_dates=300, validation_fraction=0.1, test_fraction=0.1
        ),
        config_lib.TextConfig(source_vocab_size=300, target_vocab_size=300),
        config_lib.ModelConfig(embedding_dim=8, units=8),
        config_lib.TrainConfig(epochs=1, batch_size=32, verbose=0, seed=seed),
    )


@functools.lru_cache(maxsize=None)
def nmt_run(seed=0):
    """`(run_dir, history)` of the tiny NMT run with weight seed `seed`."""
    from examples.nmt import train as train_lib

    def build(run_dir):
        train_lib.train(run_dir, *nmt_configs(seed), log=lambda *_: None)

    run_dir = shared_folder(f"nmt-{seed}", build)
    return run_dir, _history(run_dir)


@functools.lru_cache(maxsize=None)
def nmt_export():
    """The SavedModel of `nmt_run()`, exported to its `RUN/export` with
    `NMT_MAX_OUTPUT_TOKENS` (the commands that take the run use it), plain
    (`xla=None`): the export the XLA-compiled ones are compared against
    (tests/test_serving_compilation.py tests the default, `xla="auto"`)."""
    from keras_attention.translator import export_run

    run_dir = nmt_run()[0]

    def build(_):
        export_run(run_dir, max_output_tokens=NMT_MAX_OUTPUT_TOKENS, xla=None)

    shared_folder("nmt-0-export", build)
    return os.path.join(run_dir, "export")


@functools.lru_cache(maxsize=None)
def nmt_xla_export():
    """The SavedModel of `nmt_run()` with the whole decoding one XLA
    function (`--xla decode`) and `NMT_MAX_OUTPUT_TOKENS`, exported by the
    NMT example's `export` command (tests/test_nmt_decoders.py compares it
    with `nmt_export()`; tests/test_cli_speed.py runs it)."""
    from examples.nmt import cli

    run_dir = nmt_run()[0]

    def build(folder):
        status = cli.main([
            "export", "--run", run_dir, "--out",
            os.path.join(folder, "export"),
            "--max-output-tokens", str(NMT_MAX_OUTPUT_TOKENS),
            "--xla", "decode",
        ])
        if status:
            raise RuntimeError(f"export --xla decode: exit status {status}")

    return os.path.join(shared_folder("nmt-0-xla", build), "export")


@functools.lru_cache(maxsize=None)
def nmt_ensemble_export():
    """The SavedModel of the ensemble of `nmt_run(0)` and `nmt_run(1)`
    (plain, `NMT_MAX_OUTPUT_TOKENS`), exported by the NMT example's
    `export --ensemble` (tests/test_nmt_decoders.py checks its
    probabilities; tests/test_portable_export.py compares the LiteRT
    ensemble with it)."""
    from examples.nmt import cli

    first, second = nmt_run(0)[0], nmt_run(1)[0]

    def build(folder):
        status = cli.main([
            "export", "--run", first, "--ensemble", second, "--out",
            os.path.join(folder, "export"),
            "--max-output-tokens", str(NMT_MAX_OUTPUT_TOKENS),
        ])
        if status:
            raise RuntimeError(f"export --ensemble: exit status {status}")

    return os.path.join(shared_folder("nmt-ensemble", build), "export")


def g2p_configs(score="additive"):
    """The G2P example on 400 words, 16 units, one epoch, with `score`."""
    from examples.g2p import config as config_lib

    configs = (
        config_lib.G2PDataConfig(
            max_words=G2P_WORDS, validation_fraction=0.1, test_fraction=0.1
        ),
        config_lib.ModelConfig(),
        config_lib.TrainConfig(),
    )
    settings = config_lib.merge(
        config_lib.G2P_SETTINGS,
        config_lib.QUICK_DEMO_SETTINGS,
        {
            "data": {"max_words": G2P_WORDS},
            "model": {"score": score},
            "train": {"verbose": 0, "batch_size": 32},
        },
    )
    return config_lib.replace(configs, settings)


@functools.lru_cache(maxsize=None)
def g2p_run(score="additive"):
    """`(run_dir, history)` of the tiny G2P run with `score`, exported to
    `RUN/export`."""
    from examples.g2p import train as train_lib

    def build(run_dir):
        train_lib.train(run_dir, *g2p_configs(score), log=lambda *_: 0)
        train_lib.export_run(run_dir)

    run_dir = shared_folder(f"g2p-{score}", build)
    return run_dir, _history(run_dir)
