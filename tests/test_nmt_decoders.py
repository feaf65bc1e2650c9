"""The NMT example's decoding signatures and flags (issue 13).

`nbest`, `sample` and `complete` signatures; the export options coverage
penalty, TFA length-penalty convention, unknown-word replacement and
ensembles; `translate --n-best/--sample/--prefix` and `export --ensemble`.

Two tiny runs (300 generated dates, one epoch, 8 units, as in
`test_nmt_beam.py`) are trained once for the module, from the same data
(so the same vocabularies) with different weight seeds. Their translations
are poor, which these tests do not mind: they check how the decoders
relate, not how good they are.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from keras_attention import serving  # noqa: E402
from examples.nmt import cli  # noqa: E402
from keras_attention.translator import export_run  # noqa: E402
from examples.nmt import run as run_lib  # noqa: E402
from keras_attention.serving import serving_ops  # noqa: E402
from examples.nmt import text as text_lib  # noqa: E402
from keras_attention.serving import TranslatorModule  # noqa: E402
from keras_attention import decoding  # noqa: E402
from tests import tiny_runs  # noqa: E402

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

MAX_OUTPUT_TOKENS = tiny_runs.NMT_MAX_OUTPUT_TOKENS
SENTENCES = [
    "vendredi 20 octobre 1933",
    "",
    "Freitag, 20. Oktober 1933",
    "3. März 1999",
    "domingo, 25 de diciembre de 2050",
]

FRESH_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401, registers the tensorflow-text ops
assert not any(m.startswith(("keras_attention", "examples")) for m in sys.modules)
sig = tf.saved_model.load(sys.argv[1]).signatures
texts = tf.constant(json.loads(sys.argv[2]))
nbest = sig["nbest"](text=texts, k=tf.constant(3))
beam = sig["beam"](text=texts, beam_width=tf.constant(3))
def sample(seed):
    return sig["sample"](text=texts, temperature=tf.constant(1.0),
                         top_k=tf.constant(0), top_p=tf.constant(0.95),
                         seed=tf.constant(seed, tf.int64))
a, b = sample(5), sample(5)
complete = sig["complete"](text=texts, prefix=tf.fill(tf.shape(texts), "1933"),
                           beam_width=tf.constant(2))
print(json.dumps({
    "signatures": sorted(sig),
    "nbest_shapes": {k: v.shape.as_list() for k, v in nbest.items()},
    "nbest_first": [t.decode() for t in nbest["translation"][:, 0].numpy()],
    "nbest_scores": nbest["scores"].numpy().tolist(),
    "beam": [t.decode() for t in beam["translation"].numpy()],
    "beam_scores": beam["scores"].numpy().tolist(),
    "same_seed": bool(np.all(a["translation"].numpy() == b["translation"].numpy())),
    "sample_scores": a["scores"].numpy().tolist(),
    "complete": [t.decode() for t in complete["translation"].numpy()],
}))
"""


@pytest.fixture(scope="module")
def runs():
    """Two tiny runs of the same data, weight seeds 0 and 1."""
    return tiny_runs.nmt_run(0)[0], tiny_runs.nmt_run(1)[0]


@pytest.fixture(scope="module")
def signatures(runs):
    path = tiny_runs.nmt_export()
    return path, tf.saved_model.load(path).signatures


def _numpy(out):
    return {k: v.numpy() for k, v in out.items()}


def _texts(texts=SENTENCES):
    return tf.constant(texts, tf.string)


def _beam(sig, width, texts=SENTENCES):
    return _numpy(sig["beam"](text=_texts(texts), beam_width=tf.constant(width)))


def _nbest(sig, k, texts=SENTENCES):
    return _numpy(sig["nbest"](text=_texts(texts), k=tf.constant(k)))


def _sample(sig, seed, temperature=1.0, top_k=0, top_p=1.0, texts=SENTENCES):
    return _numpy(sig["sample"](
        text=_texts(texts), temperature=tf.constant(temperature, tf.float32),
        top_k=tf.constant(top_k), top_p=tf.constant(top_p, tf.float32),
        seed=tf.constant(seed, tf.int64),
    ))


def _complete(sig, prefixes, width, texts=SENTENCES):
    return _numpy(sig["complete"](
        text=_texts(texts), prefix=tf.constant(prefixes, tf.string),
        beam_width=tf.constant(width),
    ))


def _tokens(out, i, j=None):
    row = out["target_tokens"][i] if j is None else out["target_tokens"][i, j]
    n = out["target_lengths"][i] if j is None else out["target_lengths"][i, j]
    return [t.decode() for t in row[: int(n)]]


def test_new_signatures_in_a_fresh_process(signatures):
    path, _ = signatures
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, path, json.dumps(SENTENCES)],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), cwd="/",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["signatures"] == [
        "beam", "complete", "greedy", "nbest", "sample", "serving_default"
    ]
    shapes = out["nbest_shapes"]
    n = len(SENTENCES)
    assert shapes["translation"] == shapes["scores"] == [n, 3]
    assert shapes["target_tokens"][:2] == [n, 3]
    assert shapes["attention"][:2] == [n, 3] and len(shapes["attention"]) == 4
    assert shapes["source_tokens"][0] == n
    assert out["nbest_first"] == out["beam"]
    np.testing.assert_allclose(
        np.array(out["nbest_scores"])[:, 0], out["beam_scores"], atol=1e-5
    )
    assert out["same_seed"] and np.all(np.isfinite(out["sample_scores"]))
    # A text without a token translates to "" (prefix or not).
    assert all(
        t.startswith("1933") if s else t == ""
        for t, s in zip(out["complete"], SENTENCES)
    )


@pytest.mark.parametrize("k", [1, 3, 5])
def test_nbest_first_is_the_beam_result_and_sorted(signatures, k):
    _, sig = signatures
    nbest, beam = _nbest(sig, k), _beam(sig, k)
    np.testing.assert_array_equal(nbest["translation"][:, 0], beam["translation"])
    np.testing.assert_allclose(nbest["scores"][:, 0], beam["scores"], atol=1e-5)
    np.testing.assert_allclose(nbest["log_probs"][:, 0], beam["log_probs"], atol=1e-5)
    for i in range(len(SENTENCES)):
        assert _tokens(nbest, i, 0) == _tokens(beam, i)
        n = int(beam["target_lengths"][i])
        np.testing.assert_allclose(
            nbest["attention"][i, 0, :n], beam["attention"][i, :n], atol=1e-5
        )
    assert np.all(np.diff(nbest["scores"], axis=1) <= 1e-6)  # best first
    # Distinct hypotheses.
    for i in range(len(SENTENCES)):
        hyps = [tuple(_tokens(nbest, i, j)) for j in range(k)]
        # A text without a token: "" (no decoding) for every hypothesis.
        assert len(set(hyps)) == (k if SENTENCES[i] else 1)


def test_nbest_k_is_clamped(signatures):
    _, sig = signatures
    assert _nbest(sig, 0)["scores"].shape == (len(SENTENCES), 1)
    wide = _nbest(sig, 10**6, SENTENCES[:2])
    assert wide["scores"].shape == (2, serving.MAX_BEAM_WIDTH)
    empty = _nbest(sig, 3, [])
    assert empty["translation"].shape == (0, 3)


def test_sample_is_seedable_and_greedy_at_zero_temperature(signatures):
    _, sig = signatures
    greedy = _numpy(sig["greedy"](text=_texts()))
    a, b = _sample(sig, 3), _sample(sig, 3)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    draws = {tuple(_sample(sig, seed)["translation"]) for seed in range(4)}
    assert len(draws) > 1  # the seed matters
    unseeded = {tuple(_sample(sig, -1)["translation"]) for _ in range(3)}
    assert len(unseeded) > 1  # a negative seed draws anew
    for settings in ({"temperature": 0.0}, {"top_k": 1}, {"top_p": 1e-6}):
        out = _sample(sig, 1, **settings)
        np.testing.assert_array_equal(out["translation"], greedy["translation"])
        # One token of probability 1 under the sampling distribution.
        np.testing.assert_allclose(out["scores"], 0.0, atol=1e-5)
    assert np.all(a["scores"] <= 0.0) and np.all(np.isfinite(a["scores"]))


def test_sample_top_k_draws_only_among_the_k_best(runs):
    """Each drawn token is among the `top_k` most probable of its step, by
    the teacher-forced training model."""
    seq2seq, source, target, _ = run_lib.load_trained(runs[0])
    module = TranslatorModule(seq2seq, source, target, max_output_tokens=8)
    with open(run_lib.run_path(runs[0], run_lib.TARGET_VOCAB)) as f:
        ids = {t: i for i, t in enumerate(f.read().splitlines())}
    texts = SENTENCES[:1] * 6
    out = _numpy(module.translate_sample(
        _texts(texts), tf.constant(2.0), tf.constant(3), tf.constant(1.0),
        tf.constant(11, tf.int64),
    ))
    source_ids = source.tokenize(_texts(texts[:1])).to_tensor().numpy()
    for i in range(len(texts)):
        tgt = [ids[t] for t in _tokens(out, i)]
        inputs = {"source_ids": source_ids.astype("int32"),
                  "target_in": np.array([[text_lib.START_ID] + tgt], "int32")}
        logits = np.asarray(seq2seq(inputs)["logits"])[0]
        for t, token in enumerate(tgt):
            assert token in np.argsort(logits[t])[-3:]


def test_complete_starts_with_the_prefix(runs, signatures):
    _, sig = signatures
    _, target = run_lib.make_processors(runs[0], run_lib.load_run_config(runs[0])[1])
    prefixes = ["1933", "", "October 20", "march", ""]
    for width in (1, 3):
        out = _complete(sig, prefixes, width)
        for i, prefix in enumerate(prefixes):
            ids = target.tokenize(tf.constant([prefix]))[0, 1:-1].numpy()
            expected = [t.decode() for t in target.token_strings(ids).numpy()]
            assert _tokens(out, i)[: len(expected)] == expected
            if prefix:
                assert out["translation"][i].decode().startswith(
                    target.detokenize(ids[None]).numpy()[0].decode())
        # No prefix: the beam result.
        beam = _beam(sig, width)
        for i in (1, 4):
            assert _tokens(out, i) == _tokens(beam, i)
            np.testing.assert_allclose(out["scores"][i], beam["scores"][i], atol=1e-5)
    empty = _complete(sig, [""] * 3, 2, SENTENCES[:3])
    np.testing.assert_array_equal(empty["translation"], _beam(sig, 2, SENTENCES[:3])["translation"])
    # One prefix for every text.
    one = _complete(sig, ["1933"], 2, SENTENCES[:3])
    every = _complete(sig, ["1933"] * 3, 2, SENTENCES[:3])
    np.testing.assert_array_equal(one["translation"], every["translation"])


def _direct_beam(module, texts, width, **options):
    """The library's beam search on the module's model, outside any
    signature."""
    source_ids = module.source_processor.tokenize(tf.constant(texts))
    dense = tf.cast(source_ids.to_tensor(0), tf.int32)
    seq2seq = module.seq2seq
    lengths = tf.reduce_sum(tf.cast(dense != 0, tf.int32), axis=1)
    return decoding.beam_search_decode(
        seq2seq.step, tf.fill([len(texts)], text_lib.START_ID),
        seq2seq.encode(dense), text_lib.END_ID,
        tf.minimum(2 * lengths + 10, MAX_OUTPUT_TOKENS), beam_width=width,
        length_penalty=serving.LENGTH_PENALTY, **options,
    )


def test_beam_options_are_stored_in_the_export(runs, tmp_path):
    """Both options in one export (each changes the scores: the decoding
    tests show it; here, that the export keeps them)."""
    options = {"coverage_penalty": 0.4, "convention": "tfa"}
    path = export_run(
        runs[0], str(tmp_path / "export"), max_output_tokens=MAX_OUTPUT_TOKENS,
        **options,
    )
    sig = tf.saved_model.load(path).signatures
    texts = [s for s in SENTENCES if s]
    seq2seq, source, target, _ = run_lib.load_trained(runs[0])
    module = TranslatorModule(seq2seq, source, target, MAX_OUTPUT_TOKENS)
    for width in (2, 4):
        out = _beam(sig, width, texts)
        direct = _direct_beam(module, texts, width, **options)
        np.testing.assert_allclose(out["scores"], direct["scores"].numpy(), atol=1e-5)
        np.testing.assert_allclose(out["log_probs"], direct["log_probs"].numpy(), atol=1e-5)
        nbest = _nbest(sig, width, texts)
        np.testing.assert_allclose(nbest["scores"][:, 0], out["scores"], atol=1e-5)
    plain = _direct_beam(module, texts, 4)
    assert not np.allclose(plain["scores"].numpy(), _beam(sig, 4, texts)["scores"])


def test_replace_unknown_copies_the_most_attended_source_word(runs, tmp_path):
    """A model biased to output only `[UNK]`: every output token becomes the
    source word of its attention's argmax."""
    seq2seq, source, target, _ = run_lib.load_trained(runs[0])
    bias = seq2seq.output_projection.bias
    bias.assign(bias.numpy() + 100.0 * (np.arange(bias.shape[0]) == text_lib.UNK_ID))
    texts = ["vendredi 20 octobre 1933", "Freitag жжж 1933", "", "3. März 1999"]
    plain = TranslatorModule(seq2seq, source, target, max_output_tokens=6)
    before = _numpy(plain.translate(_texts(texts)))
    assert all(t == b"[UNK]" for row in before["target_tokens"] for t in row if t)
    module = TranslatorModule(
        seq2seq, source, target, max_output_tokens=6, replace_unknown=True
    )
    path = serving.export_saved_model(module, str(tmp_path / "unk"))
    sig = tf.saved_model.load(path).signatures
    words = serving_ops.source_words(
        source, _texts(texts), source.tokenize(_texts(texts))
    ).numpy()
    deduplicated = [w for j, w in enumerate(words[1]) if j == 0 or w != words[1, j - 1]]
    assert deduplicated[:4] == ["freitag".encode(), "жжж".encode(), b"1933", b""]
    for name, out in (
        ("greedy", _numpy(sig["greedy"](text=_texts(texts)))),
        ("beam", _beam(sig, 3, texts)),
    ):
        for i in range(len(texts)):
            n = int(out["target_lengths"][i])
            attention = out["attention"][i, :n]
            real = words[i, : attention.shape[1]] != b""
            expected = [
                words[i, np.argmax(np.where(real, row, -1.0))] for row in attention
            ]
            if not real.any():  # the empty text: nothing to copy
                expected = [b"[UNK]"] * n
            assert list(out["target_tokens"][i, :n]) == expected, name
            assert out["translation"][i] == b" ".join(expected), name
        # The decoding itself did not change.
        np.testing.assert_allclose(out["scores"][:2], (
            before if name == "greedy" else _numpy(
                plain.translate_beam(_texts(texts), tf.constant(3)))
        )["scores"][:2], atol=1e-5)


def _xla_compiled_functions(path):
    """Names of the functions of a SavedModel that XLA must compile."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    library = saved.meta_graphs[0].graph_def.library
    return [
        f.signature.name for f in library.function
        if "_XlaMustCompile" in f.attr and f.attr["_XlaMustCompile"].b
    ]


def _assert_same_outputs(a, b):
    np.testing.assert_array_equal(a["translation"], b["translation"])
    np.testing.assert_array_equal(a["target_tokens"], b["target_tokens"])
    np.testing.assert_allclose(a["scores"], b["scores"], atol=1e-4)
    np.testing.assert_allclose(a["attention"], b["attention"], atol=1e-5)


def test_ensemble_of_a_run_with_itself_equals_the_run(runs, signatures, tmp_path):
    """Exported with `--xla step` too: the step, XLA-compiled, decodes as
    the plain export does."""
    _, sig = signatures
    path = str(tmp_path / "self")
    assert cli.main(
        ["export", "--run", runs[0], "--out", path, "--ensemble", runs[0],
         "--max-output-tokens", str(MAX_OUTPUT_TOKENS), "--xla", "step"]
    ) == 0
    assert _xla_compiled_functions(path)
    assert not _xla_compiled_functions(signatures[0])
    twice = tf.saved_model.load(path).signatures
    _assert_same_outputs(
        _numpy(sig["greedy"](text=_texts())),
        _numpy(twice["greedy"](text=_texts())),
    )
    _assert_same_outputs(_beam(sig, 3), _beam(twice, 3))


def test_xla_decode_export_translates_as_the_plain_one(signatures):
    """`export --xla decode` (the session's shared export of the run,
    `tiny_runs.nmt_xla_export`): the encoder and the whole loop are one XLA
    function (per-sentence limits in a static width); every signature's
    outputs are the plain export's, beam widths given as inputs included."""
    _, sig = signatures
    path = tiny_runs.nmt_xla_export()
    assert _xla_compiled_functions(path)
    xla = tf.saved_model.load(path).signatures
    _assert_same_outputs(
        _numpy(sig["greedy"](text=_texts())),
        _numpy(xla["greedy"](text=_texts())),
    )
    for width in (1, 3):
        _assert_same_outputs(_beam(sig, width), _beam(xla, width))
    _assert_same_outputs(_nbest(sig, 2), _nbest(xla, 2))
    prefixes = ["1933", "", "19", "", "x"]
    _assert_same_outputs(_complete(sig, prefixes, 2), _complete(xla, prefixes, 2))
    # Temperature 0 is greedy; the draws themselves depend on the buffer
    # width (a static one here), so seeded samples differ from the plain
    # export's but repeat and stay valid.
    _assert_same_outputs(_sample(sig, 1, temperature=0.0), _sample(xla, 1, temperature=0.0))
    first, again = _sample(xla, 5), _sample(xla, 5)
    _assert_same_outputs(first, again)
    assert np.all(first["target_lengths"] <= MAX_OUTPUT_TOKENS)
    # An empty batch too.
    empty = _numpy(xla["greedy"](text=_texts([])))
    assert empty["translation"].shape == (0,)


def test_ensemble_averages_the_members_probabilities(runs):
    """`export --ensemble` (the session's shared export,
    `tiny_runs.nmt_ensemble_export`): the greedy log-probability of the
    ensemble's translation is the sum of `log(mean(p_a, p_b))` of its
    tokens by the teacher-forced members."""
    sig = tf.saved_model.load(tiny_runs.nmt_ensemble_export()).signatures
    texts = [s for s in SENTENCES if s]
    out = _numpy(sig["greedy"](text=_texts(texts)))
    members = [run_lib.load_trained(r) for r in runs]
    source = members[0][1]
    with open(run_lib.run_path(runs[0], run_lib.TARGET_VOCAB)) as f:
        ids = {t: i for i, t in enumerate(f.read().splitlines())}
    # (A module must outlive its tf.function's call: keep them referenced.)
    modules = [TranslatorModule(*m[:3], MAX_OUTPUT_TOKENS) for m in members]
    alone = [_numpy(m.translate(_texts(texts))) for m in modules]
    assert any(not np.allclose(out["log_probs"], a["log_probs"]) for a in alone)
    for i, text in enumerate(texts):
        tgt = [ids[t] for t in _tokens(out, i)]
        src = source.tokenize(_texts([text])).to_tensor().numpy().astype("int32")
        limit = min(2 * src.shape[1] + 10, MAX_OUTPUT_TOKENS)
        forced = tgt + ([text_lib.END_ID] if len(tgt) < limit else [])
        inputs = {"source_ids": src,
                  "target_in": np.array([[text_lib.START_ID] + forced], "int32")}
        probs = [
            tf.nn.softmax(m[0](inputs)["logits"]).numpy()[0] for m in members
        ]
        mean = (probs[0] + probs[1]) / 2
        expected = sum(np.log(mean[t, tok]) for t, tok in enumerate(forced))
        np.testing.assert_allclose(out["log_probs"][i], expected, rtol=1e-4, atol=1e-4)


def test_ensemble_rejects_different_vocabularies(runs, tmp_path):
    other = str(tmp_path / "other")
    shutil.copytree(runs[1], other)
    # The target vocabulary (in run.json's tokenizers section) with its last
    # two tokens swapped: the same size, other ids.
    path = run_lib.run_path(other, run_lib.RUN_CONFIG)
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    vocabulary = config["tokenizers"]["target"]["config"]["vocabulary"]
    vocabulary[-1], vocabulary[-2] = vocabulary[-2], vocabulary[-1]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    with pytest.raises(ValueError, match="same vocabularies") as info:
        export_run(runs[0], str(tmp_path / "x"), ensemble=[runs[1], other])
    assert repr(other) in str(info.value) and repr(runs[1]) not in str(info.value)


# ----------------------------------------------------------------------
# The command line.


def test_translate_n_best_prints_k_scored_lines(runs, signatures, capsys):
    path, sig = signatures
    texts = ["vendredi 20 octobre 1933", "3. März 1999"]
    assert cli.main(["translate", "--model", path, "--n-best", "3"] + texts) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 6
    nbest = _nbest(sig, 3, texts)
    for i, text in enumerate(texts):
        rows = [line.split("\t") for line in lines[3 * i : 3 * i + 3]]
        assert [r[0] for r in rows] == [text] * 3
        assert [r[1] for r in rows] == ["1", "2", "3"]
        np.testing.assert_allclose([float(r[2]) for r in rows], nbest["scores"][i], atol=1e-4)
        assert [r[3] for r in rows] == [t.decode() for t in nbest["translation"][i]]


def test_translate_sample_with_a_seed_repeats(signatures, capsys):
    path, sig = signatures
    args = ["translate", "--model", path, "--sample", "--temperature", "1.5",
            "--top-k", "5", "--top-p", "0.9", "--seed", "4"] + SENTENCES[:3]
    assert cli.main(args) == 0
    first = capsys.readouterr().out
    assert cli.main(args) == 0
    assert capsys.readouterr().out == first
    expected = _sample(sig, 4, 1.5, 5, 0.9, SENTENCES[:3])["translation"]
    assert [line.split("\t")[1] for line in first.splitlines()] == [
        t.decode() for t in expected]


def test_translate_prefix(signatures, capsys):
    path, sig = signatures
    assert cli.main(["translate", "--model", path, "--prefix", "1933",
                     "--beam-width", "2", "--attention", SENTENCES[0]]) == 0
    printed = capsys.readouterr().out
    out = _complete(sig, ["1933"], 2, SENTENCES[:1])
    assert printed.startswith(f"{SENTENCES[0]}\t{out['translation'][0].decode()}\n")
    grid = printed.splitlines()[1]  # the attention grid's source tokens
    assert grid.split()[0] == "v" and grid.split()[-1] == "[END]"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--n-best", "0"], "--n-best"),
        (["--seed", "3"], "need --sample"),
        (["--sample", "--top-p", "0"], "--top-p"),
        (["--sample", "--seed", "-2"], "--seed"),
    ],
)
def test_translate_rejects_bad_decoding_flags(signatures, capsys, flags, message):
    path, _ = signatures
    assert cli.main(["translate", "--model", path] + flags + ["3"]) == 2
    assert message in capsys.readouterr().err


def test_decoding_flags_are_exclusive(signatures, capsys):
    path, _ = signatures
    with pytest.raises(SystemExit):
        cli.main(["translate", "--model", path, "--n-best", "2", "--sample", "3"])
    assert "not allowed with" in capsys.readouterr().err


def test_old_exports_name_the_missing_signature(runs, tmp_path, capsys):
    seq2seq, source, target, _ = run_lib.load_trained(runs[0])
    module = TranslatorModule(seq2seq, source, target, max_output_tokens=4)
    old = str(tmp_path / "old")
    tf.saved_model.save(module, old, signatures={"serving_default": module.translate})
    assert cli.main(["translate", "--model", old, "--n-best", "2", "3"]) == 2
    assert "no `nbest` signature" in capsys.readouterr().err


def test_translator_module_checks_its_arguments(runs):
    seq2seq, source, target, _ = run_lib.load_trained(runs[0])
    with pytest.raises(ValueError, match="`seq2seq` must be a model"):
        TranslatorModule([], source, target)
    with pytest.raises(ValueError, match="`xla` must be one of"):
        TranslatorModule(seq2seq, source, target, xla="yes")
    with pytest.raises(ValueError, match="`xla` must be one of"):
        TranslatorModule(seq2seq, source, target, xla=True)


def test_serving_xla_benchmark_times_every_variant(runs, signatures):
    """`benchmarks.serving_xla` on the tiny run's export (as all three
    variants: the exports themselves are `test_xla_decode_export_...`'s)."""
    from benchmarks import serving_xla

    texts = serving_xla.read_texts(runs[0])
    assert texts and all("\t" not in t and t.strip() for t in texts)
    _, sig = signatures
    rows = serving_xla.measure(
        dict.fromkeys(serving_xla.VARIANTS, sig), texts, [1, 3], 2, rounds=2
    )
    assert [(r["decoder"], r["batch"]) for r in rows] == [
        ("greedy", 1), ("beam 2", 1), ("greedy", 3), ("beam 2", 3)
    ]
    for row in rows:
        assert set(row["sentences_per_s"]) == set(serving_xla.VARIANTS)
        assert set(row["vs_plain"]) == {"xla_step", "xla_decode"}
        assert all(v > 0 for v in row["sentences_per_s"].values())
        assert all(v > 0 for v in row["first_call_s"].values())
    table = serving_xla.markdown({"rows": rows}).splitlines()
    assert len(table) == 2 + len(rows) and table[2].startswith("| greedy | 1 |")


def test_serving_xla_benchmark_reads_inputs_and_checks_its_flags(tmp_path):
    from benchmarks import serving_xla

    path = tmp_path / "texts.txt"
    path.write_text("one\tx\n\n  \ntwo\n", encoding="utf-8")
    assert serving_xla.read_texts("unused", str(path)) == ["one", "two"]
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="No input text"):
        serving_xla.read_texts("unused", str(path))
    with pytest.raises(SystemExit):
        serving_xla.main(["--run", "r", "--batches", "0"])
