"""The export's default compilation (`TranslatorModule(xla="auto")`).

`"auto"` compiles every signature's decoding with XLA (the rule of
`serving.compilation.resolve_xla`); its outputs are the plain export's
(tokens exactly, scores and attention to 1e-5), for every signature, at
batch sizes and source lengths that fall in and between the compiled
buckets, and the SavedModel loads and runs in a fresh process with plain
TensorFlow and tensorflow_text (no `keras_attention`).
"""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.tf_only

tf = pytest.importorskip("tensorflow")

from keras_attention.seq2seq import Translator  # noqa: E402
from keras_attention.serving import compilation  # noqa: E402
from keras_attention.serving import TranslatorModule  # noqa: E402

WORDS = dict(le="the", un="a", petit="small", chat="cat", chien="dog",
             noir="black", grand="big", blanc="white")
TEXTS = ["le petit chat noir", "un chien", "le grand chien blanc noir",
         "un chat", "le chat noir petit grand blanc un chien le"]


def _corpus():
    rng = np.random.default_rng(0)
    sources = [" ".join(rng.choice(list(WORDS), rng.integers(2, 6)))
               for _ in range(96)]
    return sources, [" ".join(WORDS[w] for w in s.split()) for s in sources]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    keras.utils.set_random_seed(0)
    sources, targets = _corpus()
    model = Translator.from_texts(
        sources, targets, source_tokenizer="whitespace",
        target_tokenizer="whitespace", units=16, embedding_dim=16,
        dropout=0.0)
    model.compile(keras.optimizers.Adam(0.02))
    model.fit(sources, targets, batch_size=16, epochs=8, verbose=0)
    root = tmp_path_factory.mktemp("exports")
    paths = {"default": model.export(str(root / "default")),
             "plain": model.export(str(root / "plain"), xla=None)}
    return paths, {k: tf.saved_model.load(p).signatures
                   for k, p in paths.items()}


def _xla_functions(path):
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return [f.signature.name
            for f in saved.meta_graphs[0].graph_def.library.function
            if "_XlaMustCompile" in f.attr and f.attr["_XlaMustCompile"].b]


def test_the_rule():
    assert compilation.resolve_xla("auto") == (
        "decode" if tf.test.is_built_with_xla() else None)
    assert compilation.resolve_xla(None) is None
    assert compilation.resolve_xla("none") is None
    assert compilation.resolve_xla("step") == "step"
    for bad in ("yes", True, "XLA"):
        with pytest.raises(ValueError, match="`xla` must be one of"):
            compilation.resolve_xla(bad)


def test_buckets():
    for texts, rows in ((0, 1), (1, 1), (3, 4), (4, 4), (64, 64), (65, 128)):
        padded = compilation.pad_batch(tf.constant([b"x"] * texts, tf.string))
        assert padded.shape[0] == rows
        assert list(padded.numpy()[texts:]) == [b""] * (rows - texts)
    for length, padded in ((1, 8), (8, 8), (9, 16)):
        ids = compilation.pad_source(tf.ones((2, length), tf.int32)).numpy()
        assert ids.shape == (2, padded) and ids[:, length:].sum() == 0
    rows = compilation.pad_rows(tf.constant([[1, 2], [3, 4]]), 3).numpy()
    np.testing.assert_array_equal(rows, [[1, 2], [3, 4], [0, 0]])
    np.testing.assert_array_equal(
        compilation.pad_rows(tf.constant([5, 6, 7]), 2).numpy(), [5, 6])


def _calls(texts):
    text = tf.constant(texts, tf.string)
    width = tf.constant(3)
    return {
        "greedy": lambda s: s["greedy"](text=text),
        "beam": lambda s: s["beam"](text=text, beam_width=width),
        "nbest": lambda s: s["nbest"](text=text, k=tf.constant(2)),
        "complete": lambda s: s["complete"](
            text=text, prefix=tf.constant(["the"]), beam_width=width),
        "sample": lambda s: s["sample"](
            text=text, temperature=tf.constant(0.0), top_k=tf.constant(0),
            top_p=tf.constant(1.0), seed=tf.constant(1, tf.int64)),
    }


@pytest.mark.slow
@pytest.mark.parametrize("count", [0, 3, 5])
def test_default_export_is_xla_and_decodes_as_the_plain_one(exports, count):
    paths, signatures = exports
    assert _xla_functions(paths["default"])
    assert not _xla_functions(paths["plain"])
    texts = (TEXTS * 2)[:count]
    for name, call in _calls(texts).items():
        fast = {k: v.numpy() for k, v in call(signatures["default"]).items()}
        plain = {k: v.numpy() for k, v in call(signatures["plain"]).items()}
        assert set(fast) == set(plain), name
        for key in ("translation", "target_tokens", "source_tokens",
                    "target_lengths"):
            np.testing.assert_array_equal(fast[key], plain[key], name)
        for key in ("scores", "log_probs", "attention"):
            assert fast[key].shape == plain[key].shape, (name, key)
            np.testing.assert_allclose(fast[key], plain[key], atol=1e-5,
                                       err_msg=f"{name} {key}")


def test_default_export_serves_in_a_fresh_process(exports):
    paths, signatures = exports
    expected = signatures["plain"]["beam"](
        text=tf.constant(TEXTS), beam_width=tf.constant(2))["translation"]
    script = (
        "import sys, tensorflow as tf, tensorflow_text\n"
        "s = tf.saved_model.load(sys.argv[1]).signatures\n"
        "out = s['beam'](text=tf.constant(sys.argv[2:]),"
        " beam_width=tf.constant(2))\n"
        "assert 'keras_attention' not in sys.modules\n"
        "print('|'.join(t.decode() for t in out['translation'].numpy()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, paths["default"], *TEXTS],
        capture_output=True, text=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().split("|") == [
        t.decode() for t in expected.numpy()]


@pytest.mark.slow
def test_an_ensemble_compiles_too(exports, tmp_path):
    """Two members (the same model twice) under the default compilation:
    the translations of the one model."""
    paths, signatures = exports
    keras.utils.set_random_seed(0)
    sources, targets = _corpus()
    model = Translator.from_texts(
        sources, targets, source_tokenizer="whitespace",
        target_tokenizer="whitespace", units=8, embedding_dim=8)
    source, target = model.framed_tokenizers
    module = TranslatorModule([model.seq2seq, model.seq2seq], source, target,
                              max_output_tokens=12)
    assert module.xla == "decode"
    single = TranslatorModule(model.seq2seq, source, target,
                              max_output_tokens=12, xla=None)
    text = tf.constant(TEXTS[:2])
    width = tf.constant(2)
    np.testing.assert_array_equal(
        module.translate_beam(text, width)["target_tokens"].numpy(),
        single.translate_beam(text, width)["target_tokens"].numpy())
