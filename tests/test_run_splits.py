"""The split files of a run directory (`validation.tsv`, `test.tsv`,
`keras_attention.training.run_dir.save_split`): any text comes back as it
was, and so do the examples' splits (NMT pairs with their true alignments
and fields, G2P words with their pronunciations). Evaluating trained runs
from them: `test_evaluate_test_sets.py`."""

import os

import pytest

from keras_attention.training import splits as splits_lib
from examples.g2p import data as g2p_data
from examples.nmt import corpus as corpus_lib
from examples.nmt import dates
from keras_attention.training import run_dir as run_lib


def test_split_file_round_trip(tmp_path):
    rows = [
        ("tab\there", "new\nline\r\n", "back\\slash \\t \\n"),
        ("", "\\"),
        ("ünïcödé 日本語", "🙂"),
    ]
    path = run_lib.save_split(str(tmp_path), "test", rows)
    assert os.path.basename(path) == "test.tsv"
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    # One line a row, columns split by real tabs only.
    assert text.count("\n") == 3 and "\r" not in text
    assert text.splitlines()[1] == "\t\\\\"
    assert run_lib.load_split(str(tmp_path), "test") == rows
    assert run_lib.load_split(str(tmp_path), "validation") is None
    assert run_lib.load_split(str(tmp_path), "train") is None
    assert not os.path.exists(path + ".tmp")
    with pytest.raises(ValueError, match="split='train'"):
        run_lib.save_split(str(tmp_path), "train", rows)


def test_nmt_split_rows_round_trip(tmp_path):
    splits = corpus_lib.split_pairs(dates.generate_dates(200, seed=5), 0.2, 0.2)
    splits_lib.save_held_out(str(tmp_path), splits, corpus_lib.corpus_rows)
    with open(tmp_path / "test.tsv", encoding="utf-8") as f:
        source, target, links, fields = f.readline().rstrip("\n").split("\t")
    assert (source, target) == splits["test"].pairs[0]
    assert fields.split()[0] in dates.FIELDS + (corpus_lib.NO_FIELD,)
    for name in ("validation", "test"):
        back = splits_lib.load_split(
            str(tmp_path), name, corpus_lib.corpus_from_rows, None
        )
        assert back.pairs == splits[name].pairs
        assert back.alignments == splits[name].alignments
        assert back.fields == splits[name].fields
    # Without true alignments: two columns.
    plain = corpus_lib.Corpus(pairs=[("a\tb", "c"), ("d", "e f")])
    assert corpus_lib.corpus_rows(plain) == plain.pairs
    back = corpus_lib.corpus_from_rows(corpus_lib.corpus_rows(plain))
    assert back.pairs == plain.pairs and back.alignments is None


def test_g2p_split_rows_round_trip():
    lexicon = g2p_data.Lexicon({
        "read": [("R", "IY", "D"), ("R", "EH", "D")],
        "o'neill": [("OW", "N", "IY", "L")],
    })
    rows = g2p_data.lexicon_rows(lexicon)
    assert rows[:2] == [("read", "R IY D"), ("read", "R EH D")]
    assert g2p_data.lexicon_from_rows(rows).entries == lexicon.entries


def test_the_training_split_is_made_again():
    regenerated = {"train": "made again"}
    assert splits_lib.load_split(
        "no-such-run", "train", None, lambda: regenerated
    ) == "made again"
