"""The recipes' command lines (`python -m examples.nmt`, `python -m
examples.g2p`) with bad input files and bad flag combinations.

Every file is read by `keras_attention.cli.io` (a byte-order mark and CRLF
read, a line that is not UTF-8 named by its number), and every refusal is
one `PROG COMMAND: error: ...` line on stderr with exit status 2. The flag
checks run before any file is read or model loaded, so most cases need no
model; the two that score or translate use the shared tiny runs
(`tests.tiny_runs`).
"""

import argparse
import gzip
import io
import re
import sys

import pytest

from examples.g2p import cli as g2p_cli
from examples.g2p import data as g2p_data
from examples.g2p import text as g2p_text
from examples.nmt import cli as nmt_cli
from examples.nmt import data as nmt_data
from keras_attention.cli.errors import CliError
from keras_attention.recipes import parser as recipe_cli
from keras_attention.serving.limits import MAX_BEAM_WIDTH
from tests import tiny_runs

BOM = b"\xef\xbb\xbf"
PAIRS = [("bonjour", "hello"), ("merci", "thanks"), ("au revoir", "goodbye")]


def _one_error(capsys, prog="python -m examples.nmt"):
    """The one stderr line of a refused command (and nothing on stdout)."""
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prog} "), lines[0]
    assert ": error: " in lines[0], lines[0]
    return lines[0]


def _tsv(pairs, bom=True, crlf=False):
    end = "\r\n" if crlf else "\n"
    text = "".join(f"{s}\t{t}{end}" for s, t in pairs).encode("utf-8")
    return (BOM if bom else b"") + text


# ----------------------------------------------------------------------
# translate: TEXT, --file, stdin.


def _translate_args(**kwargs):
    return argparse.Namespace(**dict({"text": [], "file": None}, **kwargs))


def test_translate_file_bom_and_crlf_are_not_text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(BOM + b"hello\r\n\r\nworld\r\n")
    texts = recipe_cli.read_texts(_translate_args(file=str(path)))
    assert texts == ["hello", "world"]


def test_translate_stdin_bom_and_crlf_are_not_text(monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(BOM + b"hello\r\nworld\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert recipe_cli.read_texts(_translate_args()) == ["hello", "world"]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, r"--file \S*in\.txt: no such file$"),
        (b"\n  \n", r"--file \S*in\.txt: no text in the file$"),
        (b"one\n" * 25 + b"caf\xe9\n", r"in\.txt:26: not UTF-8"),
    ],
    ids=["missing", "empty", "latin1_line_26"],
)
@pytest.mark.parametrize("cli", [nmt_cli, g2p_cli], ids=["nmt", "g2p"])
def test_translate_bad_file_is_one_error_line(
    tmp_path, capsys, cli, content, message
):
    path = tmp_path / "in.txt"
    if content is not None:
        path.write_bytes(content)
    status = cli.main(
        ["translate", "--model", str(tmp_path / "no-model"), "--file",
         str(path)]
    )
    assert status == 2
    line = _one_error(capsys, cli.build_parser().prog)
    assert "translate: error: " in line
    assert re.search(message, line), line


# ----------------------------------------------------------------------
# NMT corpora: Anki, TSV, two files, .gz.


def _write(path, payload, gz=False):
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)
    return str(path)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_nmt_corpus_bom_does_not_reach_the_first_source(tmp_path, gz):
    tsv = _write(tmp_path / "pairs.tsv", _tsv(PAIRS, crlf=True), gz)
    assert nmt_data.load_corpus([tsv], data_format="tsv").pairs == PAIRS
    anki = _write(
        tmp_path / "fra.txt",
        BOM + "".join(f"{t}\t{s}\tCC-BY 2.0\n" for s, t in PAIRS).encode(),
        gz,
    )
    assert nmt_data.load_corpus([anki]).pairs == PAIRS
    source = _write(
        tmp_path / "test.fr", BOM + "".join(f"{s}\n" for s, _ in PAIRS).encode(),
        gz,
    )
    target = _write(
        tmp_path / "test.en",
        BOM + "".join(f"{t}\r\n" for _, t in PAIRS).encode(), gz,
    )
    assert nmt_data.load_corpus([source, target]).pairs == PAIRS


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_nmt_corpus_latin1_line_is_named(tmp_path, gz):
    payload = _tsv(PAIRS * 8 + [("x", "y")], bom=False) + b"caf\xe9\tcoffee\n"
    path = _write(tmp_path / "pairs.tsv", payload, gz)
    with pytest.raises(CliError, match=r"pairs\.tsv(\.gz)?:26: not UTF-8"):
        nmt_data.load_corpus([path], data_format="tsv")


def test_nmt_train_latin1_line_is_one_error_line(tmp_path, capsys):
    payload = _tsv(PAIRS * 8 + [("x", "y")], bom=False) + b"caf\xe9\tcoffee\n"
    path = _write(tmp_path / "pairs.tsv", payload)
    status = nmt_cli.main(
        ["train", "--out", str(tmp_path / "run"), "--data", path,
         "--data-format", "tsv"]
    )
    assert status == 2
    line = _one_error(capsys)
    assert "train: error: " in line and "pairs.tsv:26: not UTF-8" in line


@pytest.fixture(scope="module")
def nmt_run():
    """The tiny NMT run, exported to `RUN/export`."""
    tiny_runs.nmt_export()
    return tiny_runs.nmt_run(0)[0]


@pytest.mark.tf_only
@pytest.mark.parametrize("layout", ["tsv", "two_files"])
def test_nmt_evaluate_data_with_a_bom(
    nmt_run, tmp_path, capsys, monkeypatch, layout
):
    from examples.nmt import evaluate as eval_lib

    scored = []
    score_run = eval_lib.score_run

    def recording_score_run(run_dir, corpus, *args, **kwargs):
        scored.append(corpus.pairs)
        return score_run(run_dir, corpus, *args, **kwargs)

    monkeypatch.setattr(eval_lib, "score_run", recording_score_run)
    if layout == "tsv":
        data = [_write(tmp_path / "test.tsv", _tsv(PAIRS))]
    else:
        data = [
            _write(tmp_path / name, BOM + "".join(
                f"{pair[side]}\n" for pair in PAIRS).encode())
            for side, name in enumerate(["test.fr", "test.en"])
        ]
    status = nmt_cli.main(
        ["evaluate", "--run", nmt_run, "--data", *data, "--beam-width", "0"]
    )
    assert status == 0, capsys.readouterr().err
    assert scored == [PAIRS]
    assert "(3 pairs, 0 malformed lines skipped)" in capsys.readouterr().out


# ----------------------------------------------------------------------
# G2P lexicons.


def test_g2p_lexicon_bom_crlf_and_numbered_skips(tmp_path):
    path = tmp_path / "lexicon.tsv"
    path.write_bytes(
        BOM + b"HELLO\tHH AH0 L OW1\r\n"
        b"w0rd\tW ER D\r\n"
        b"\r\n"
        b"READ\tR IY1 D\r\n"
        b"bad\tXX YY\r\n"
        b"nophones\t\r\n"
        b"zz9\tZ\r\n"
    )
    lexicon = g2p_data.read_lexicon(path)
    assert lexicon.entries == {
        "hello": [("HH", "AH", "L", "OW")], "read": [("R", "IY", "D")],
    }
    assert lexicon.lines == {
        "not letters and apostrophes": [2, 7],
        "unknown phone": [5],
        "no phones": [6],
    }
    assert g2p_data.skip_report(lexicon) == (
        "not letters and apostrophes (2): lines 2, 7; "
        "unknown phone (1): line 5; no phones (1): line 6"
    )


def test_g2p_training_keeps_the_numbers_of_skipped_lines(tmp_path):
    """`max_words` keeps the skipped lines' numbers, which the training
    log line reports (`skip_report`)."""
    from examples.g2p import config as g2p_config
    from examples.g2p import train as g2p_train

    path = tmp_path / "lexicon.tsv"
    path.write_bytes(b"hello\tHH AH L OW\nbad\tXX\nread\tR IY D\n")
    config = g2p_config.G2PDataConfig(lexicon=str(path), max_words=1)
    lexicon = g2p_train.load_lexicon(config)
    assert len(lexicon) == 1
    assert g2p_data.skip_report(lexicon) == "unknown phone (1): line 2"
    splits = g2p_train.load_splits(config)
    assert g2p_data.skip_report(splits["train"]) == "unknown phone (1): line 2"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"hello\tHH AH L OW\ncaf\xe9\tK AE F EY\n",
         r"lexicon\.tsv:2: not UTF-8"),
        (b"bad\tXX\n\n123\tW AH N\n",
         r"lexicon\.tsv: no usable entry \(2 lines skipped: unknown phone "
         r"\(1\): line 1; not letters and apostrophes \(1\): line 3\)"),
        (None, r"--lexicon \S*lexicon\.tsv: no such file"),
    ],
    ids=["latin1", "nothing_usable", "missing"],
)
def test_g2p_train_bad_lexicon_is_one_error_line(
    tmp_path, capsys, content, message
):
    path = tmp_path / "lexicon.tsv"
    if content is not None:
        path.write_bytes(content)
    status = g2p_cli.main(
        ["train", "--out", str(tmp_path / "run"), "--lexicon", str(path)]
    )
    assert status == 2
    line = _one_error(capsys, "python -m examples.g2p")
    assert re.search(message, line), line


# ----------------------------------------------------------------------
# Flags out of range, or that do not go together: refused before any work.


@pytest.mark.parametrize("cli", [nmt_cli, g2p_cli], ids=["nmt", "g2p"])
@pytest.mark.parametrize("command", ["train", "demo"])
def test_zero_epochs_is_refused_before_any_work(tmp_path, capsys, cli, command):
    run = tmp_path / "run"
    status = cli.main([command, "--out", str(run), "--epochs", "0"])
    assert status == 2
    line = _one_error(capsys, cli.build_parser().prog)
    assert "--epochs must be at least 1" in line and line.endswith("--epochs 0")
    assert not run.exists()


@pytest.mark.parametrize(
    "cli, flag", [(nmt_cli, "--max-examples"), (g2p_cli, "--max-words")],
    ids=["nmt", "g2p"],
)
@pytest.mark.parametrize("value", ["0", "-3"])
def test_evaluate_max_zero_is_refused(tmp_path, capsys, cli, flag, value):
    status = cli.main(
        ["evaluate", "--run", str(tmp_path / "no-run"), flag, value]
    )
    assert status == 2
    line = _one_error(capsys, cli.build_parser().prog)
    assert f"{flag} must be at least 1" in line and line.endswith(value)


@pytest.mark.parametrize("cli", [nmt_cli, g2p_cli], ids=["nmt", "g2p"])
@pytest.mark.parametrize(
    "command, flags",
    [
        ("evaluate", ["--beam-width", "1000"]),
        ("evaluate", ["--beam-width", "-1"]),
        ("demo", ["--beam-width", str(MAX_BEAM_WIDTH + 1)]),
        ("translate", ["--beam-width", str(MAX_BEAM_WIDTH + 1)]),
        ("translate", ["--n-best", "1000"]),
        ("translate", ["--n-best", "0"]),
        ("translate", ["--prefix", "a", "--beam-width", "1000"]),
    ],
)
def test_beam_wider_than_the_saved_model_is_refused(
    tmp_path, capsys, cli, command, flags
):
    where = {"evaluate": "--run", "demo": "--out", "translate": "--model"}
    argv = [command, where[command], str(tmp_path / "none"), *flags]
    assert cli.main(argv + (["word"] if command == "translate" else [])) == 2
    line = _one_error(capsys, cli.build_parser().prog)
    assert f"{flags[-2]} must be from " in line
    assert f"to {MAX_BEAM_WIDTH} (the widest beam of the SavedModel)" in line
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--sample", "--temperature", "-1"],
         "--temperature must be a finite number >= 0 (0: greedy). "
         "Received: --temperature -1.0"),
        (["--sample", "--temperature", "nan"], "--temperature must be"),
        (["--sample", "--temperature", "inf"], "--temperature must be"),
        (["--sample", "--top-k", "-1"],
         "--top-k must be at least 1 (default: all). Received: --top-k -1"),
        (["--sample", "--top-k", "0"], "--top-k must be at least 1"),
        (["--sample", "--top-p", "0"], "--top-p must be in (0, 1]"),
        (["--sample", "--top-p", "1.5"],
         "--top-p must be in (0, 1] (default 1: all). Received: --top-p 1.5"),
        (["--sample", "--seed", "-2"], "--seed must be 0 or more"),
        (["--beam-width", "4", "--sample"],
         "--sample draws the translations: it does not go with "
         "--beam-width (beam search). Received: --beam-width 4"),
        (["--n-best", "3", "--beam-width", "4"],
         "--n-best K searches with a beam of width K: it does not go with "
         "--beam-width"),
        (["--top-k", "5", "--seed", "3"],
         "--top-k, --seed need --sample"),
    ],
)
@pytest.mark.parametrize("cli", [nmt_cli, g2p_cli], ids=["nmt", "g2p"])
def test_bad_decoding_flags_are_one_error_line(
    tmp_path, capsys, cli, flags, message
):
    no_model = str(tmp_path / "no-model")
    assert cli.main(["translate", "--model", no_model, *flags, "word"]) == 2
    line = _one_error(capsys, cli.build_parser().prog)
    assert "translate: error: " + message in line, line


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--beam-width", str(MAX_BEAM_WIDTH)],
        ["--prefix", "a", "--beam-width", "3"],
        ["--n-best", str(MAX_BEAM_WIDTH)],
        ["--sample", "--temperature", "0", "--top-k", "1", "--top-p", "1",
         "--seed", "0"],
    ],
)
def test_good_decoding_flags_pass_the_checks(flags):
    args = nmt_cli.build_parser().parse_args(
        ["translate", "--model", "m", *flags, "word"]
    )
    for check in args.checks:
        check(args)


# ----------------------------------------------------------------------
# G2P words outside the alphabet.


def test_outside_alphabet():
    assert g2p_text.outside_alphabet("O'Neill") == ""
    assert g2p_text.outside_alphabet("Café 42") == "é42"
    assert g2p_text.outside_alphabet("1233") == "123"
    assert g2p_text.outside_alphabet("\ufb01ne") == ""  # NFKC: "fi" + "ne"


@pytest.mark.tf_only
def test_g2p_translate_warns_about_characters_outside_the_alphabet(capsys):
    run_dir = tiny_runs.g2p_run()[0]
    assert g2p_cli.main(["translate", "--model", run_dir, "123", "café",
                         "hello"]) == 0
    out, err = capsys.readouterr()
    # Still pronounced, one line a word.
    assert [line.split("\t")[0] for line in out.splitlines()] == [
        "123", "café", "hello",
    ]
    prefix = "python -m examples.g2p translate: warning: "
    assert err.splitlines() == [
        prefix + "'123' has characters outside the alphabet (a-z and '): "
        "'123', read as [UNK]",
        prefix + "'café' has characters outside the alphabet (a-z and '): "
        "'é', read as [UNK]",
    ]


def test_nmt_translate_says_when_a_text_is_empty_or_cut(capsys):
    """The recipe's `translate` (a SavedModel) says, one `warning:` line
    each, that an empty text translates to "" and that a text over
    `MAX_INPUT_CHARS` characters is translated cut."""
    from keras_attention.seq2seq.tokens import MAX_INPUT_CHARS

    long_text = "lundi " * (MAX_INPUT_CHARS // 6 + 10)
    status = nmt_cli.main([
        "translate", "--model", tiny_runs.nmt_export(), "lundi 3 mai 1999",
        " ", long_text,
    ])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert len(out.splitlines()) == 3
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert all(
        line.startswith("python -m examples.nmt translate: warning: ")
        for line in lines
    )
    assert "no token" in lines[0] and "longer than the model reads" in lines[1]
