"""benchmarks.alignment.concat_pairs: joined training pairs whose shifted
links still point at the words the original links did."""

import random

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

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


def _linked_words(english, french, links):
    """The (French word, English word) of every sure and possible link."""
    en, fr = english.split(), french.split()
    sure, possible = links
    return ({(fr[i], en[j]) for i, j in sure},
            {(fr[i], en[j]) for i, j in possible})


def test_join_shifts_each_part_by_the_words_before_it():
    parts = [(e, f, parse_pharaoh(k)) for (e, f), k in zip(LINES[1:4],
                                                             LINKS[1:4])]
    english, french, (sure, possible) = concat_pairs.join_pairs(parts)
    assert english == "The cat sleeps. I see a dog. Hello!"
    assert french == "Le chat dort. Je vois un chien. Bonjour !"
    # Second part: 3 French and 3 English words before it; third: 7 and 7.
    assert sure == {(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6),
                    (7, 7)}
    assert possible == sure | {(8, 7)}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)),
                min_size=2, max_size=4), st.randoms(use_true_random=False))
def test_joined_links_point_at_the_same_words(shapes, rnd):
    parts, expected_sure, expected_possible = [], set(), set()
    for k, (m, n) in enumerate(shapes):
        fr = " ".join(f"f{k}_{i}" for i in range(m))
        en = " ".join(f"e{k}_{j}" for j in range(n))
        cells = [(i, j) for i in range(m) for j in range(n)]
        sure = set(rnd.sample(cells, rnd.randint(0, len(cells))))
        possible = sure | set(rnd.sample(cells, rnd.randint(0, len(cells))))
        parts.append((en, fr, (sure, possible)))
        s, p = _linked_words(en, fr, (sure, possible))
        expected_sure |= s
        expected_possible |= p
    english, french, links = concat_pairs.join_pairs(parts)
    assert len(french.split()) == sum(m for m, _ in shapes)
    assert len(english.split()) == sum(n for _, n in shapes)
    assert _linked_words(english, french, links) == (
        expected_sure, expected_possible)


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
        # Its links are those of its parts, at the parts' words.
        sure, possible = parse_pharaoh(link)
        for i, j in possible:
            assert i < len(french.split()) and j < len(english.split())
        assert english.count(".") + english.count("!") == 2
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
    with pytest.raises(ValueError, match="at least 2"):
        concat_pairs.draw([], 1, 1, 50, None)
    with pytest.raises(ValueError, match="fewer than 2 pairs"):
        _run(tmp_path, "--count", "1", "--max-words", "2")


def test_max_parts_draws_every_number_of_parts_in_its_range():
    pairs = [(f"e{k}", f"f{k}", ({(0, 0)}, {(0, 0)})) for k in range(30)]
    joined = concat_pairs.draw(pairs, 300, 2, 12, random.Random(0), 4)
    counts = {len(en.split()) for en, _, _ in joined}
    assert counts == {2, 3, 4}
    for en, fr, (sure, _) in joined:
        # One link a part, each at its part's word; the parts distinct.
        assert sure == {(i, i) for i in range(len(en.split()))}
        assert len(set(en.split())) == len(en.split())
        assert [w[1:] for w in en.split()] == [w[1:] for w in fr.split()]
    # A max_parts below parts means parts alone.
    assert {len(en.split()) for en, _, _ in
            concat_pairs.draw(pairs, 20, 3, 9, random.Random(1), 2)} == {3}
