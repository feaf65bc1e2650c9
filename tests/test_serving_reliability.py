"""Reliability of the exported translator (`TranslatorModule`, the
signatures of `export_saved_model`): empty batches on every signature,
`text` of another rank refused at the call, n-best lists without `[PAD]`
or `[START]`, and a load without custom-gradient warnings."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.tf_only

SOURCES = ["a b c", "b c d", "c d e f", "a a b", "d e"]
TARGETS = ["x y", "y z", "z w v", "x x", "w"]


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    from keras_attention.seq2seq import Translator

    translator = Translator.from_texts(
        SOURCES, TARGETS, source_tokenizer="whitespace",
        target_tokenizer="whitespace", units=8, embedding_dim=8,
    )
    return translator.export(str(tmp_path_factory.mktemp("sm") / "model"))


@pytest.fixture(scope="module")
def signatures(saved_model):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops)

    return tf.saved_model.load(saved_model).signatures


def _inputs(name, text):
    import tensorflow as tf

    text = tf.constant(text, tf.string)
    more = {
        "serving_default": {},
        "greedy": {},
        "beam": {"beam_width": tf.constant(3)},
        "nbest": {"k": tf.constant(3)},
        "sample": {"temperature": tf.constant(1.0), "top_k": tf.constant(0),
                   "top_p": tf.constant(1.0),
                   "seed": tf.constant(1, tf.int64)},
        "complete": {"prefix": tf.constant([""]),
                     "beam_width": tf.constant(2)},
    }[name]
    return {"text": text, **more}


NAMES = ["serving_default", "greedy", "beam", "nbest", "sample", "complete"]


@pytest.mark.parametrize("name", NAMES)
def test_empty_batch_gives_empty_outputs(signatures, name):
    import tensorflow as tf

    inputs = _inputs(name, tf.zeros([0], tf.string))
    if name == "complete":
        inputs["prefix"] = tf.zeros([0], tf.string)
    out = signatures[name](**inputs)
    assert out["translation"].shape[0] == 0
    assert out["scores"].shape[0] == 0
    rank = 2 if name == "nbest" else 1
    assert len(out["translation"].shape) == rank


@pytest.mark.parametrize("name", ["serving_default", "beam", "complete"])
@pytest.mark.parametrize("text", ["a b", [["a b"]]], ids=["scalar", "rank2"])
def test_text_of_another_rank_is_refused_by_name(signatures, name, text):
    import tensorflow as tf

    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        signatures[name](**_inputs(name, text))
    message = str(info.value)
    assert "Shape of tensor text" in message
    assert "expected shape [?]" in message


def test_nbest_never_holds_pad_or_start(signatures):
    import tensorflow as tf

    out = signatures["nbest"](
        text=tf.constant(["a b c", "d", "zz"]), k=tf.constant(16)
    )
    tokens = out["target_tokens"].numpy()
    lengths = out["target_lengths"].numpy()
    for row, length in zip(tokens.reshape(-1, tokens.shape[-1]),
                           lengths.reshape(-1)):
        kept = [t.decode() for t in row[:length]]
        assert "[PAD]" not in kept and "[START]" not in kept, kept
        # Every token counted is a token string (nothing was dropped).
        assert "" not in kept, kept


def test_load_prints_no_custom_gradient_warning(saved_model):
    code = (
        "import tensorflow as tf, tensorflow_text\n"
        f"tf.saved_model.load({saved_model!r})\n"
    )
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [
        line for line in done.stderr.splitlines()
        if "unsaved custom gradients" in line
    ]
    assert not lines, lines


@pytest.mark.parametrize("name", NAMES)
def test_empty_text_translates_to_empty(signatures, name):
    """A blank text gets "" and a zero score, beside a text that decodes
    (the untrained model would otherwise answer a blank with words)."""
    import numpy as np

    inputs = _inputs(name, ["", "chat"])
    if name == "complete":
        import tensorflow as tf

        inputs["prefix"] = tf.constant(["", ""])
    out = signatures[name](**inputs)
    translations = np.asarray(out["translation"].numpy())
    assert np.all(translations[0] == b"")
    assert np.all(np.asarray(out["scores"].numpy())[0] == 0.0)
    assert np.all(np.asarray(out["target_lengths"].numpy())[0] == 0)


def test_loading_without_tensorflow_text_says_what_to_install(
    monkeypatch, tmp_path
):
    """Both loaders (the library's and the command line's one-signature
    loader) ask for tensorflow-text before touching the SavedModel."""
    from keras_attention.cli.saved_model import Signature
    from keras_attention.serving import load_signatures

    # `None` in sys.modules makes `import tensorflow_text` raise ImportError.
    monkeypatch.setitem(sys.modules, "tensorflow_text", None)
    for load in (
        lambda: load_signatures(str(tmp_path), ["greedy"]),
        lambda: Signature(str(tmp_path), "greedy"),
    ):
        with pytest.raises(ImportError, match="pip install tensorflow-text"):
            load()
