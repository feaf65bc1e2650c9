"""The NMT example's WordPiece tokenizers (`keras_attention.tokenizers.
WordPieceTokenizer` over a run's vocabulary file): vocabulary, round trip,
limits."""

import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from examples.nmt import corpus as corpus_lib  # noqa: E402
from examples.nmt import dates  # noqa: E402
from examples.nmt import text  # noqa: E402

pytestmark = pytest.mark.tf_only

SENTENCES = [
    "Freitag, 20. Oktober 1933",
    "vendredi 20 octobre 1933",
    "Hello world!",
    "Where is the café?",
    "The cat sat on the mat.",
    "Das Haus ist grün.",
    "I'm tired, aren't you?",
    "L'homme (le vieux) dort.",
] * 5


@pytest.fixture(scope="module")
def processors(tmp_path_factory):
    root = tmp_path_factory.mktemp("vocab")
    out = {}
    for lower in (True, False):
        vocab = text.learn_vocabulary(SENTENCES, 200, lower_case=lower)
        path = str(root / f"vocab_{lower}.txt")
        text.save_vocabulary(vocab, path)
        out[lower] = _framed(path, lower, max_tokens=64)
        out[lower].path = path
    return out


def _framed(path, lower_case=True, add_start=True, max_tokens=64):
    tokenizer = text.load_tokenizer(path, lower_case=lower_case)
    return tokenizer.framed(add_start, True, max_tokens)


def _strings(tensor):
    return [t.decode("utf-8") for t in tensor.numpy()]


def test_vocabulary_has_reserved_tokens_first(processors):
    vocab = text.load_vocabulary(processors[True].path)
    assert tuple(vocab[:4]) == text.RESERVED_TOKENS
    assert len(vocab) == len(set(vocab))


def test_tensorflow_pretokenization_matches_python_mirror():
    from keras_attention.tokenizers import text_ops

    corpus = dates.generate_dates(300, seed=7)
    sentences = [s for pair in corpus.pairs for s in pair] + SENTENCES
    for lower in (True, False):
        spaced = text_ops.whitespace_words(sentences, lower)
        parts = text_ops.split_punctuation(spaced.flat_values)
        words = tf.RaggedTensor.from_row_splits(parts, spaced.row_splits)
        words = words.merge_dims(1, 2).to_list()
        for sentence, got in zip(sentences, words):
            assert [w.decode("utf-8") for w in got] == corpus_lib.pretokenize(
                sentence, lower_case=lower
            )


@pytest.mark.parametrize("lower", [True, False])
def test_round_trip(processors, lower):
    processor = processors[lower]
    sentences = SENTENCES[:8]
    ids = processor.tokenize(sentences)
    assert all(row[0] == text.START_ID and row[-1] == text.END_ID for row in ids.to_list())
    back = _strings(processor.detokenize(ids.to_tensor()))
    for original, restored in zip(sentences, back):
        assert restored == (original.lower() if lower else original)


def test_detokenize_stops_at_first_end_and_drops_padding(processors):
    processor = processors[False]
    ids = processor.tokenize(["Hello world!"]).to_tensor()
    row = ids.numpy()[0].tolist()
    extended = row + row[1:] + [text.PAD_ID] * 3  # ... [END] Hello world! [END] pad
    assert _strings(processor.detokenize(tf.constant([extended]))) == ["Hello world!"]


def test_source_side_has_no_start_token(processors, tmp_path):
    source = _framed(processors[True].path, add_start=False)
    ids = source.tokenize(["hello"]).to_list()[0]
    assert ids[0] != text.START_ID and ids[-1] == text.END_ID


def test_unknown_words_become_unk(processors):
    ids = processors[True].tokenize(["ж"]).to_list()[0]
    assert ids == [text.START_ID, text.UNK_ID, text.END_ID]


def _short(processors):
    return _framed(processors[True].path, max_tokens=16)


def test_max_tokens_truncates_and_keeps_end(processors):
    ids = _short(processors).tokenize(["the cat " * 40]).to_list()[0]
    assert len(ids) == 16
    assert ids[0] == text.START_ID and ids[-1] == text.END_ID


def test_invalid_utf8_empty_and_huge_inputs_do_not_fail(processors):
    batch = tf.constant([b"\xff\xfe caf\xc3", b"", b"a" * (10 * text.MAX_INPUT_CHARS)])
    ids = _short(processors).tokenize(batch).to_list()
    assert ids[1] == [text.START_ID, text.END_ID]
    assert all(len(row) <= 16 for row in ids)
    cleaned = text.clean_strings(batch).numpy()
    assert len(cleaned[2]) == text.MAX_INPUT_CHARS
    cleaned[0].decode("utf-8")  # valid UTF-8 now


def test_bad_vocabulary_is_rejected(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("a\nb\nc\nd\n")
    with pytest.raises(ValueError, match="must start with"):
        text.load_tokenizer(str(path))
