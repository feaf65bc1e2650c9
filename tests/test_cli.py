"""The command line (`python -m keras_attention`, keras_attention/cli).

One tiny Translator is trained once for the module, by the command line in
a subprocess; the commands that need no new process run in this one
(`keras_attention.cli.main`, the same code as the console script), so that
TensorFlow is imported a few times, not once per case. The end-to-end
cases (training, stdin streaming and Ctrl-C, the web server, a user error)
run `python -m keras_attention` in subprocesses.
"""

import codecs
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from keras_attention.cli import main

pytestmark = pytest.mark.tf_only

WORDS = "one two three four five six seven eight nine ten".split()
FRENCH = "un deux trois quatre cinq six sept huit neuf dix".split()
PAIRS = [
    (" ".join(WORDS[j] for j in idx), " ".join(FRENCH[j] for j in idx))
    for idx in (
        [(i * 3 + k * 7) % 10 for k in range(1 + i % 3)] for i in range(40)
    )
]
TINY = ["--units", "8", "--embedding-dim", "8", "--tokenizer", "whitespace"]
# Seconds a subprocess may take (TensorFlow's import is most of it).
TIMEOUT = 300


def _env():
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def run_cli(*args, input=None):
    """`python -m keras_attention ARGS` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "keras_attention", *map(str, args)],
        input=input, capture_output=True, text=True, env=_env(),
        timeout=TIMEOUT,
    )


def call(capsys, *args):
    """`keras_attention.cli.main(ARGS)` in this process: (status, stdout,
    stderr)."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def assert_user_error(status, err, *fragments):
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert status == 2, err
    assert len(lines) == 1, err
    assert "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli-data")
    paths = {
        "tsv": folder / "pairs.tsv",
        "source": folder / "source.txt",
        "target": folder / "target.txt",
        "bom_crlf": folder / "bom_crlf.tsv",
    }
    paths["tsv"].write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS))
    paths["source"].write_text("".join(f"{s}\n" for s, _ in PAIRS))
    paths["target"].write_text("".join(f"{t}\n" for _, t in PAIRS))
    paths["bom_crlf"].write_bytes(
        codecs.BOM_UTF8
        + "".join(f"{s}\t{t}\r\n\r\n" for s, t in PAIRS[:6]).encode()
    )
    paths["folder"] = folder
    return paths


@pytest.fixture(scope="module")
def model(data):
    """The tiny Translator, trained by `train` in a subprocess."""
    out = data["folder"] / "tiny.keras"
    done = run_cli(
        "train", "--data", data["tsv"], "--out", out, "--epochs", 2,
        "--validation-split", 0.1, "--seed", 1, *TINY,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    epochs = [line for line in lines if line.startswith("epoch ")]
    assert len(epochs) == 2
    assert re.match(
        r"epoch 2/2 loss \d+\.\d+ accuracy \d\.\d+ val_loss \d+\.\d+ "
        r"val_accuracy \d\.\d+$", epochs[1],
    ), epochs[1]
    assert lines[-1] == f"saved {out}"
    # Written atomically: no temporary file left beside it.
    assert sorted(p.name for p in out.parent.glob("*.keras")) == ["tiny.keras"]
    return out


@pytest.fixture(scope="module")
def exported(model, data):
    out = data["folder"] / "export"
    status = main(["export", "--model", str(model), "--out", str(out)])
    assert status == 0
    return out


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    for command in ("train", "translate", "evaluate", "export", "serve",
                    "align"):
        assert command in out


def test_train_help_shows_seq2seq_defaults(capsys):
    from keras_attention.seq2seq import Seq2Seq

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    import inspect

    units = inspect.signature(Seq2Seq.__init__).parameters["units"].default
    assert re.search(rf"--units N\s+default: {units}", out), out
    assert "--no-bidirectional" in out and "--score" in out


def test_translate_arguments_file_and_bom_crlf(model, data, capsys):
    texts = [s for s, _ in PAIRS[:3]]
    status, out, err = call(capsys, "translate", "--model", model, *texts)
    assert status == 0, err
    by_args = out.splitlines()
    assert len(by_args) == 3
    file = data["folder"] / "texts.txt"
    file.write_bytes(
        codecs.BOM_UTF8 + "".join(f"{t}\r\n\r\n" for t in texts).encode()
    )
    status, out, err = call(capsys, "translate", "--model", model,
                            "--file", file)
    assert status == 0, err
    # Line for line: a blank line answers a blank line (with a warning).
    assert out.splitlines() == [t for line in by_args for t in (line, "")]
    assert err.count("warning:") == 1


def test_translate_beam_nbest_and_seeded_sample(model, capsys):
    texts = [s for s, _ in PAIRS[:2]]
    status, out, err = call(capsys, "translate", "--model", model,
                            "--beam-width", 3, *texts)
    assert status == 0, err
    assert len(out.splitlines()) == 2
    status, out, err = call(capsys, "translate", "--model", model,
                            "--n-best", 2, "--beam-width", 3, *texts)
    assert status == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert [r[0] for r in rows] == ["0", "0", "1", "1"]
    assert all(len(r) == 3 for r in rows)
    assert float(rows[0][2]) >= float(rows[1][2])
    draws = [
        call(capsys, "translate", "--model", model, "--sample",
             "--temperature", 1.5, "--top-k", 5, "--seed", 7, *texts)
        for _ in range(2)
    ]
    assert draws[0][0] == 0, draws[0][2]
    assert draws[0][1] == draws[1][1]
    assert len(draws[0][1].splitlines()) == 2


def _default_sigint():
    """Ctrl-C as a terminal gives it: a shell without job control starts
    background commands (a CI script's `... &`) with SIGINT ignored, which
    the child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_translate_stdin_answers_each_line_and_ctrl_c(model):
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_attention", "translate", "--model",
         str(model)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=_env(), preexec_fn=_default_sigint,
    )
    try:
        answers = []
        for text in ("one two", "three"):
            process.stdin.write(text + "\n")
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
            assert ready, "no answer before stdin closed"
            answers.append(process.stdout.readline())
        assert all(a.endswith("\n") for a in answers)
        process.send_signal(signal.SIGINT)
        # Stdin stays open until the process ends: it ends by the signal,
        # not by the end of its input.
        process.wait(timeout=60)
        err = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted"
    assert "Traceback" not in err


def test_train_on_parallel_files_with_overwrite(data, capsys):
    out = data["folder"] / "parallel.keras"
    out.write_bytes(b"old")
    status, stdout, err = call(
        capsys, "train", "--data", data["source"], "--target-file",
        data["target"], "--out", out, "--overwrite", "--epochs", 1,
        "--units", 8, "--embedding-dim", 8, "--source-tokenizer",
        "whitespace", "--target-tokenizer", "character", "--batch-size", 64,
    )
    assert status == 0, err
    assert "training on 40 pairs" in stdout
    assert stdout.splitlines()[-1] == f"saved {out}"
    assert out.read_bytes()[:2] == b"PK"  # a .keras file is a zip


def test_evaluate_prints_bleu_chrf_and_exact_match(model, data, capsys):
    status, out, err = call(capsys, "evaluate", "--model", model, "--data",
                            data["bom_crlf"], "--beam-width", 2)
    assert status == 0, err
    assert "examples: 6" in out
    assert re.search(r"^BLEU: \d+\.\d\d$", out, re.M), out
    assert re.search(r"^chrF: \d+\.\d\d$", out, re.M), out
    assert re.search(r"^exact match: \d\.\d{4} \(\d/6\)$", out, re.M), out


def test_evaluate_without_sacrebleu_says_so(model, data, capsys,
                                           monkeypatch):
    monkeypatch.setitem(sys.modules, "sacrebleu", None)
    status, _, err = call(capsys, "evaluate", "--model", model, "--data",
                          data["tsv"])
    assert_user_error(status, err, "sacrebleu")


def test_saved_model_translates_as_the_keras_file(model, exported, capsys):
    texts = [s for s, _ in PAIRS[:4]]
    for flags in ([], ["--n-best", 2]):
        outputs = []
        for path in (model, exported):
            status, out, err = call(capsys, "translate", "--model", path,
                                    *flags, *texts)
            assert status == 0, err
            outputs.append(out.splitlines())
        if flags:  # the translations; the scores agree to rounding
            outputs = [[line.split("\t")[:2] for line in o] for o in outputs]
        assert outputs[0] == outputs[1]
    status, _, err = call(capsys, "export", "--model", model, "--out",
                          exported)
    assert_user_error(status, err, "already exists")


def test_align_writes_one_pharaoh_line_per_pair(model, data, capsys):
    out = data["folder"] / "links.txt"
    status, _, err = call(capsys, "align", "--model", model, "--data",
                          data["tsv"], "--reverse", model, "--symmetrize",
                          "union", "--out", out)
    assert status == 0, err
    lines = out.read_text().splitlines()
    assert len(lines) == len(PAIRS)
    for line, (source, target) in zip(lines, PAIRS):
        for link in line.split():
            i, j = map(int, link.split("-"))
            assert i < len(source.split()) and j < len(target.split())


def test_align_agreement_of_both_directions(model, data, capsys):
    out = data["folder"] / "agreed.txt"
    base = ["align", "--model", model, "--data", data["tsv"], "--reverse",
            model, "--out", out]
    union = data["folder"] / "union.txt"
    status, _, err = call(capsys, *base[:-1], union, "--method",
                          "threshold", "--threshold", "0.04",
                          "--symmetrize", "union")
    assert status == 0, err
    for threshold in ("0.2", "1"):
        status, _, err = call(capsys, *base, "--symmetrize", "agreement",
                              "--agreement-threshold", threshold)
        assert status == 0, err
        lines = out.read_text().splitlines()
        assert len(lines) == len(PAIRS)
        # An agreed link has weight >= threshold ** 2 in both directions,
        # so it is in the union of their threshold links at 0.04.
        for line, loose in zip(lines, union.read_text().splitlines()):
            assert set(line.split()) <= set(loose.split())
    status, _, err = call(capsys, *base, "--agreement-threshold", "0.2")
    assert_user_error(status, err, "goes with --symmetrize agreement")
    status, _, err = call(capsys, *base, "--symmetrize", "agreement",
                          "--agreement-threshold", "0")
    assert_user_error(status, err, "must be in (0, 1]")
    # The distortion prior: a steep one links the words of equal-length
    # pairs on the diagonal.
    status, _, err = call(capsys, *base, "--diagonal-tension", "1000")
    assert status == 0, err
    for line, (source, target) in zip(out.read_text().splitlines(), PAIRS):
        if len(source.split()) == len(target.split()):
            assert set(line.split()) == {
                f"{i}-{i}" for i in range(len(target.split()))}
    for bad in ("-1", "nan", "inf"):
        status, _, err = call(capsys, *base, "--diagonal-tension", bad)
        assert_user_error(status, err, "--diagonal-tension must be")


def test_serve_answers_a_post(exported):
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_attention", "serve", "--model",
         str(exported), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=_env(),
    )
    try:
        url = None
        deadline = time.monotonic() + TIMEOUT
        while url is None and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 5)
            if ready:
                line = process.stdout.readline()
                assert line, "the server stopped"
                found = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
                url = found and found.group(1)
        assert url, "the server did not start"
        request = urllib.request.Request(
            url + "api/translate",
            data=json.dumps({"text": "one two", "beam_width": 2}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 200
            body = json.loads(answer.read())
        assert body["text"] == "one two"
        assert isinstance(body["greedy"]["translation"], str)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_serve_exports_a_keras_file_first(model, capsys, monkeypatch):
    import keras_attention.web
    from keras_attention.translator import Translator

    served = []
    monkeypatch.setattr(
        Translator, "export", lambda self, path: os.makedirs(path)
    )
    monkeypatch.setattr(
        keras_attention.web, "serve",
        lambda path, **options: served.append((path, options)),
    )
    status, out, err = call(capsys, "serve", "--model", model, "--port", 0)
    assert status == 0, err
    (path, options), = served
    assert options["port"] == 0
    assert f"to a temporary SavedModel {path}" in out
    assert not os.path.exists(path)  # removed on exit


def test_keyboard_interrupt_is_one_line(capsys, monkeypatch):
    import keras_attention.cli.export as export

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(export, "run", interrupted)
    status, _, err = call(capsys, "export", "--model", "m.keras", "--out",
                          "x")
    assert status == 130
    assert err == "interrupted\n"


def test_user_error_in_a_subprocess(data):
    bad = data["folder"] / "bad_subprocess.tsv"
    bad.write_bytes(b"one\tun\ntwo\tdeux\nthr\xffee\ttrois\n")
    done = run_cli("train", "--data", bad, "--out",
                   data["folder"] / "never.keras")
    assert_user_error(done.returncode, done.stderr, f"{bad}:3:", "UTF-8")


def _misuse(tmp, model):
    """(name, argv, fragments of the error line) of bad uses."""
    tsv = tmp / "ok.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS[:4]))
    bad_utf8 = tmp / "bad.tsv"
    bad_utf8.write_bytes(b"one\tun\n\ntwo\xc3\tdeux\n")
    short = tmp / "short.tsv"
    short.write_text("one\tun\ntwo deux\n")
    longer = tmp / "longer.txt"
    longer.write_text("a\nb\nc\n")
    shorter = tmp / "shorter.txt"
    shorter.write_text("a\nb\n")
    existing = tmp / "existing.keras"
    existing.write_bytes(b"x")
    export_dir = tmp / "export_dir"
    export_dir.mkdir()
    (export_dir / "file").write_text("x")
    not_translator = tmp / "dense.keras"
    import keras

    keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]).save(
        not_translator
    )
    new = tmp / "new.keras"
    train = ["train", "--out", new, *TINY]
    return [
        ("missing data", [*train, "--data", tmp / "nope.tsv"],
         ["nope.tsv", "no such file"]),
        ("missing model", ["translate", "--model", tmp / "nope.keras", "a"],
         ["nope.keras", "no such file"]),
        ("bad utf-8", [*train, "--data", bad_utf8], [f"{bad_utf8}:3:"]),
        ("short tsv line", [*train, "--data", short], [f"{short}:2:"]),
        ("parallel lengths", [*train, "--data", longer, "--target-file",
                              shorter], ["3 lines", "has 2"]),
        ("parallel without target", [*train, "--data", longer,
                                     "--data-format", "parallel"],
         ["--target-file"]),
        ("epochs 0", [*train, "--data", tsv, "--epochs", 0], ["--epochs"]),
        ("existing out", ["train", "--data", tsv, "--out", existing],
         ["already exists", "--overwrite"]),
        ("out not .keras", ["train", "--data", tsv, "--out", tmp / "m.h5"],
         [".keras"]),
        ("bad seq2seq argument", [*train, "--data", tsv, "--dropout", 2],
         ["dropout"]),
        ("unknown flag", ["translate", "--model", model, "--bogus"],
         ["--bogus"]),
        ("no command", [], ["command"]),
        ("max examples 0", ["evaluate", "--model", model, "--data", tsv,
                            "--max-examples", 0], ["--max-examples"]),
        ("sample with beam", ["translate", "--model", model, "--sample",
                              "--beam-width", 2, "a"], ["--beam-width"]),
        ("temperature 0", ["translate", "--model", model, "--sample",
                           "--temperature", 0, "a"], ["--temperature"]),
        ("n-best over beam", ["translate", "--model", model, "--n-best", 3,
                              "--beam-width", 2, "a"], ["--n-best"]),
        ("seed without sample", ["translate", "--model", model, "--seed", 1,
                                 "a"], ["--sample"]),
        ("text and file", ["translate", "--model", model, "--file", tsv,
                           "a"], ["not both"]),
        ("not a model", ["translate", "--model", tsv, "a"],
         ["not a Keras model"]),
        ("not a translator", ["translate", "--model", not_translator, "a"],
         ["not a keras_attention Translator"]),
        ("export exists", ["export", "--model", model, "--out", export_dir],
         ["already exists"]),
        ("serve a plain folder", ["serve", "--model", export_dir],
         ["saved_model.pb"]),
        ("symmetrize alone", ["align", "--model", model, "--data", tsv,
                              "--symmetrize", "union"], ["--reverse"]),
        ("threshold with argmax", ["align", "--model", model, "--data", tsv,
                                   "--threshold", 0.3], ["--method"]),
    ]


MISUSE = [
    "missing data", "missing model", "bad utf-8", "short tsv line",
    "parallel lengths", "parallel without target", "epochs 0",
    "existing out", "out not .keras", "bad seq2seq argument", "unknown flag",
    "no command", "max examples 0", "sample with beam", "temperature 0",
    "n-best over beam", "seed without sample", "text and file", "not a model",
    "not a translator", "export exists", "serve a plain folder",
    "symmetrize alone", "threshold with argmax",
]


@pytest.fixture(scope="module")
def misuse(model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli-misuse")
    cases = {name: (argv, fragments)
             for name, argv, fragments in _misuse(tmp, model)}
    assert sorted(cases) == sorted(MISUSE)
    yield cases
    assert not (tmp / "new.keras").exists()


@pytest.mark.parametrize("name", MISUSE)
def test_misuse_is_one_error_line(misuse, name, capsys):
    argv, fragments = misuse[name]
    status, _, err = call(capsys, *argv)
    assert_user_error(status, err, *fragments)


def test_no_backend_lines_on_stderr(model):
    """A command prints nothing but its answer: no TensorFlow start-up,
    oneDNN or cuInit line (whatever TF_CPP_MIN_LOG_LEVEL says); with
    --verbose the backend may speak."""
    done = run_cli("translate", "--model", model, "le chat")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 1


def test_empty_text_translates_to_empty_with_a_warning(model, capsys):
    status, out, err = call(capsys, "translate", "--model", model, "le chat",
                            "   ")
    assert status == 0
    assert out.split("\n")[1] == ""
    assert err.count("warning:") == 1 and "no token" in err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def run_export(tmp_path_factory):
    """`(run, export)`: a run directory written by a recipe's `train` (the
    NMT example's tiny run) and its `export` with the default options
    (read by the two tests below)."""
    from tests import tiny_runs

    run = tiny_runs.nmt_run(0)[0]
    out = tmp_path_factory.mktemp("run-export") / "auto"
    assert main(["export", "--model", str(run), "--out", str(out)]) == 0
    return run, out


def test_a_recipes_run_directory_is_a_model(run_export, tmp_path, capsys):
    """A run directory written by a recipe's `train` (the NMT example's)
    serves as `--model`: `translate` gives the run's own translations,
    `export` writes its SavedModel, and a run that does not load is one
    error line naming why."""
    import shutil

    from keras_attention.translator import Translator

    run, export_dir = run_export
    text = "vendredi 20 octobre 1933"
    expected = Translator.from_run(run).translate([text])[0]
    status, out, err = call(capsys, "translate", "--model", run, text)
    assert status == 0, err
    assert out.splitlines() == [expected]
    status, out, err = call(capsys, "translate", "--model", export_dir, text)
    assert status == 0 and out.splitlines() == [expected], err
    broken = tmp_path / "broken"
    shutil.copytree(run, broken, ignore=shutil.ignore_patterns("export"))
    (broken / "model.weights.h5").unlink()
    status, _, err = call(capsys, "translate", "--model", broken, text)
    assert_user_error(status, err, str(broken), "has not finished training")


def test_a_saved_model_says_when_it_cuts_or_answers_empty(exported, capsys):
    """A SavedModel cuts a text over `MAX_INPUT_CHARS` characters and
    answers a blank one with "": the command line says both, one
    `warning:` line each, as it does for a .keras model."""
    from keras_attention.seq2seq.tokens import MAX_INPUT_CHARS

    long_text = "le chat " * (MAX_INPUT_CHARS // 8 + 10)
    status, out, err = call(capsys, "translate", "--model", exported,
                            "le chat", "  ", long_text)
    assert status == 0, err
    assert len(out.split("\n")) == 4 and out.split("\n")[1] == ""
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, err
    assert "no token" in warnings[0] and "texts[1]" in warnings[0]
    assert "longer than the model reads" in warnings[1]
    assert "texts[2]" in warnings[1] and "Traceback" not in err


def _xla_functions(saved_model_dir):
    """How many functions of a SavedModel must compile with XLA."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    library = proto.meta_graphs[0].graph_def.library
    return sum(
        f.attr["_XlaMustCompile"].b for f in library.function
    )


def test_export_xla_flag_chooses_the_compilation(run_export, tmp_path, capsys):
    """`export` compiles the decoding with XLA by default (`--xla auto`);
    `--xla none` writes plain TensorFlow ops."""
    run, auto = run_export
    status, _, err = call(capsys, "export", "--model", run, "--out",
                          tmp_path / "plain", "--xla", "none")
    assert status == 0, err
    assert _xla_functions(auto) > 0
    assert _xla_functions(tmp_path / "plain") == 0
