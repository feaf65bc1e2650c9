"""Metrics of the NMT example: word grouping, alignment accuracy, exact match, BLEU."""

import math

import numpy as np
import pytest

from examples.nmt import evaluate


def test_word_groups_join_wordpieces_and_skip_specials():
    tokens = ["[START]", "vend", "##redi", "20", "oct", "##o", "##bre", "[END]", ""]
    assert evaluate.word_groups(tokens) == [[1, 2], [3], [4, 5, 6]]
    assert evaluate.word_groups([b"a", b"##b"]) == [[0, 1]]
    # A "##" piece after a special token starts a word of its own.
    assert evaluate.word_groups(["[UNK]", "##x"]) == [[1]]


def test_word_attention_by_hand():
    # Source words: [s0 s0'] [s1]; target words: [t0] [t1 t1'].
    weights = np.array(
        [
            [0.1, 0.2, 0.7],  # t0
            [0.5, 0.4, 0.1],  # t1
            [0.3, 0.3, 0.4],  # t1'
        ]
    )
    got = evaluate.word_attention(weights, ["a", "##b", "c"], ["x", "y", "##z"])
    expected = np.array([[0.3, 0.7], [(0.9 + 0.6) / 2, (0.1 + 0.4) / 2]])
    np.testing.assert_allclose(got, expected)


def test_alignment_accuracy_hand_made_case():
    # "vendredi 20 octobre 1933" -> "Friday , October 20 , 1933"
    source = ["vend", "##redi", "20", "octobre", "1933", "[END]"]
    target = ["Friday", ",", "October", "20", ",", "1933"]
    alignment = [(0,), (), (2,), (1,), (), (3,)]
    weights = np.zeros((6, 6))
    weights[0, 1] = 1.0  # Friday -> ##redi (vendredi): right
    weights[1, 5] = 1.0  # ","    -> [END]: not counted
    weights[2, 3] = 1.0  # October -> octobre: right
    weights[3, 4] = 0.6  # 20 -> 1933: wrong
    weights[3, 2] = 0.4
    weights[4, 0] = 1.0  # "," not counted
    weights[5, 4] = 1.0  # 1933 -> 1933: right
    accuracy, words, used = evaluate.alignment_accuracy(
        [(weights, source, target, alignment)]
    )
    assert (words, used) == (4, 1)
    assert accuracy == pytest.approx(3 / 4)


def test_alignment_accuracy_multiple_true_words_and_skips():
    source = ["sexta", "-", "feira", "20"]
    target = ["Friday", "20"]
    weights = np.array([[0.1, 0.1, 0.7, 0.1], [0.0, 0.0, 0.0, 1.0]])
    ok = (weights, source, target, [(0, 1, 2), (3,)])
    # A translation with a different number of words is skipped.
    wrong_length = (weights[:1], source, target[:1], [(0, 1, 2), (3,)])
    accuracy, words, used = evaluate.alignment_accuracy([ok, wrong_length])
    assert (accuracy, words, used) == (1.0, 2, 1)
    accuracy, words, used = evaluate.alignment_accuracy([wrong_length])
    assert math.isnan(accuracy) and words == 0


def test_exact_match_uses_the_target_pretokenization():
    refs = ["Friday, October 20, 1933", "March 3, 1999"]
    assert evaluate.exact_match(["Friday , October 20, 1933", "March 3, 1999"], refs) == 1.0
    assert evaluate.exact_match(["friday, october 20, 1933", "March 3, 1999"], refs) == 0.5
    assert evaluate.exact_match(
        ["friday, october 20, 1933", "March 3, 1999"], refs, lower_case=True
    ) == 1.0


def test_bleu_and_chrf_bounds():
    pytest.importorskip("sacrebleu")
    refs = ["the cat sat on the mat", "a dog barked loudly today"]
    bleu, chrf = evaluate.bleu_chrf(refs, refs)
    assert bleu == pytest.approx(100.0) and chrf == pytest.approx(100.0)
    bleu, chrf = evaluate.bleu_chrf(["zzz qqq", "xxx yyy"], refs)
    assert bleu < 1.0 and chrf < 10.0
    upper = [r.upper() for r in refs]
    assert evaluate.bleu_chrf(upper, refs)[0] < 1.0
    bleu, chrf = evaluate.bleu_chrf(upper, refs, lowercase=True)
    assert bleu == pytest.approx(100.0) and chrf == pytest.approx(100.0)


def test_demo_heatmap_png(tmp_path):
    pytest.importorskip("matplotlib")
    from examples.nmt import visual

    weights = np.array([[0.9, 0.1], [0.2, 0.8]])
    items = [(weights, ["a", "b"], ["x", "y"], "one"), (weights.T, ["c", "d"], ["z", "w"], "two")]
    path = visual.save_attention_grid(items, str(tmp_path / "att.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    grid = visual.attention_text_grid(weights, ["a", "b"], ["x", "y"])
    assert "x" in grid and "a" in grid
