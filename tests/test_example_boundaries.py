"""What the examples and the benchmarks may import, and the command lines'
fast, quiet `--help`.

The G2P example, the G2P benchmark, the library's benchmarks and the
library import nothing from the NMT example, and the library nothing from
the examples (read from their source: every `import`/`from` statement,
also inside functions). `--help` shows only the usage, with no backend
start-up line; the G2P command line offers no NMT-only flag.
"""

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INDEPENDENT = (
    "examples/g2p", "benchmarks/g2p",
    "benchmarks/peers_models.py", "benchmarks/layers.py", "keras_attention",
)
NMT_ONLY_FLAGS = (
    "--guided-alignment", "--alignment-head", "--attention-keys",
    "--attention-values",
)


def _python_files(path):
    path = os.path.join(ROOT, path)
    if path.endswith(".py"):
        return [path]
    return [
        os.path.join(d, f) for d, _, files in os.walk(path)
        for f in files if f.endswith(".py")
    ]


def imported_modules(path):
    """Every module an `import` or `from ... import` of the file names."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_imported_modules_sees_imports_inside_functions(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from examples.nmt import run\n")
    assert "examples.nmt.run" in imported_modules(str(path))


@pytest.mark.parametrize("where", INDEPENDENT)
def test_imports_nothing_from_the_nmt_example(where):
    files = _python_files(where)
    assert files, where
    for path in files:
        bad = sorted(
            m for m in imported_modules(path)
            if m == "examples.nmt" or m.startswith("examples.nmt.")
            or (where == "keras_attention" and m.startswith("examples"))
        )
        assert not bad, f"{os.path.relpath(path, ROOT)} imports {bad}"


def _help(example, command):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return subprocess.run(
        [sys.executable, "-m", f"examples.{example}", command, "--help"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )


@pytest.mark.parametrize("example", ["nmt", "g2p"])
def test_help_is_only_the_usage(example):
    done = _help(example, "train")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m examples.{example}")
    assert done.stderr == ""


def test_g2p_offers_no_nmt_only_flag():
    for command in ("train", "demo"):
        out = _help("g2p", command).stdout
        assert "--units" in out
        for flag in NMT_ONLY_FLAGS:
            assert flag not in out, (command, flag)


def test_every_command_answers_help_quietly():
    """`--help` of every command of both recipes, in one fresh interpreter
    started as `python -m examples.EXAMPLE` starts (the quiet-start
    variable set before anything imports Keras): only the usage, nothing on
    stderr."""
    code = (
        "import contextlib, io, os, sys\n"
        "os.environ['KERAS_ATTENTION_QUIET_START'] = '1'\n"
        "from examples.nmt import cli as nmt\n"
        "from examples.g2p import cli as g2p\n"
        "assert 'KERAS_ATTENTION_QUIET_START' not in os.environ\n"
        "for cli in (nmt, g2p):\n"
        "    parser = cli.build_parser()\n"
        "    commands = parser._subparsers._group_actions[0].choices\n"
        "    for name in commands:\n"
        "        out = io.StringIO()\n"
        "        with contextlib.redirect_stdout(out):\n"
        "            try:\n"
        "                parser.parse_args([name, '--help'])\n"
        "            except SystemExit:\n"
        "                pass\n"
        "        assert out.getvalue().startswith('usage:'), name\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        cwd=ROOT, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert done.stderr == ""


def test_a_user_set_log_level_shows_the_logs():
    """With `TF_CPP_MIN_LOG_LEVEL=0` set by the user, a recipe's quiet
    start leaves it (and TensorFlow's start-up lines) as they are."""
    code = (
        "import os\n"
        "os.environ['KERAS_ATTENTION_QUIET_START'] = '1'\n"
        "import keras_attention\n"
        "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="0")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        cwd=ROOT, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
