"""The alignment benchmark by word frequency and sentence length, on a
tiny corpus and gold whose figures are worked out by hand below."""

import json
import math

import pytest

from benchmarks.alignment import buckets
from benchmarks.alignment.golds_first import golds_first

# Training text: "le" 105 times, "chat"/"dort" 100, "chien" 5, "un" and
# "zèbre" once; the same for "the", "cat"/"sleeps", "dog", "a", "zebra".
FRENCH = ["Le chat dort."] * 100 + ["Le chien !"] * 5 + ["Un zèbre"]
ENGLISH = ["The cat sleeps."] * 100 + ["The dog!"] * 5 + ["A zebra"]

PAIRS = [
    ("Le chat dort.", "The cat sleeps."),
    ("Le chien voit un zèbre.", "The dog sees a zebra."),
    ("Le chat dort le chat dort le chat dort le chat", "The cat"),
]
GOLD = [
    ({(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2)}),
    # le-the (105), chien-dog (5), voit-sees (0), zèbre-zebra (1); un?a.
    ({(0, 0), (1, 1), (2, 2), (4, 4)}, {(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)}),
    ({(0, 0)}, {(0, 0)}),
]
HYP = [
    {(0, 0), (1, 1), (2, 1)},          # 2 sure hits, 1 wrong
    {(0, 0), (1, 1), (3, 3), (4, 3)},  # 2 sure, 1 possible, 1 wrong
    {(0, 0)},                          # 1 sure hit
]


def _report():
    return buckets.bucket_report(
        PAIRS, GOLD, HYP, buckets.word_counts(FRENCH),
        buckets.word_counts(ENGLISH))


def test_word_key_and_counts():
    assert buckets.word_key("Dimanche.") == "dimanche"
    assert buckets.word_key("«Aujourd'hui»,") == "aujourd'hui"
    assert buckets.word_key("?") == "?"
    counts = buckets.word_counts(FRENCH)
    assert (counts["le"], counts["chat"], counts["chien"], counts["zèbre"],
            counts["voit"]) == (105, 100, 5, 1, 0)


def test_bucket_boundaries():
    assert [buckets.frequency_bucket(c) for c in (1000, 100, 99, 5, 4, 0)] == [
        ">= 100", ">= 100", "5-99", "5-99", "< 5", "< 5"]
    assert [buckets.length_bucket(n) for n in (1, 10, 11, 20, 21, 30, 31)] == [
        "0-10", "0-10", "11-20", "11-20", "21-30", "21-30", "31+"]


def test_a_link_takes_the_lower_count_of_its_two_words():
    src, tgt = "Le chien".split(), "The zebra".split()
    fr, en = buckets.word_counts(FRENCH), buckets.word_counts(ENGLISH)
    assert buckets.link_bucket((0, 0), src, tgt, fr, en) == ">= 100"
    assert buckets.link_bucket((0, 1), src, tgt, fr, en) == "< 5"   # 105, 1
    assert buckets.link_bucket((1, 0), src, tgt, fr, en) == "5-99"  # 5, 105
    with pytest.raises(ValueError, match="outside the pair"):
        buckets.link_bucket((2, 0), src, tgt, fr, en)


def test_report_matches_the_hand_computed_figures():
    report = _report()
    # |A| = 8, |S| = 8, |A ∩ S| = 5, |A ∩ P| = 6.
    overall = report["all"]
    assert overall["aer"] == pytest.approx(1 - 11 / 16)
    assert overall["precision"] == pytest.approx(6 / 8)
    assert overall["recall"] == pytest.approx(5 / 8)
    # >= 100: pair 0's three links, le-the of pairs 1 and 2 (4 of 5 hit);
    # 5-99: chien-dog (hit); < 5: voit-sees and zèbre-zebra (missed).
    assert report["frequency"] == {
        ">= 100": {"links": 5, "hits": 4, "recall": pytest.approx(0.8)},
        "5-99": {"links": 1, "hits": 1, "recall": pytest.approx(1.0)},
        "< 5": {"links": 2, "hits": 0, "recall": pytest.approx(0.0)},
    }
    # 0-10: pairs 0 and 1, |A| = 7, |S| = 7, hits 4 sure and 5 possible;
    # 11-20: pair 2 (11 French words), all right; no longer pairs.
    length = report["length"]
    assert length["0-10"]["pairs"] == 2
    assert length["0-10"]["aer"] == pytest.approx(1 - 9 / 14)
    assert length["11-20"]["pairs"] == 1
    assert length["11-20"]["aer"] == pytest.approx(0.0)
    assert length["21-30"]["pairs"] == 0 and math.isnan(length["21-30"]["aer"])
    table = buckets.markdown_tables({"hyp": report})
    assert "| < 5 | 2 | 0.0 % |" in table
    assert "| hyp | 31.2 % | 75.0 % | 62.5 % |" in table


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="one entry per pair"):
        buckets.bucket_report(PAIRS, GOLD, HYP[:2], {}, {})


def test_command_line_reads_the_files(tmp_path, capsys):
    corpus = tmp_path / "text.txt"
    corpus.write_text("".join(f"{e}\t{f}\n" for f, e in zip(FRENCH, ENGLISH)),
                      encoding="utf-8")
    gold_dir = tmp_path / "gold"
    gold_dir.mkdir()
    (gold_dir / "pairs.tsv").write_text(
        "".join(f"{f}\t{e}\n" for f, e in PAIRS), encoding="utf-8")
    from keras_attention import alignment as al
    al.write_pharaoh(str(gold_dir / "gold.pharaoh"), [s for s, _ in GOLD],
                     [p for _, p in GOLD])
    hyp = tmp_path / "hyp.align"
    al.write_pharaoh(str(hyp), [{(5, 5)}] + HYP)  # the gold starts on line 2
    out = tmp_path / "report.json"
    buckets.main(["--corpus", str(corpus), "--gold-dir", str(gold_dir),
                  "--hyp", f"h={hyp}", "--hyp-first-line", "2",
                  "--json", str(out)])
    saved = json.loads(out.read_text())
    assert saved["h"]["all"]["hits_sure"] == 5
    assert saved["h"]["frequency"]["< 5"]["links"] == 2
    assert "| h | 31.2 % |" in capsys.readouterr().out


def test_golds_first_keeps_each_pair_as_often_as_in_the_corpus():
    corpus = ["Hi.\tSalut.", "Run!\tCours !", "Hi.\tSalut.", "Go.\tVa !"]
    lines, removed = golds_first(corpus, [("Cours !", "Run!"),
                                          ("Salut.", "Hi."), ("Neuf", "New")])
    assert removed == 2
    assert lines == ["Run!\tCours !", "Hi.\tSalut.", "New\tNeuf",
                     "Hi.\tSalut.", "Go.\tVa !"]


def test_rare_gold_candidates_follow_the_selection_rules():
    import zlib

    from benchmarks.alignment import rare_gold_candidates as rgc
    from examples.nmt.corpus import split_of

    # "commun" is frequent; each "motN" is a word seen once.
    pairs = [(f"commun commun mot{k}", "common word") for k in range(300)]
    pairs += [("commun commun commun", "common common")] * 3
    pairs += [(" ".join(["commun"] * 12 + [f"long{k}"]), "long") for k in range(300)]
    excluded = next(f for f, _ in pairs if split_of(f, 0.05, 0.05) == "test")
    chosen = rgc.candidates(pairs, [excluded], [(1, 10, 4), (11, 20, 2)], 5)
    assert [len(c[0].split()) for c in chosen] == [3, 3, 3, 3, 13, 13]
    for french, english, (rare_fr, rare_en) in chosen:
        assert split_of(french, 0.05, 0.05) == "test"
        assert french != excluded and rare_fr and not rare_en
    keys = [zlib.crc32(f"{f}\t{e}".encode()) for f, e, _ in chosen[:4]]
    assert keys == sorted(keys)
    # Deterministic: the same input, the same pairs.
    assert chosen == rgc.candidates(pairs, [excluded], [(1, 10, 4), (11, 20, 2)], 5)
    assert rgc.parse_bands("4-10:62,31-99:4") == [(4, 10, 62), (31, 99, 4)]


def test_transpose_links_swaps_both_kinds_of_link(tmp_path):
    from benchmarks.alignment import transpose_links
    from keras_attention import alignment as al

    links = tmp_path / "fr_en.align"
    al.write_pharaoh(str(links), [{(0, 1), (2, 0)}, set()], [{(1, 3)}, set()])
    out = tmp_path / "en_fr.align"
    transpose_links.main([str(links), str(out)])
    # `read_pharaoh`'s possible links hold the sure ones.
    assert al.read_pharaoh(str(out)) == [
        ({(1, 0), (0, 2)}, {(1, 0), (0, 2), (3, 1)}), (set(), set())
    ]
