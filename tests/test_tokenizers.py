"""The library's tokenizers: learning, ids, words, round trips, configs."""

import unicodedata

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_attention import tokenizers
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.seq2seq.tokens import RESERVED_TOKENS
from keras_attention.seq2seq.tokens import START_ID

TEXTS = [
    "Hello, world! It's l'homme.",
    "Vendredi 20 octobre 1933",
    "the cat sat on the mat",
    "Ça va? Très bien.",
]
KINDS = sorted(tokenizers.KINDS)


def normalized_words(text, lower_case=False):
    text = unicodedata.normalize("NFKC", text)
    return (text.lower() if lower_case else text).split()


@pytest.fixture(scope="module")
def learned():
    return {
        kind: tokenizers.get(kind).from_texts(TEXTS * 5, vocabulary_size=200)
        for kind in KINDS
    }


@pytest.mark.parametrize("kind", KINDS)
def test_ids_words_and_round_trip(learned, kind):
    tokenizer = learned[kind]
    vocab = tokenizer.vocabulary
    assert tuple(vocab[:4]) == RESERVED_TOKENS
    ids = tokenizer.tokenize(TEXTS)
    flat = ids.flat_values.numpy()
    assert flat.min() >= 4 and flat.max() < tokenizer.vocabulary_size
    # Every text of the training set is covered: no [UNK].
    assert 1 not in flat
    # Pieces grouped by whitespace word: one group per word of split().
    per_word = tokenizer.tokenize_words(TEXTS)
    assert per_word.row_lengths().numpy().tolist() == [
        len(normalized_words(t)) for t in TEXTS
    ]
    assert per_word.merge_dims(1, 2).to_list() == ids.to_list()
    # Detokenizing gives the normalised text back (words joined by one
    # space, punctuation re-attached).
    texts = [t.decode() for t in tokenizer.detokenize(ids.to_tensor()).numpy()]
    assert texts == [" ".join(normalized_words(t)) for t in TEXTS]


@pytest.mark.parametrize("kind", KINDS)
def test_config_round_trip(learned, kind):
    tokenizer = learned[kind]
    config = keras.saving.serialize_keras_object(tokenizer)
    assert config["registered_name"] == (
        f"keras_attention>{type(tokenizer).__name__}"
    )
    back = keras.saving.deserialize_keras_object(config, safe_mode=True)
    assert type(back) is type(tokenizer)
    assert back.vocabulary == tokenizer.vocabulary
    assert back.tokenize(TEXTS).to_list() == tokenizer.tokenize(TEXTS).to_list()


@pytest.mark.parametrize("kind", KINDS)
def test_framed_adds_start_end_and_cuts(learned, kind):
    framed = learned[kind].framed(True, True, 5)
    ids = framed.tokenize(TEXTS + [""]).to_list()
    for row in ids:
        assert row[0] == START_ID and row[-1] == END_ID and len(row) <= 5
    assert ids[-1] == [START_ID, END_ID]
    source = learned[kind].framed(False, True, 64).tokenize(["", "the cat"])
    assert source.to_list()[0] == [END_ID]


def test_unknown_words_and_characters():
    tok = tokenizers.WhitespaceTokenizer.from_texts(["a b c"], 50)
    assert tok.tokenize(["a zz b"]).to_list() == [[4, 1, 5]]
    char = tokenizers.CharacterTokenizer.from_texts(["ab"], 50)
    # No space was seen: words are joined without one, [UNK] for "z".
    assert char.vocabulary == list(RESERVED_TOKENS) + ["a", "b"]
    assert char.tokenize(["ab za"]).to_list() == [[4, 5, 1, 4]]


def test_lower_case_and_whole_words():
    tok = tokenizers.WhitespaceTokenizer.from_texts(
        ["HH AH0 L OW1", "W ER1 L D"], 50, split_punctuation=False
    )
    assert "AH0" in tok.vocabulary
    ids = tok.tokenize(["HH AH0 L OW1"])
    assert tok.detokenize(ids.to_tensor()).numpy()[0] == b"HH AH0 L OW1"
    lower = tokenizers.WordPieceTokenizer.from_texts(
        ["Hello World"], 50, lower_case=True
    )
    assert lower.tokenize(["HELLO"]).to_list() == lower.tokenize(
        ["hello"]
    ).to_list()


def test_sentencepiece_model_file(tmp_path, learned):
    model = learned["sentencepiece"].model
    path = tmp_path / "m.model"
    path.write_bytes(model)
    from_file = tokenizers.SentencePieceTokenizer(str(path))
    assert from_file.vocabulary == learned["sentencepiece"].vocabulary
    with pytest.raises(ValueError, match="model"):
        tokenizers.SentencePieceTokenizer(str(tmp_path / "missing.model"))
    with pytest.raises(ValueError, match="SentencePiece model proto"):
        tokenizers.SentencePieceTokenizer(b"not a model")


@pytest.mark.parametrize(
    "vocabulary, match",
    [
        (["a", "b"], "must start with"),
        (list(RESERVED_TOKENS) + ["a", "a"], "twice"),
        (list(RESERVED_TOKENS) + [""], "non-empty"),
        (list(RESERVED_TOKENS) + ["a\nb"], "line breaks"),
        ("[PAD]", "list of token strings"),
    ],
)
def test_bad_vocabulary(vocabulary, match):
    with pytest.raises(ValueError, match=match):
        tokenizers.WordPieceTokenizer(vocabulary)


def test_bad_arguments():
    with pytest.raises(TypeError, match="not one string"):
        tokenizers.WordPieceTokenizer.from_texts("the cat", 50)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        tokenizers.WordPieceTokenizer.from_texts(["a", 3], 50)
    with pytest.raises(ValueError, match="vocabulary_size"):
        tokenizers.WordPieceTokenizer.from_texts(["a"], 4)
    with pytest.raises(ValueError, match="at least one text"):
        tokenizers.WordPieceTokenizer.from_texts([], 50)
    with pytest.raises(ValueError, match="single characters"):
        tokenizers.CharacterTokenizer(list(RESERVED_TOKENS) + ["ab"])
    with pytest.raises(ValueError, match="Unknown tokenizer"):
        tokenizers.get("bpe")
    with pytest.raises(TypeError, match="tokenizer"):
        tokenizers.get(3)


WORDS = st.text(
    alphabet=st.sampled_from(list("abcdeéXY019,.!?'- \t")), max_size=30
)


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(WORDS, min_size=1, max_size=4))
def test_character_round_trip_property(texts):
    """Any text of the learned characters comes back as its words joined
    by single spaces; the groups follow `str.split()`."""
    tok = tokenizers.CharacterTokenizer.from_texts(texts + ["a b"], 100)
    ids = tok.tokenize(texts)
    back = [t.decode() for t in tok.detokenize(ids.to_tensor()).numpy()]
    assert back == [" ".join(t.split()) for t in texts]
    counts = tok.tokenize_words(texts).row_lengths().numpy().tolist()
    assert counts == [len(t.split()) for t in texts]


@pytest.fixture(scope="module")
def wordpiece():
    return tokenizers.WordPieceTokenizer.from_texts(TEXTS, 60)


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_any_text_gives_valid_ids(wordpiece, texts):
    """Texts of any characters (unseen ones, controls, lone surrogates)
    give ids inside the vocabulary, and every kind tokenizes them."""
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    ids = wordpiece.tokenize(encoded).flat_values.numpy()
    assert np.all((ids >= 1) & (ids < wordpiece.vocabulary_size))


def test_clear_error_without_tensorflow_text():
    """Where tensorflow-text cannot be imported, the first use says what to
    install (the layers still import)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "sys.modules['tensorflow_text'] = None\n"
        "import keras_attention\n"
        "from keras_attention.tokenizers import WhitespaceTokenizer\n"
        "tok = WhitespaceTokenizer(['[PAD]', '[UNK]', '[START]', '[END]', 'a'])\n"
        "try:\n"
        "    tok.tokenize(['a'])\n"
        "except ImportError as e:\n"
        "    print('IMPORT-ERROR', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=120)
    assert "IMPORT-ERROR" in done.stdout, done.stderr[-2000:]
    assert "pip install tensorflow tensorflow-text" in done.stdout
