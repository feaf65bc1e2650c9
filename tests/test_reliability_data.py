"""Bad training data gives a clear message, never a traceback.

Per-line problems (malformed lines, empty sides) are skipped and counted by
reason; problems that stop the run (a missing file, a directory, a corrupt
`.gz`, a line that is not UTF-8, UTF-16 text, NUL bytes, nothing usable
left) are an error that names the file (and the line), which the command
line prints as one `error:` line with exit status 2.
"""

import gzip
import os
import re
import subprocess
import sys

import pytest

from examples.nmt import data
from keras_attention.cli.errors import CliError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _broken_gzip():
    """A `.gz` file cut at three quarters, then garbage."""
    text = "".join(f"hallo {i}\thello {i}\n" for i in range(20000)).encode()
    payload = gzip.compress(text)
    return payload[: len(payload) * 3 // 4] + b"\xff" * 64


def _write(path, payload):
    path.write_bytes(payload)
    return str(path)


def test_malformed_lines_are_counted_by_reason(tmp_path):
    path = _write(
        tmp_path / "mixed.tsv",
        b"hallo welt\thello world\n"  # good
        b"one column only\n"  # wrong number of columns
        b"a\tb\tc\n"  # wrong number of columns (TSV has two)
        b"\n"  # empty line
        b"   \t  \n"  # whitespace only
        b"\tonly target\n"  # empty source
        b"danke\tthanks\r\n",  # good, Windows line end
    )
    corpus = data.load_corpus([path], data_format="tsv")
    assert corpus.pairs == [("hallo welt", "hello world"), ("danke", "thanks")]
    assert dict(corpus.reasons) == {
        "not 2-2 columns": 2,
        "empty line": 2,  # whitespace only, tab included
        "empty side": 1,
    }
    assert corpus.skipped == 5


@pytest.mark.parametrize(
    "line, message",
    [(b"caf\xe9\tcoffee\n", "not UTF-8"), (b"n\x00u\x00l\tnul\n", "NUL")],
    ids=["latin1", "nul"],
)
def test_undecodable_line_is_an_error_naming_the_line(tmp_path, line, message):
    path = _write(tmp_path / "bad.tsv", b"hallo\thello\n\n" + line)
    with pytest.raises(CliError, match=rf"bad\.tsv:3: {message}"):
        data.load_corpus([path], data_format="tsv")


@pytest.mark.parametrize(
    "encoding, message",
    [("utf-16", "not UTF-8"), ("utf-16-le", "NUL")],
)
def test_utf16_file_is_not_read_as_garbage(tmp_path, encoding, message):
    text = "bonjour\thello\nmerci\tthanks\n"
    path = _write(tmp_path / "utf16.tsv", text.encode(encoding))
    # Read as UTF-8, UTF-16 starts with the bytes ff fe (its byte-order
    # mark) or with NUL-interleaved text: refused at line 1.
    with pytest.raises(CliError, match=rf"utf16\.tsv:1: {message}.*UTF-8"):
        data.load_corpus([path], data_format="tsv")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: [str(d / "missing.tsv")], r"missing\.tsv"),
        (lambda d: [str(d)], r"--data .*: is a directory"),
        (
            lambda d: [_write(d / "a.de", b"hallo\n"), str(d / "missing.en")],
            r"--data .*missing\.en: no such file",
        ),
        (
            lambda d: [
                _write(d / "broken.tsv.gz", _broken_gzip())
            ],
            r"--data .*broken\.tsv\.gz: cannot read line \d+",
        ),
    ],
    ids=["missing", "directory", "missing_second_file", "corrupt_gzip"],
)
def test_fatal_file_errors_name_the_file(tmp_path, make, message):
    paths = make(tmp_path)
    with pytest.raises((ValueError, CliError), match=message):
        data.load_corpus(paths, data_format="tsv" if len(paths) == 1 else "auto")


def test_corrupt_gzip_line_is_after_the_good_lines(tmp_path):
    path = _write(tmp_path / "cut.tsv.gz", _broken_gzip())
    with pytest.raises(CliError, match=r"cannot read line (\d+)") as info:
        data.load_corpus([path], data_format="tsv")
    line = int(info.value.args[0].split("cannot read line ")[1].split()[0])
    # The lines before the damage were read: the error is past the first
    # half of the file.
    assert 10000 < line <= 20000


@pytest.mark.tf_only
@pytest.mark.slow
def test_cli_bad_data_prints_a_message_not_a_traceback(tmp_path):
    """One subprocess, the real command line, several bad corpora."""
    # Every line malformed: nothing to train on.
    bad = _write(
        tmp_path / "bad.tsv",
        b"only one column\n\n\tno source\n",
    )
    cases = [
        (
            ["--data", str(tmp_path / "missing.tsv")],
            r"No such data file.*missing\.tsv",
        ),
        (
            ["--data", bad, "--data-format", "tsv"],
            r"No usable sentence pairs in .*bad\.tsv.*3 lines skipped.*"
            r"empty side",
        ),
        (["--data", str(tmp_path)], r"is a directory"),
    ]
    # One Python process for all cases: call main() for each in a script, so
    # the test pays for importing TensorFlow once.
    script = tmp_path / "run_cli.py"
    script.write_text(
        "import sys\n"
        "from examples.nmt.cli import main\n"
        "for argv in sys.argv[1:]:\n"
        "    rc = main(argv.split('\\x1f'))\n"
        "    print('RC', rc, flush=True)\n"
        "    print('RC', rc, file=sys.stderr, flush=True)\n"
    )
    argvs = [
        "\x1f".join(["train", "--out", str(tmp_path / f"run{i}")] + args)
        for i, (args, _) in enumerate(cases)
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env.pop("NMT_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, str(script)] + argvs,
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    errors = [
        chunk.strip()
        for chunk in proc.stderr.split("RC 2")
        if "error:" in chunk
    ]
    assert proc.stdout.count("RC 2") == len(cases), proc.stdout + proc.stderr
    assert len(errors) == len(cases), proc.stderr
    for (_, pattern), error in zip(cases, errors):
        line = [x for x in error.splitlines() if "error:" in x][-1]
        assert line.startswith("python -m examples.nmt train: error: "), line
        assert re.search(pattern, line), line
    # The skipped lines are reported with their reasons before the error.
    assert "3 malformed lines skipped" in proc.stdout
