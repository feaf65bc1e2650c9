"""LiteRT and ONNX translators (`Translator.export(format=...)`,
`keras_attention.portable`) against the SavedModel of the same model.

On the tiny trained runs of both examples (the NMT dates with WordPiece,
the G2P words with characters), each format's outputs, run by its own
runtime (`ai-edge-litert`, `onnxruntime`), equal the SavedModel's for
greedy and beam search on a batch that mixes lengths, an empty text and
one longer than the model reads: the same tokens and translations, scores
and attention to 1e-4. The client's tokenizers give the ids of the
TensorFlow ops, on hand-picked and on generated texts.
"""

import functools
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from tests import tiny_runs

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
keras = pytest.importorskip("keras")
if keras.config.backend() != "tensorflow":
    pytest.skip("exports run on the TensorFlow backend", allow_module_level=True)

from keras_attention import portable  # noqa: E402
from keras_attention import tokenizers as tokenizers_lib  # noqa: E402
from keras_attention.portable import client as client_lib  # noqa: E402
from keras_attention.portable.convert import tokenizer_spec  # noqa: E402
from keras_attention.serving.export import load_signatures  # noqa: E402
from keras_attention.serving.export import translate_all  # noqa: E402
from keras_attention.seq2seq.tokens import END_ID  # noqa: E402
from keras_attention.translator import Translator  # noqa: E402

RUNTIMES = {
    "litert": "ai_edge_litert",
    "onnx": "onnxruntime",
}
CONVERTERS = {"litert": None, "onnx": "tf2onnx"}
# The shared NMT export's (`tiny_runs.nmt_export`, the SavedModel the NMT
# run's portable files are compared against).
MAX_OUTPUT_TOKENS = tiny_runs.NMT_MAX_OUTPUT_TOKENS
BEAM_WIDTH = 3


def _require(format):
    pytest.importorskip(
        RUNTIMES[format], reason=f"the {format} runtime is not installed"
    )
    if CONVERTERS[format]:
        pytest.importorskip(CONVERTERS[format])


def _texts(example):
    """A batch of mixed lengths, an empty text and one longer than the
    model reads (`max_tokens` is 64 for both runs)."""
    if example == "nmt":
        return [
            "vendredi 20 octobre 1933",
            "",
            "1 janvier 2001",
            " ".join(["samedi 3 mars 1999"] * 30),
            "lundi",
        ]
    return ["abandon", "", "cat", "x" * 90, "zygote", "o'neil"]


@pytest.fixture(scope="module", params=["nmt", "g2p"])
def example(request, tmp_path_factory):
    """`(name, translator, SavedModel signatures, folder)` of a tiny run.
    The NMT run's SavedModel is the session's shared one (exported with
    `MAX_OUTPUT_TOKENS`, `xla=None`, as the G2P run's is here)."""
    folder = tmp_path_factory.mktemp(f"portable-{request.param}")
    if request.param == "nmt":
        run_dir = tiny_runs.nmt_run()[0]
        translator = Translator.from_run(run_dir)
        saved = tiny_runs.nmt_export()
    else:
        run_dir = tiny_runs.g2p_run()[0]
        translator = Translator.from_run(run_dir)
        # The one-epoch model's own first choice can be [END] for every
        # word: its [END] logit lowered, it writes phonemes, so that the
        # formats are compared on translations, not on blanks.
        projection = translator.seq2seq.output_projection
        bias = keras.ops.convert_to_numpy(projection.bias).copy()
        bias[END_ID] -= 3.0
        projection.bias.assign(bias)
        saved = translator.export(
            str(folder / "saved"), max_output_tokens=MAX_OUTPUT_TOKENS,
            xla=None,
        )
    signatures = load_signatures(saved, ["serving_default", "beam"])
    return request.param, translator, signatures, folder


@pytest.fixture(scope="module")
def exports(example):
    """The LiteRT and ONNX files of the example's translator."""
    name, translator, _, folder = example
    paths = {}
    for format, suffix in (("litert", ".tflite"), ("onnx", ".onnx")):
        if importable(RUNTIMES[format]) and (
            CONVERTERS[format] is None or importable(CONVERTERS[format])
        ):
            paths[format] = translator.export(
                str(folder / format / f"{name}{suffix}"),
                format=format,
                max_output_tokens=MAX_OUTPUT_TOKENS,
            )
    return paths


def importable(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _saved_model_results(signatures, texts, beam_width):
    if beam_width:
        width = tf.constant(beam_width, tf.int32)

        def fn(text):
            return signatures["beam"](text=text, beam_width=width)

    else:
        fn = signatures["serving_default"]
    results = translate_all(fn, texts)
    raw = fn(tf.constant(texts))
    for i, result in enumerate(results):
        result["score"] = float(raw["scores"][i])
        result["log_prob"] = float(raw["log_probs"][i])
    return results


@pytest.mark.parametrize("beam_width", [0, BEAM_WIDTH])
@pytest.mark.parametrize("format", ["litert", "onnx"])
def test_outputs_equal_the_saved_models(example, exports, format, beam_width):
    _require(format)
    name, _, signatures, _ = example
    texts = _texts(name)
    expected = _saved_model_results(signatures, texts, beam_width)
    got = portable.load(exports[format]).translate(texts, beam_width)
    assert len(got) == len(texts)
    for i, (want, have) in enumerate(zip(expected, got)):
        where = f"{format} {name} beam_width={beam_width} text {i}"
        assert have["translation"] == want["translation"], where
        assert have["target_tokens"] == want["target_tokens"], where
        assert have["source_tokens"] == want["source_tokens"], where
        assert have["attention"].shape == want["attention"].shape, where
        np.testing.assert_allclose(
            have["attention"], want["attention"], atol=1e-4, err_msg=where
        )
        assert have["score"] == pytest.approx(want["score"], abs=1e-4), where
        assert have["log_prob"] == pytest.approx(
            want["log_prob"], abs=1e-4
        ), where
    if not beam_width:
        # Some text translates to something: the comparison is not of
        # blanks (the tiny G2P model's beams all end at once).
        assert any(r["target_tokens"] for r in expected)


def test_a_batch_decodes_as_its_sentences_alone(example, exports):
    _require("litert")
    name = example[0]
    translator = portable.load(exports["litert"])
    texts = _texts(name)
    together = translator.translate(texts, beam_width=BEAM_WIDTH)
    for text, result in zip(texts, together):
        (alone,) = translator.translate([text], beam_width=BEAM_WIDTH)
        assert alone["translation"] == result["translation"]
        np.testing.assert_allclose(
            alone["attention"], result["attention"], atol=1e-5
        )


def test_the_vocabulary_file_describes_the_export(example, exports):
    _require("litert")
    name, translator, _, _ = example
    with open(client_lib.vocabulary_path(exports["litert"])) as f:
        spec = json.load(f)
    assert spec["format"] == client_lib.FORMAT_NAME
    assert spec["source"]["vocabulary"] == translator.source_tokenizer.vocabulary
    assert spec["target"]["vocabulary"] == translator.target_tokenizer.vocabulary
    assert spec["source"]["add_end"] == translator.source_end_token
    assert spec["max_output_tokens"] == MAX_OUTPUT_TOKENS
    assert os.path.isfile(
        os.path.join(os.path.dirname(exports["litert"]), client_lib.CLIENT_FILE)
    )


def test_the_client_beside_the_model_runs_without_the_library(
    example, exports, tmp_path
):
    """The copied `translator_client.py` translates from a folder of its
    own, importing neither TensorFlow nor keras_attention."""
    _require("litert")
    name, _, signatures, _ = example
    folder = tmp_path / "device"
    folder.mkdir()
    source = exports["litert"]
    for path in (
        source,
        client_lib.vocabulary_path(source),
        os.path.join(os.path.dirname(source), client_lib.CLIENT_FILE),
    ):
        shutil.copy(path, folder)
    text = _texts(name)[0]
    script = (
        "import runpy, sys\n"
        f"sys.argv = ['translator_client.py', {os.path.basename(source)!r}, "
        f"{text!r}, '--beam-width', '{BEAM_WIDTH}']\n"
        "try:\n"
        "    runpy.run_path('translator_client.py', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'keras_attention')"
        " if m in sys.modules]\n"
        "print('imported:', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=""),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "imported: []" in done.stderr
    (want,) = _saved_model_results(signatures, [text], BEAM_WIDTH)
    assert done.stdout == want["translation"] + "\n"


@pytest.mark.parametrize("quantize", ["float16", "int8"])
def test_quantized_litert_models_are_smaller_and_translate(
    example, exports, quantize
):
    _require("litert")
    name, translator, signatures, folder = example
    if name == "nmt":
        pytest.skip(
            "LiteRT's converter keeps weights of fewer than 1024 values in "
            "float32: the tiny NMT model has no larger one"
        )
    path = translator.export(
        str(folder / f"{name}-{quantize}.tflite"),
        format="litert",
        quantize=quantize,
        max_output_tokens=MAX_OUTPUT_TOKENS,
    )
    # The weights are stored in the asked type (the tiny models are
    # mostly graph: their files hardly shrink; the G2P model's do, in
    # docs/benchmarks.md).
    from ai_edge_litert import schema_py_generated as schema

    def stored(model):
        """The tensor types of every subgraph (the loops' bodies hold the
        decoder's weights)."""
        with open(model, "rb") as f:
            parsed = schema.ModelT.InitFromPackedBuf(f.read(), 0)
        names = {
            value: name.lower()
            for name, value in vars(schema.TensorType).items()
            if not name.startswith("_")
        }
        return {
            names[tensor.type]
            for graph in parsed.subgraphs
            for tensor in graph.tensors
        }

    assert quantize not in stored(exports["litert"])
    assert quantize in stored(path)
    texts = _texts(name)
    got = portable.load(path).translate(texts, beam_width=BEAM_WIDTH)
    expected = _saved_model_results(signatures, texts, BEAM_WIDTH)
    assert [r["translation"] for r in got][1] == ""
    for have, want in zip(got, expected):
        assert np.isfinite(have["score"])
        assert have["source_tokens"] == want["source_tokens"]
        if have["target_tokens"] == want["target_tokens"]:
            np.testing.assert_allclose(
                have["attention"], want["attention"], atol=0.05
            )


def test_an_ensemble_exports_as_one_litert_model(tmp_path):
    """Two runs of the same vocabularies, decoded together, as the
    SavedModel of the ensemble decodes them (the session's shared one,
    `tiny_runs.nmt_ensemble_export`: `MAX_OUTPUT_TOKENS`, no XLA)."""
    _require("litert")
    first = Translator.from_run(tiny_runs.nmt_run(0)[0])
    second = Translator.from_run(tiny_runs.nmt_run(1)[0])
    saved = tiny_runs.nmt_ensemble_export()
    path = first.export(
        str(tmp_path / "ensemble.tflite"),
        format="litert",
        ensemble=[second],
        max_output_tokens=MAX_OUTPUT_TOKENS,
    )
    texts = _texts("nmt")
    signatures = load_signatures(saved, ["serving_default", "beam"])
    for width in (0, BEAM_WIDTH):
        expected = _saved_model_results(signatures, texts, width)
        got = portable.load(path).translate(texts, beam_width=width)
        assert [r["translation"] for r in got] == [
            r["translation"] for r in expected
        ]
        for have, want in zip(got, expected):
            assert have["score"] == pytest.approx(want["score"], abs=1e-4)


# ----------------------------------------------------------------------
# Bad arguments.


@pytest.fixture(scope="module")
def translator():
    return Translator.from_run(tiny_runs.nmt_run()[0])


@pytest.mark.parametrize(
    "path, options, message",
    [
        ("model.onnx", {"format": "litert"}, "must end with '.tflite'"),
        ("model.tflite", {"format": "onnx"}, "must end with '.onnx'"),
        ("model", {"format": "tflite"}, "`format` must be one of"),
        (
            "m.onnx",
            {"format": "onnx", "quantize": "float16"},
            "`quantize` must be one of ('int8',)",
        ),
        (
            "m.tflite",
            {"format": "litert", "quantize": "int4"},
            "`quantize` must be one of ('float16', 'int8')",
        ),
        ("m.tflite", {"format": "litert", "xla": "decode"}, "['xla']"),
        ("saved", {"quantize": "int8"}, "takes no ['quantize']"),
    ],
)
def test_bad_export_arguments_are_named(
    translator, tmp_path, path, options, message
):
    with pytest.raises(ValueError, match=None) as info:
        translator.export(str(tmp_path / path), **options)
    assert message in str(info.value)
    assert not os.listdir(tmp_path)


def test_bad_client_arguments_are_named(example, exports, tmp_path):
    _require("litert")
    model = portable.load(exports["litert"])
    with pytest.raises(TypeError, match="not one string"):
        model.translate("one text")
    with pytest.raises(TypeError, match=r"NoneType at texts\[1\]"):
        model.translate(["a", None])
    for width in (-1, 17, 2.0, True):
        with pytest.raises(ValueError, match="`beam_width` must be"):
            model.translate(["a"], beam_width=width)
    lonely = tmp_path / "lonely.tflite"
    shutil.copy(exports["litert"], lonely)
    with pytest.raises(ValueError, match="No vocabulary file"):
        portable.load(str(lonely))
    with pytest.raises(ValueError, match=r"\.tflite` or `\.onnx"):
        portable.load(str(tmp_path / "model.pt"))
    with pytest.raises(ValueError, match="No model file"):
        portable.load(str(tmp_path / "missing.tflite"))
    (tmp_path / "lonely.vocab.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a vocabulary file"):
        portable.load(str(lonely))


# ----------------------------------------------------------------------
# The client's tokenizers against the TensorFlow ops.

_CORPUS = [
    "Le chat noir, l'homme et «la» maison!",
    "ÉCOLE école Straße naïve café 20,5 % (vrai) ¿Qué?",
    "vendredi 20 octobre 1933 — fin.",
    "ﬁnal ① ² x² ½ Ａ full-width",
    "tab\tnew\nline\u00a0nbsp\u3000ideographic",
    "日本語 emoji 🙂 and ✓ symbols $5 #1 @x",
]
_HARD = _CORPUS + [
    "",
    "   ",
    "unknownword zzzzqqq ##x [UNK] [END]",
    "x" * 120 + " " + "é" * 60,
    "İstanbul ΣΊΣΥΦΟΣ ǅ ﬀ",
    "a" * 1200,
    "O'Neil’s don't l ' homme",
    "\u0301e\u0301 combining",
]


@functools.lru_cache(maxsize=None)
def _tokenizer(name):
    """A tokenizer of each kind, learned from `_CORPUS`."""
    lib = tokenizers_lib
    if name == "wordpiece":
        return lib.WordPieceTokenizer.from_texts(_CORPUS * 3, 120)
    if name == "words-lower":
        return lib.WhitespaceTokenizer.from_texts(_CORPUS, 60, lower_case=True)
    if name == "whole-words":
        return lib.WhitespaceTokenizer.from_texts(
            _CORPUS, 60, split_punctuation=False
        )
    if name == "characters":
        return lib.CharacterTokenizer.from_texts(_CORPUS, 80, lower_case=True)
    pytest.importorskip("sentencepiece")
    return lib.SentencePieceTokenizer.from_texts(_CORPUS * 20, 120)


KINDS = ["wordpiece", "words-lower", "whole-words", "characters"]


def _pair(tokenizer, add_start=False, add_end=True, max_tokens=24):
    framed = tokenizer.framed(add_start, add_end, max_tokens)
    spec = tokenizer_spec(tokenizer, add_start, add_end, max_tokens)
    return framed, client_lib.Tokenizer(json.loads(json.dumps(spec)))


@pytest.mark.parametrize("kind", KINDS + ["sentencepiece"])
@pytest.mark.parametrize("framing", [(False, True), (True, True)])
def test_client_ids_equal_the_tensorflow_ops(kind, framing):
    framed, client = _pair(_tokenizer(kind), *framing)
    expected = framed.tokenize(tf.constant(_HARD)).to_list()
    assert [client.tokenize(t) for t in _HARD] == expected


@pytest.mark.parametrize("kind", KINDS + ["sentencepiece"])
def test_client_text_equals_the_tensorflow_ops(kind):
    tokenizer = _tokenizer(kind)
    framed, client = _pair(tokenizer, True, True)
    rng = np.random.default_rng(0)
    size = len(tokenizer.vocabulary)
    rows = [framed.tokenize(tf.constant([t])).to_list()[0] for t in _HARD]
    # Ids outside the vocabulary read `[UNK]` (SentencePiece's op rejects
    # them: a model never emits one).
    top = size if kind == "sentencepiece" else size + 3
    rows += [list(rng.integers(0, top, 12)) for _ in range(20)]
    width = max(len(r) for r in rows)
    dense = np.array([r + [0] * (width - len(r)) for r in rows], np.int64)
    expected = [
        t.decode("utf-8") for t in framed.detokenize(tf.constant(dense)).numpy()
    ]
    assert [client.detokenize(r) for r in dense.tolist()] == expected


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.text(
            # Characters that Python's Unicode version knows (Cn: not yet
            # assigned there; TensorFlow's ICU may know them).
            st.characters(blacklist_categories=("Cs", "Cn")), max_size=30
        ),
        min_size=1,
        max_size=4,
    )
)
def test_client_ids_equal_the_ops_on_generated_texts(texts):
    for kind in KINDS:
        framed, client = _pair(_tokenizer(kind))
        expected = framed.tokenize(tf.constant(texts)).to_list()
        assert [client.tokenize(t) for t in texts] == expected, kind


def test_bad_vocabulary_files_are_named():
    spec = tokenizer_spec(_tokenizer("wordpiece"), False, True, 8)
    with pytest.raises(ValueError, match="Unknown tokenizer kind 'bpe'"):
        client_lib.Tokenizer(dict(spec, kind="bpe"))


def test_portable_loops_trace_no_tensor_lists():
    """`keras_attention.LSTM` inside `portable_loops()`: the same outputs,
    and a graph without TensorList ops (which LiteRT cannot run for an
    unknown batch size)."""
    from keras_attention import LSTM
    from keras_attention.rnn.loops import portable_loops

    layer = LSTM(6, return_sequences=True, return_state=True)
    x = np.random.default_rng(1).normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1] * 5, [1] * 3 + [0] * 2, [1] + [0] * 4], bool)
    plain = layer(x, mask=mask)
    spec = tf.TensorSpec([None, None, 4], tf.float32)

    def call(inputs):
        return layer(inputs)

    with portable_loops():
        portable_out = layer(x, mask=mask)
        graph = tf.function(call, input_signature=[spec]).get_concrete_function()
    for a, b in zip(plain, portable_out):
        np.testing.assert_allclose(a, b, atol=1e-6)
    ops = {
        op.type
        for f in [graph.graph] + [
            fn.graph for fn in graph.graph._functions.values()
            if hasattr(fn, "graph")
        ]
        for op in f.get_operations()
    }
    library = graph.graph.as_graph_def().library
    ops |= {n.op for f in library.function for n in f.node_def}
    assert not {o for o in ops if o.startswith("TensorList")}, ops
    plain_graph = tf.function(call, input_signature=[spec]).get_concrete_function()
    plain_ops = {
        n.op for f in plain_graph.graph.as_graph_def().library.function
        for n in f.node_def
    }
    assert any(o.startswith("TensorList") for o in plain_ops)


# ----------------------------------------------------------------------
# The command line.


# The console script `keras-seq2seq-attention ARGS` (argv[2:]), which
# writes the top-level names of the modules loaded when it exits to the
# JSON file argv[1].
_MODULES_AT_EXIT = """
import atexit, json, sys
path = sys.argv[1]
atexit.register(lambda: json.dump(
    sorted({m.split('.')[0] for m in sys.modules}), open(path, 'w')))
sys.argv = ['keras-seq2seq-attention', *sys.argv[2:]]
from keras_attention.cli import main
sys.exit(main())
"""


def _cli(*args):
    """`python -m keras_attention ARGS` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "keras_attention", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )


def _call(capsys, *args):
    """`keras_attention.cli.main(ARGS)` in this process: (status, stdout,
    stderr)."""
    from keras_attention.cli import main

    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def default_signatures(tmp_path_factory):
    """The signatures of the NMT run's SavedModel with the command line's
    default options (`max_output_tokens` is the model's `max_tokens`),
    exported once for both formats."""
    path = tmp_path_factory.mktemp("default-saved") / "saved"
    saved = Translator.from_run(tiny_runs.nmt_run()[0]).export(
        str(path), xla=None
    )
    return load_signatures(saved, ["serving_default", "beam"])


@pytest.mark.parametrize(
    "format, suffix", [("litert", ".tflite"), ("onnx", ".onnx")]
)
def test_the_command_line_exports_translates_and_evaluates(
    tmp_path, capsys, format, suffix, default_signatures
):
    """`export --format` of a run directory, then `translate` and
    `evaluate` on the file: the SavedModel's translations (the LiteRT
    file's `translate` in a process of its own too)."""
    _require(format)
    run_dir = tiny_runs.nmt_run()[0]
    out = tmp_path / f"dates{suffix}"
    status, stdout, err = _call(
        capsys, "export", "--model", run_dir, "--out", out, "--format", format
    )
    assert status == 0, err
    assert stdout.strip() == f"exported {out}"
    assert sorted(os.listdir(tmp_path)) == sorted(
        [out.name, "dates.vocab.json", client_lib.CLIENT_FILE]
    )
    texts = _texts("nmt")[:3]
    signatures = default_signatures
    for flags, width in (((), 0), (("--beam-width", "3"), 3)):
        status, stdout, err = _call(
            capsys, "translate", "--model", out, *flags, *texts
        )
        assert status == 0, err
        expected = _saved_model_results(signatures, texts, width)
        assert stdout.split("\n")[:-1] == [r["translation"] for r in expected]
        # The empty text is said once, on stderr.
        assert err.count("warning:") == 1, err
    if format == "litert":
        done = _cli("translate", "--model", out, *texts)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split("\n")[:-1] == [
            r["translation"]
            for r in _saved_model_results(signatures, texts, 0)
        ]
        # Only the warning: no TensorFlow start-up line when the warning
        # imports the library.
        assert done.stderr.strip().startswith("warning:"), done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        # Texts without a warning: the console script imports neither
        # Keras nor TensorFlow (the modules loaded when it exits).
        texts = [t for t in texts if t.strip()]
        modules = tmp_path / "modules.json"
        done = subprocess.run(
            [sys.executable, "-c", _MODULES_AT_EXIT, str(modules),
             "translate", "--model", str(out), *texts],
            capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split("\n")[:-1] == [
            r["translation"]
            for r in _saved_model_results(signatures, texts, 0)
        ]
        imported = set(json.loads(modules.read_text()))
        assert {"keras_attention", "numpy"} <= imported
        assert not imported & {"keras", "tensorflow", "jax", "torch"}, (
            sorted(imported)
        )
    data = tmp_path / "pairs.tsv"
    data.write_text("vendredi 20 octobre 1933\tFriday, October 20, 1933\n")
    status, stdout, err = _call(capsys, "evaluate", "--model", out, "--data", data)
    assert status == 0, err
    assert "exact" in stdout.lower()


@pytest.mark.parametrize(
    "args, message",
    [
        (("--format", "litert", "--out", "{tmp}/m.onnx"), "ending with .tflite"),
        (("--format", "onnx", "--out", "{tmp}/m.onnx", "--quantize",
          "float16"), "--quantize float16 is for --format litert"),
        (("--out", "{tmp}/saved", "--quantize", "int8"), "--quantize is for"),
        (("--format", "litert", "--out", "{tmp}/m.tflite", "--xla", "step"),
         "--xla is for --format tf_saved_model"),
    ],
)
def test_bad_export_flags_are_one_line(tmp_path, capsys, args, message):
    run_dir = tiny_runs.nmt_run()[0]
    args = [a.format(tmp=tmp_path) for a in args]
    status, _, err = _call(capsys, "export", "--model", run_dir, *args)
    assert status == 2
    assert err.count("\n") == 1 and message in err, err
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--n-best", "2"), "greedy or beam search only"),
        (("--sample",), "greedy or beam search only"),
        (("--beam-width", "17"), "16"),
        (("--max-length", "5"), "--max-length works with .keras models"),
    ],
)
def test_bad_translate_flags_on_a_litert_model_are_one_line(
    translator, tmp_path_factory, capsys, flags, message
):
    _require("litert")
    path = tmp_path_factory.getbasetemp() / "flags" / "dates.tflite"
    if not path.exists():
        translator.export(str(path), format="litert", max_output_tokens=8)
    status, _, err = _call(capsys, "translate", "--model", path, *flags, "a")
    assert status == 2, err
    assert err.count("\n") == 1 and message in err, err
