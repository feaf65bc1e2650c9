"""benchmarks.alignment.concat_pairs: the training text and its links
with joined pairs appended (the joining is
keras_attention.alignment.concatenate_pairs, tested in
test_alignment_joining.py)."""


import pytest

from benchmarks.alignment import concat_pairs
from keras_attention.alignment import parse_pharaoh

LINES = [
    ("Gold pair.", "Paire d'or."),
    ("The cat sleeps.", "Le chat dort."),
    ("I see a dog.", "Je vois un chien."),
    ("Hello!", "Bonjour !"),
    ("This one is a rather long sentence indeed.",
     "Celle-ci est une phrase plutôt longue en effet."),
]
LINKS = [
    "0-0 1-1",
    "0-0 1-1 2-2",
    "0-0 1-1 2-2 3-3",
    "0-0 1?0",
    "0-0 1-1 2-2 3-4 4-3 5-6 6-7",
]


# The joined links of each ordered pair of lines 2-4, worked out by hand.
JOINED_LINKS = {
    "The cat sleeps. I see a dog.": "0-0 1-1 2-2 3-3 4-4 5-5 6-6",
    "I see a dog. The cat sleeps.": "0-0 1-1 2-2 3-3 4-4 5-5 6-6",
    "The cat sleeps. Hello!": "0-0 1-1 2-2 3-3 4-3",
    "Hello! The cat sleeps.": "0-0 1-0 2-1 3-2 4-3",
    "I see a dog. Hello!": "0-0 1-1 2-2 3-3 4-4 5-4",
    "Hello! I see a dog.": "0-0 1-0 2-1 3-2 4-3 5-4",
}


def _write(tmp_path):
    data, links = tmp_path / "text.txt", tmp_path / "links.align"
    data.write_text("".join(f"{e}\t{f}\tCC-BY\n" for e, f in LINES),
                    encoding="utf-8")
    links.write_text("".join(k + "\n" for k in LINKS), encoding="utf-8")
    return data, links


def _run(tmp_path, *flags):
    data, links = _write(tmp_path)
    out_data, out_links = tmp_path / "cat.txt", tmp_path / "cat.align"
    concat_pairs.main([
        "--data", str(data), "--links", str(links), "--out-data",
        str(out_data), "--out-links", str(out_links), *flags])
    return (out_data.read_text(encoding="utf-8").splitlines(),
            out_links.read_text(encoding="utf-8").splitlines())


def test_main_keeps_the_text_and_appends_joined_pairs(tmp_path):
    data, links = _run(tmp_path, "--count", "20", "--skip-first", "1",
                       "--max-words", "10")
    assert data[:5] == [f"{e}\t{f}\tCC-BY" for e, f in LINES]
    assert links[:5] == LINKS
    assert len(data) == len(links) == 25
    for line, link in zip(data[5:], links[5:]):
        english, french = line.split("\t")
        # Two parts, each at most 10 // 2 words a side: never the gold
        # pair (skipped) nor the long sentence.
        assert len(english.split()) <= 10 and len(french.split()) <= 10
        assert "Gold" not in english and "long" not in english
        # Its links are those of its parts, shifted by the French and
        # English words before them; "Bonjour !"'s possible link is sure.
        assert link == JOINED_LINKS[english]
        assert parse_pharaoh(link)[0] == parse_pharaoh(link)[1]
    # The same seed, the same lines; another seed, others.
    again = _run(tmp_path, "--count", "20", "--skip-first", "1",
                 "--max-words", "10")
    other = _run(tmp_path, "--count", "20", "--skip-first", "1",
                 "--max-words", "10", "--seed", "1")
    assert again == (data, links)
    assert other[0][5:] != data[5:]
    assert set(data[5:]) <= {
        f"{a} {c}\t{b} {d}" for a, b in LINES[1:4] for c, d in LINES[1:4]
        if a != c}


def test_main_refuses_mismatched_files_and_impossible_draws(tmp_path):
    data, links = _write(tmp_path)
    links.write_text("0-0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has 1 lines"):
        concat_pairs.main(["--data", str(data), "--links", str(links),
                           "--count", "1", "--out-data", "a",
                           "--out-links", "b"])
    with pytest.raises(ValueError, match="Fewer than 2 pairs"):
        _run(tmp_path, "--count", "1", "--max-words", "2")
