import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The tests compile thousands of tiny XLA programs (JAX compiles every eager
# op on its first call; the `jit_compile` tests): LLVM's optimisations cost
# more time than they save there (about a fifth of the JAX run). Results
# agree to rounding; benchmarks do not use this file.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")
# JAX's compilation cache on disk: tests of different files compile many
# identical programs (Keras ops with the same shapes), and a hit loads one
# instead of compiling it (the JAX run takes about a third less, even from
# an empty cache). A later run reuses it; it grows by about 70 MB per
# version of the code (delete the folder to free it). No size limit:
# JAX's eviction scans the folder at every write, which made the run twice
# as slow. Without eviction JAX takes no lock and writes an entry in
# place, so a worker could read another's half-written entry (a crash in
# the executable's deserialization): each pytest worker has a folder of
# its own. A JAX_COMPILATION_CACHE_DIR set outside this folder is kept.
_JAX_CACHE_ROOT = os.path.join(
    tempfile.gettempdir(), f"keras-seq2seq-attention-jax-{os.getuid()}"
)
if os.environ.get("JAX_COMPILATION_CACHE_DIR", _JAX_CACHE_ROOT).startswith(
    _JAX_CACHE_ROOT
):
    # Workers inherit the controller's environment: set it in each.
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(
        _JAX_CACHE_ROOT, os.environ.get("PYTEST_XDIST_WORKER", "main")
    )
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

import keras  # noqa: E402
import pytest  # noqa: E402

from tests import tiny_runs  # noqa: E402


def pytest_configure(config):
    """The session's folder of shared tiny runs (`tests/tiny_runs.py`),
    made by the controller before the xdist workers start (they inherit
    the environment) and removed at its end."""
    if hasattr(config, "workerinput") or os.environ.get(tiny_runs.SHARED_ENV):
        return
    folder = tempfile.mkdtemp(prefix="keras-attention-test-runs-")
    os.environ[tiny_runs.SHARED_ENV] = folder
    config._tiny_runs_folder = folder


def pytest_unconfigure(config):
    folder = getattr(config, "_tiny_runs_folder", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(tiny_runs.SHARED_ENV, None)


@pytest.fixture(autouse=True)
def _reset_policy():
    """Each test starts and ends with the float32 policy."""
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")


# The slowest test files, longest first (seconds of a contended run on 2
# cores, 2026-12-04: the examples' on TensorFlow with 3 workers, the backend
# files' on their slowest backend). The examples' and the backend files'
# tests run in separate pytest processes (Makefile), so each group is in
# its own order. `make test` runs pytest-xdist with `--dist loadfile
# --no-loadscope-reorder`, which hands files to the workers in collection
# order: longest first keeps them busy to the end. (xdist's own order, most
# tests first, left single-test files of 30-40 s for last, with one worker
# idle; a file listed too low starts last and runs alone.)
SLOWEST_FILES = (
    # The examples (TensorFlow).
    "test_nmt_decoders",  # 933 s
    "test_portable_export",  # 875
    "test_nmt_align",  # 657
    "test_g2p_attentions",  # 610
    "test_cli",  # 566
    "test_acceleration",  # 438
    "test_g2p_decoders",  # 401
    "test_cli_speed",  # 399
    "test_g2p_example",  # 376
    "test_distribute",  # 376
    "test_serving_compilation",  # 355
    "test_nmt_beam",  # 310
    "test_resume",  # 298 (one test)
    "test_cross_backend",  # 181 (one test)
    "test_evaluate_test_sets",
    "test_web_serve",
    "test_serving_fuzz",
    # The backend files (TensorFlow, JAX, PyTorch).
    "test_translator",  # 272 (PyTorch), 248 (JAX), 191 (TensorFlow)
    "test_distillation",  # 267 (JAX), 192 (TensorFlow)
    "test_rnn",  # 137 (JAX), 122 (TensorFlow)
    "test_alignment_loss",  # 130 (PyTorch)
    "test_layers",  # 128 (TensorFlow), 119 (JAX)
    "test_decoding_beam",  # 93
    "test_decoding",  # 91
    "test_rnn_fused_cells_scores",  # 65
    "test_rnn_lstm",  # 54
    "test_rnn_layers",  # 54
    "test_rnn_fused",  # 49
    "test_decoding_sampling",  # 48
    "test_seq2seq",  # 45
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    # A stable sort: the tests of a file keep their order.
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))
    if keras.backend.backend() == "tensorflow":
        return
    skip = pytest.mark.skip(reason="TensorFlow backend only")
    for item in items:
        if "tf_only" in item.keywords:
            item.add_marker(skip)


# Seconds of each test file (setup, call and teardown of its tests, summed
# in the controller over the xdist workers), printed at the end of the run:
# the measured order for `SLOWEST_FILES` and the place to trim CI first.
_FILE_SECONDS = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _FILE_SECONDS:
        return
    slowest = sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1])[:20]
    terminalreporter.write_sep("=", "slowest test files (seconds, all tests)")
    for path, seconds in slowest:
        terminalreporter.write_line(f"{seconds:8.1f}  {path}")


def _rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


@pytest.fixture(autouse=True, scope="module")
def _memory_log(request):
    """With KA_TEST_MEMLOG=FILE, logs each test module's resident memory
    after it ran (a tool for keeping the suite within CI's memory)."""
    yield
    path = os.environ.get("KA_TEST_MEMLOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()} {request.module.__name__} {_rss_mib()}\n")
