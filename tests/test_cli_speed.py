"""What makes `translate` answer fast, checked for what it does (the times
are in benchmarks/cli_latency.py, not here): a SavedModel's signature is
loaded with only its functions and answers as `tf.saved_model.load`'s;
the full loader is never called; stdin loads the model once and, at a
terminal, says when it is ready; an XLA export is compiled once per
machine; only the command that runs has its flags built; the pretrained
G2P model is exported once, saying so."""

import io
import os
import pty
import select
import subprocess
import sys
import warnings

import numpy as np
import pytest

from keras_attention.cli import main
from keras_attention.cli import models
from keras_attention.cli import saved_model
from keras_attention.cli.errors import CliError
from keras_attention.cli.parser import HELP
from keras_attention.cli.parser import build_parser
from keras_attention.cli.parser import command_of
from tests import tiny_runs

pytestmark = pytest.mark.tf_only

TEXTS = ["vendredi 20 octobre 1933", "lundi 2 mai 2005"]
# Seconds a subprocess may take (TensorFlow's import is most of it).
TIMEOUT = 300
# The inputs of each signature besides `text`.
ARGUMENTS = {
    "serving_default": {},
    "beam": {"beam_width": 3},
    "nbest": {"k": 2},
    "sample": {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 5},
}


@pytest.fixture(scope="module")
def export():
    return tiny_runs.nmt_export()


@pytest.fixture(scope="module")
def loaded(export):
    import tensorflow as tf

    return tf.saved_model.load(export)


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_signature_answers_as_tf_saved_model_load(export, loaded, name):
    import tensorflow as tf

    signature = saved_model.Signature(export, name)
    kept, total = signature.functions
    assert 0 < kept < total / 2, signature.functions
    arguments = ARGUMENTS[name]
    got = signature(text=np.asarray(TEXTS, object), **arguments)
    function = loaded.signatures[name]
    specs = function.structured_input_signature[1]
    want = function(
        text=tf.constant(TEXTS),
        **{k: tf.constant(v, specs[k].dtype) for k, v in arguments.items()},
    )
    assert set(got) == set(want)
    np.testing.assert_array_equal(got["translation"],
                                  want["translation"].numpy())
    np.testing.assert_allclose(got["scores"], want["scores"].numpy(),
                               rtol=1e-4, atol=1e-4)
    # A second call, other texts: the same functions, nothing rebuilt.
    again = signature(text=np.asarray(TEXTS[::-1], object), **arguments)
    if name != "sample":
        np.testing.assert_array_equal(again["translation"],
                                      got["translation"][::-1])


def test_signature_errors_name_what_is_wrong(export, tmp_path):
    with pytest.raises(ValueError, match=r"no `greedyy` signature.*beam"):
        saved_model.Signature(export, "greedyy")
    with pytest.raises(ValueError, match="__saved_model_init_op"):
        saved_model.Signature(export, "__saved_model_init_op")
    (tmp_path / "saved_model.pb").write_bytes(b"not a protocol buffer")
    with pytest.raises(ValueError, match="No SavedModel could be loaded"):
        saved_model.Signature(str(tmp_path), "serving_default")
    signature = saved_model.Signature(export, "beam")
    with pytest.raises(TypeError, match=r"\['beam_width', 'text'\]"):
        signature(text=np.asarray(TEXTS, object))


def test_translate_never_calls_the_full_loader(export, monkeypatch, capsys):
    import tensorflow as tf

    def full_load(*args, **kwargs):
        raise AssertionError("tf.saved_model.load was called")

    monkeypatch.setattr(tf.saved_model, "load", full_load)
    capsys.readouterr()
    assert main(["translate", "--model", export, "--beam-width", "2",
                 *TEXTS]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 2


def test_stdin_loads_the_model_once(export, monkeypatch, capsys):
    built = []
    original = saved_model.Signature.__init__

    def counted(self, *args, **kwargs):
        built.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(saved_model.Signature, "__init__", counted)
    lines = "".join(f"{t}\n" for t in TEXTS * 3).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    capsys.readouterr()
    assert main(["translate", "--model", export]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 6
    assert out.splitlines()[:2] == out.splitlines()[2:4]
    assert len(built) == 1
    # Not a terminal: no `ready:` line.
    assert "ready:" not in err


def test_a_terminal_is_told_when_to_type(export):
    leader, follower = pty.openpty()
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_attention", "translate", "--model",
         export],
        stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    try:
        said = []
        while not said or not said[-1].startswith("ready:"):
            ready, _, _ = select.select([process.stderr], [], [], TIMEOUT)
            assert ready, f"no ready line on stderr: {said}"
            said.append(process.stderr.readline().decode())
            assert said[-1], f"stderr closed: {said}"
        assert said[-1].startswith("ready: type a text"), said
        os.write(leader, (TEXTS[0] + "\n").encode())
        ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
        assert ready, "no answer to a typed line"
        assert process.stdout.readline().endswith(b"\n")
        os.write(leader, b"\x04")  # Ctrl-D: the end of the input
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    assert "Traceback" not in process.stderr.read().decode()


def test_texts_warned_about_as_the_library_does():
    from keras_attention.seq2seq.tokens import MAX_INPUT_CHARS
    from keras_attention.translator import TranslationWarning

    assert models.NEVER_CUT <= MAX_INPUT_CHARS
    for texts, expected in (
        (["un deux", "x" * models.NEVER_CUT], 0),
        (["un deux", "y" * (models.NEVER_CUT + 1)], 0),
        (["un deux", "  "], 1),
        (["z" * (MAX_INPUT_CHARS + 1)], 1),
        (["", "z" * (MAX_INPUT_CHARS + 1)], 2),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            models.warn_about_texts(texts)
        said = [w for w in caught if w.category is TranslationWarning]
        assert len(said) == expected, (texts, [str(w.message) for w in said])


def test_only_the_command_that_runs_has_its_flags():
    assert command_of(["--verbose", "translate", "--model", "m"]) == "translate"
    assert command_of(["--verbose"]) is None
    light = build_parser(full=["translate"])
    full = build_parser()
    args = light.parse_args(["translate", "--model", "m", "un"])
    assert (args.command, args.texts) == ("translate", ["un"])
    train = ["train", "--data", "d.tsv", "--out", "m.keras", "--units", "8"]
    assert full.parse_args(train).command == "train"
    with pytest.raises(CliError, match="--units"):
        light.parse_args(train)
    # Every command is listed, by the same help line.
    assert all(name in light.format_help() for name in HELP)
    assert [line for line in light.format_help().splitlines()
            if line.strip().split(" ")[0] in HELP] == [
        line for line in full.format_help().splitlines()
        if line.strip().split(" ")[0] in HELP
    ]


@pytest.fixture(scope="module")
def xla_export():
    """The tiny NMT run's `--xla decode` export, shared by the session
    (read only: the compiled programs go to the test's cache folder)."""
    return tiny_runs.nmt_xla_export()


@pytest.mark.slow
def test_an_xla_export_compiles_once_per_machine(xla_export, tmp_path):
    """The first process compiles the XLA decoding into the cache; the next
    loads it from there and compiles nothing."""
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               XDG_CACHE_HOME=str(tmp_path))
    env.pop("TF_XLA_FLAGS", None)
    folder = tmp_path / "keras-seq2seq-attention" / "xla"
    outputs, listings = [], []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "keras_attention", "translate", "--model",
             xla_export, TEXTS[0]],
            capture_output=True, text=True, env=env, timeout=TIMEOUT,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(done.stdout)
        listings.append({p.name: p.stat().st_mtime_ns
                         for p in folder.iterdir()})
    assert listings[0], "no compiled program in the cache"
    assert listings[1] == listings[0]
    assert outputs[0] == outputs[1] and outputs[0].endswith("\n")


@pytest.mark.slow
def test_the_pretrained_model_is_exported_once_saying_so(tmp_path):
    """`python -m examples.g2p translate --model pretrained`: the first use
    exports the shipped run into the cache and says so on stderr; the next
    reuses the export, silently."""
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               XDG_CACHE_HOME=str(tmp_path))
    command = [sys.executable, "-m", "examples.g2p", "translate", "--model",
               "pretrained", "cat"]
    runs = []
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True,
                              env=env, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(done)
        (cache,) = (tmp_path / "keras-seq2seq-attention").iterdir()
        if len(runs) == 1:
            exported_at = (cache / "saved_model.pb").stat().st_mtime
    first, second = (r.stderr for r in runs)
    assert first.count("first use of the pretrained model") == 1, first
    assert str(cache) in first
    assert "first use" not in second, second
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stdout.startswith("cat\t")
    assert (cache / "saved_model.pb").stat().st_mtime == exported_at
