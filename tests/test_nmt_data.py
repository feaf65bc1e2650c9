"""Data of the NMT example: dates generator, alignments, corpus loaders, splits."""

import datetime
import gzip
import os
import shutil

import pytest

from examples.nmt import corpus as corpus_lib
from examples.nmt import data
from examples.nmt import dates
from examples.nmt import readers
from keras_attention.cli.errors import CliError

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")


def _path(name):
    return os.path.join(DATA_DIR, name)


# ----------------------------------------------------------------------
# Dates.


@pytest.mark.parametrize(
    "locale, source, source_words",
    [
        ("fr", "vendredi 20 octobre 1933", ["vendredi", "20", "octobre", "1933"]),
        (
            "de",
            "Freitag, 20. Oktober 1933",
            ["freitag", ",", "20", ".", "oktober", "1933"],
        ),
        (
            "es",
            "viernes, 20 de octubre de 1933",
            ["viernes", ",", "20", "de", "octubre", "de", "1933"],
        ),
        ("tr", "20 Ekim 1933 Cuma", ["20", "ekim", "1933", "cuma"]),
    ],
)
def test_date_pair_text_and_alignment(locale, source, source_words):
    got_source, target, alignment = dates.date_pair(
        datetime.date(1933, 10, 20), locale, "full"
    )
    assert got_source == source
    assert target == "Friday, October 20, 1933"
    assert corpus_lib.pretokenize(source) == source_words
    target_words = corpus_lib.pretokenize(target, lower_case=False)
    assert target_words == ["Friday", ",", "October", "20", ",", "1933"]
    # The true source word of each English word, found by hand from the
    # word lists above: weekday, month, day, year; commas unaligned.
    expected = {
        "Friday": source_words.index(
            {"fr": "vendredi", "de": "freitag", "es": "viernes", "tr": "cuma"}[locale]
        ),
        "October": source_words.index(
            {"fr": "octobre", "de": "oktober", "es": "octubre", "tr": "ekim"}[locale]
        ),
        "20": source_words.index("20"),
        "1933": source_words.index("1933"),
    }
    for word, links in zip(target_words, alignment):
        if word == ",":
            assert links == ()
        else:
            assert links == (expected[word],)


def test_date_pair_multiword_field_aligns_to_all_its_words():
    # Portuguese "sexta-feira" is three words after punctuation splitting.
    source, target, alignment = dates.date_pair(
        datetime.date(1933, 10, 20), "pt", "full"
    )
    words = corpus_lib.pretokenize(source)
    assert words[:3] == ["sexta", "-", "feira"]
    assert alignment[0] == (0, 1, 2)


def test_word_order_differs_from_english():
    # Not the diagonal: in French the day comes before the month, in
    # English after it.
    _, _, alignment = dates.date_pair(datetime.date(2001, 5, 3), "fr", "long")
    aligned = [links[0] for links in alignment if links]
    assert aligned != sorted(aligned)


def test_generate_dates_is_deterministic_and_seeded():
    a = dates.generate_dates(50, seed=1)
    b = dates.generate_dates(50, seed=1)
    c = dates.generate_dates(50, seed=2)
    assert a.pairs == b.pairs and a.alignments == b.alignments
    assert a.pairs != c.pairs
    assert len(a) == 50 and len(a.alignments) == 50 and len(a.languages) == 50
    assert set(a.languages) <= set(dates.DATE_LANGUAGES)


def test_generate_dates_alignment_indices_are_valid():
    corpus = dates.generate_dates(200, seed=3)
    for (source, target), alignment in zip(corpus.pairs, corpus.alignments):
        source_len = len(corpus_lib.pretokenize(source))
        assert len(alignment) == len(corpus_lib.pretokenize(target, lower_case=False))
        assert any(alignment)
        for links in alignment:
            assert all(0 <= i < source_len for i in links)


# ----------------------------------------------------------------------
# Loaders.


def test_read_anki_skips_and_counts_malformed_lines():
    corpus = readers.read_anki(_path("anki_fra.txt"))
    assert corpus.pairs == [
        ("Va !", "Go."),
        ("Salut !", "Hi."),
        ("Merci.", "Thank you."),
    ]
    assert corpus.skipped == 4
    assert corpus.reasons["not 2-3 columns"] == 2
    assert corpus.reasons["empty line"] == 1
    assert corpus.reasons["empty side"] == 1


def test_read_anki_from_english():
    corpus = readers.read_anki(_path("anki_fra.txt"), direction="from-english")
    assert corpus.pairs[0] == ("Go.", "Va !")


def test_read_anki_bad_direction():
    with pytest.raises(ValueError, match="direction"):
        readers.read_anki(_path("anki_fra.txt"), direction="sideways")


def test_read_tsv():
    corpus = readers.read_tsv(_path("pairs.tsv"))
    assert corpus.pairs == [("Hallo Welt", "Hello world"), ("Danke .", "Thanks .")]
    assert corpus.skipped == 3


def test_read_parallel_files():
    corpus = readers.read_parallel(_path("train.de"), _path("train.en"))
    assert corpus.pairs == [
        ("Guten Morgen", "Good morning"),
        ("Danke", "Thanks"),
        ("Auf Wiedersehen", "Goodbye"),
    ]
    assert corpus.reasons["empty side"] == 1
    assert corpus.reasons["unpaired line (files differ in length)"] == 1
    assert corpus.skipped == 2


def test_invalid_utf8_line_is_reported_with_its_number():
    with pytest.raises(CliError, match=r"bad_utf8\.tsv:2: not UTF-8"):
        readers.read_tsv(_path("bad_utf8.tsv"))


def test_gzip_files(tmp_path):
    for name in ("anki_fra.txt", "train.de", "train.en"):
        with open(_path(name), "rb") as src, gzip.open(
            tmp_path / (name + ".gz"), "wb"
        ) as dst:
            shutil.copyfileobj(src, dst)
    plain = data.load_corpus([_path("anki_fra.txt")])
    zipped = data.load_corpus([str(tmp_path / "anki_fra.txt.gz")])
    assert zipped.pairs == plain.pairs and zipped.skipped == plain.skipped
    parallel = data.load_corpus(
        [str(tmp_path / "train.de.gz"), str(tmp_path / "train.en.gz")]
    )
    assert len(parallel) == 3


def test_load_corpus_detects_the_format():
    assert readers.detect_format(_path("anki_fra.txt")) == "anki"
    assert readers.detect_format(_path("pairs.tsv")) == "tsv"
    assert data.load_corpus([_path("pairs.tsv")]).pairs[0] == (
        "Hallo Welt",
        "Hello world",
    )
    assert len(data.load_corpus(["dates"], num_dates=7)) == 7


def test_load_corpus_errors():
    with pytest.raises(ValueError, match="path"):
        data.load_corpus(["/nonexistent/file.tsv"])
    with pytest.raises(ValueError, match="data_format"):
        data.load_corpus([_path("pairs.tsv")], data_format="xml")
    with pytest.raises(ValueError, match="paths"):
        data.load_corpus(["a", "b", "c"])


# ----------------------------------------------------------------------
# Filtering and splitting.


def test_filter_by_length_and_limit():
    corpus = corpus_lib.Corpus(
        pairs=[("a b", "x"), ("a b c d", "x"), ("a", "x y z w"), ("c", "z")]
    )
    assert corpus_lib.filter_corpus(corpus, max_words=3).pairs == [
        ("a b", "x"),
        ("c", "z"),
    ]
    assert corpus_lib.filter_corpus(corpus, max_examples=2).pairs == corpus.pairs[:2]


def test_split_is_deterministic_disjoint_and_complete():
    corpus = dates.generate_dates(600, seed=4)
    splits = corpus_lib.split_pairs(corpus, 0.1, 0.1)
    again = corpus_lib.split_pairs(corpus, 0.1, 0.1)
    assert all(splits[n].pairs == again[n].pairs for n in corpus_lib.SPLIT_NAMES)
    assert sum(len(s) for s in splits.values()) == len(corpus)
    sources = {n: {p[0] for p in s.pairs} for n, s in splits.items()}
    assert not sources["train"] & sources["test"]
    assert not sources["train"] & sources["validation"]
    # Roughly the asked fractions (CRC32 buckets are close to uniform).
    assert 30 <= len(splits["test"]) <= 90
    # Alignments follow their pairs.
    index = {p: a for p, a in zip(corpus.pairs, corpus.alignments)}
    for pair, alignment in zip(splits["test"].pairs, splits["test"].alignments):
        assert index[pair] == alignment


def test_split_does_not_depend_on_order_or_limit():
    corpus = dates.generate_dates(300, seed=5)
    reversed_corpus = corpus_lib.Corpus(pairs=corpus.pairs[::-1])
    test = set(corpus_lib.split_pairs(corpus)["test"].pairs)
    assert test == set(corpus_lib.split_pairs(reversed_corpus)["test"].pairs)
    limited = corpus_lib.filter_corpus(corpus, max_examples=100)
    assert set(corpus_lib.split_pairs(limited)["test"].pairs) <= test


def test_split_rejects_bad_fractions():
    corpus = corpus_lib.Corpus(pairs=[("a", "b")])
    with pytest.raises(ValueError, match="test_fraction"):
        corpus_lib.split_pairs(corpus, 0.1, 1.5)
    with pytest.raises(ValueError, match="below 1"):
        corpus_lib.split_pairs(corpus, 0.6, 0.6)


def test_pretokenize():
    assert corpus_lib.pretokenize("Freitag, 20. Oktober 1933") == [
        "freitag", ",", "20", ".", "oktober", "1933",
    ]
    assert corpus_lib.pretokenize("Va !", lower_case=False) == ["Va", "!"]
    # NFKC: the narrow no-break space of some CLDR patterns is a space.
    assert corpus_lib.pretokenize("20\u202fOct") == ["20", "oct"]


def test_detect_format_by_name(tmp_path):
    path = tmp_path / "fra.txt"
    path.write_text("Go.\tVa !\n")
    assert readers.detect_format(str(path)) == "anki"
    assert data.load_corpus([str(path)]).pairs == [("Va !", "Go.")]
