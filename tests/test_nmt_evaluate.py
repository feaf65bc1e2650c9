"""Metrics of the NMT example: word grouping, alignment accuracy (in all,
per field and per month), exact match, BLEU."""

import math

import numpy as np
import pytest

from examples.nmt import align_accuracy
from examples.nmt import corpus as corpus_lib
from examples.nmt import dates
from examples.nmt import evaluate


def test_word_groups_join_wordpieces_and_skip_specials():
    tokens = ["[START]", "vend", "##redi", "20", "oct", "##o", "##bre", "[END]", ""]
    assert align_accuracy.word_groups(tokens) == [[1, 2], [3], [4, 5, 6]]
    assert align_accuracy.word_groups([b"a", b"##b"]) == [[0, 1]]
    # The library rule (keras_attention.alignment): [UNK] is a word (it
    # stands for a word of the text), so a "##" piece after it continues it;
    # after a special token a "##" piece starts a word.
    assert align_accuracy.word_groups(["[UNK]", "##x"]) == [[0, 1]]
    assert align_accuracy.word_groups(["[START]", "##x"]) == [[1]]


def test_word_attention_by_hand():
    # Source words: [s0 s0'] [s1]; target words: [t0] [t1 t1'].
    weights = np.array(
        [
            [0.1, 0.2, 0.7],  # t0
            [0.5, 0.4, 0.1],  # t1
            [0.3, 0.3, 0.4],  # t1'
        ]
    )
    got = align_accuracy.word_attention(weights, ["a", "##b", "c"], ["x", "y", "##z"])
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
    accuracy, words, used = align_accuracy.alignment_accuracy(
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
    accuracy, words, used = align_accuracy.alignment_accuracy([ok, wrong_length])
    assert (accuracy, words, used) == (1.0, 2, 1)
    accuracy, words, used = align_accuracy.alignment_accuracy([wrong_length])
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


def test_alignment_accuracy_by_group_hand_made_case():
    # Two sentences; groups as `date_groups` gives them.
    source = ["vend", "##redi", "20", "octobre", "1933"]
    target = ["Friday", ",", "October", "20", ",", "1933"]
    alignment = [(0,), (), (2,), (1,), (), (3,)]
    groups = [("weekday",), (), ("month", "month=October"), ("day",), (),
              ("year",)]
    right = np.zeros((6, 5))
    for t, s in ((0, 0), (1, 4), (2, 3), (3, 2), (4, 0), (5, 4)):
        right[t, s] = 1.0
    wrong_month = right.copy()
    wrong_month[2] = [0.0, 0.0, 0.0, 0.0, 1.0]  # October -> 1933
    source_b = ["3", ".", "märz", "1999"]
    target_b = ["March", "3", ",", "1999"]
    weights_b = np.eye(4)[[2, 0, 1, 3]]  # March -> märz, 3 -> 3, 1999 right
    weights_b[3] = [0.0, 0.0, 0.6, 0.4]  # 1999 -> märz: wrong
    examples = [
        (right, source, target, alignment, groups),
        (wrong_month, source, target, alignment, groups),
        (weights_b, source_b, target_b, [(2,), (0,), (), (3,)],
         [("month", "month=March"), ("day",), (), ("year",)]),
        # A wrong translation (fewer words) is skipped entirely.
        (right[:2], source, target[:2], alignment, groups),
    ]
    got = align_accuracy.alignment_accuracy_by_group(examples)
    assert list(got) == [
        "weekday", "month", "month=October", "day", "year", "month=March"
    ]
    assert got["weekday"] == {"accuracy": 1.0, "words": 2}
    assert got["month"] == {"accuracy": pytest.approx(2 / 3), "words": 3}
    assert got["month=October"] == {"accuracy": 0.5, "words": 2}
    assert got["month=March"] == {"accuracy": 1.0, "words": 1}
    assert got["day"] == {"accuracy": 1.0, "words": 3}
    assert got["year"] == {"accuracy": pytest.approx(2 / 3), "words": 3}
    # The groups partition what `alignment_accuracy` counts.
    accuracy, words, used = align_accuracy.alignment_accuracy(e[:4] for e in examples)
    assert (words, used) == (11, 3)
    fields = ("weekday", "day", "month", "year")
    assert sum(got[f]["words"] for f in fields) == words
    assert accuracy == pytest.approx(
        sum(got[f]["accuracy"] * got[f]["words"] for f in fields) / words
    )


def test_date_groups_of_generated_dates():
    assert align_accuracy.date_groups(
        ["weekday", None, "month", "day", None, "year"],
        "Friday, October 20, 1933",
    ) == [("weekday",), (), ("month", "month=October"), ("day",), (),
          ("year",)]
    corpus = dates.generate_dates(40, seed=3)
    for (_, target), fields, alignment in zip(
        corpus.pairs, corpus.fields, corpus.alignments
    ):
        words = corpus_lib.pretokenize(target, lower_case=False)
        assert len(fields) == len(words) == len(alignment)
        for field, word, truth in zip(fields, words, alignment):
            # Exactly the aligned words have a field.
            assert (field is None) == (not truth)
            if field == "month":
                assert word in dates.MONTHS
            if field == "year":
                assert word.isdigit() and len(word) == 4


def _fake_translate_fn(outputs):
    """A `serving_default`-like function returning fixed outputs."""
    import tensorflow as tf

    def translate_fn(text):
        n = int(text.shape[0])
        return {k: tf.constant(v[:n]) for k, v in outputs.items()}

    return translate_fn


def test_evaluate_reports_alignment_per_field_and_month():
    pytest.importorskip("tensorflow")
    pytest.importorskip("sacrebleu")
    pairs = [
        ("vendredi 20 octobre 1933", "Friday, October 20, 1933"),
        ("3 mars 1999", "March 3, 1999"),
    ]
    corpus = corpus_lib.Corpus(
        pairs=pairs,
        alignments=[[(0,), (), (2,), (1,), (), (3,)], [(1,), (0,), (), (2,)]],
        fields=[
            ["weekday", None, "month", "day", None, "year"],
            ["month", "day", None, "year"],
        ],
    )
    # Sentence 1: all right but October -> 1933. Sentence 2: all right.
    attention = np.zeros((2, 6, 5), "float32")
    for t, s in ((0, 0), (1, 4), (2, 3), (3, 1), (4, 4), (5, 3)):
        attention[0, t, s] = 1.0
    for t, s in ((0, 1), (1, 0), (2, 3), (3, 2)):
        attention[1, t, s] = 1.0
    source_tokens = [["vendredi", "20", "octobre", "1933", "[END]"],
                     ["3", "mars", "1999", "[END]", ""]]
    target_tokens = [["Friday", ",", "October", "20", ",", "1933"],
                     ["March", "3", ",", "1999", "[END]", ""]]
    translate_fn = _fake_translate_fn({
        "translation": [t for _, t in pairs],
        "source_tokens": source_tokens,
        "target_tokens": target_tokens,
        "target_lengths": np.array([6, 4], "int32"),
        "attention": attention,
    })
    metrics = evaluate.evaluate(translate_fn, corpus)
    assert metrics["exact_match"] == 1.0
    assert metrics["alignment_words"] == 7
    assert metrics["alignment_accuracy"] == pytest.approx(6 / 7)
    assert metrics["alignment_by_field"] == {
        "weekday": {"accuracy": 1.0, "words": 1},
        "day": {"accuracy": 1.0, "words": 2},
        "month": {"accuracy": 0.5, "words": 2},
        "year": {"accuracy": 1.0, "words": 2},
    }
    # Months in calendar order.
    assert list(metrics["alignment_by_month"].items()) == [
        ("March", {"accuracy": 1.0, "words": 1}),
        ("October", {"accuracy": 0.0, "words": 1}),
    ]
    table = evaluate.format_metrics(metrics)
    assert "  month             50.00 % (2 words)" in table
    assert "  October           0.00 % (1 words)" in table
    beam = dict(metrics, beam_width=2)
    side_by_side = evaluate.format_metrics(dict(metrics, beam=beam))
    assert "  October           0.00 %        0.00 %" in side_by_side
    # A corpus without fields (real data) has only the aggregate.
    plain = corpus_lib.Corpus(pairs=pairs, alignments=corpus.alignments)
    metrics = evaluate.evaluate(translate_fn, plain)
    assert "alignment_by_field" not in metrics
    assert metrics["alignment_words"] == 7


def test_demo_heatmaps_and_text_grid(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("tensorflow_text")
    from keras_attention.recipes import decoding as decoding_cli

    weights = np.array([[0.9, 0.1], [0.2, 0.8]])
    results = [
        {"attention": weights, "source_tokens": ["a", "b"],
         "target_tokens": ["x", "y"], "translation": "x y"},
        {"attention": weights.T, "source_tokens": ["c", "d"],
         "target_tokens": ["z", "w"], "translation": "z w"},
    ]
    path = decoding_cli.save_heatmaps(
        zip(["a b", "c d"], results), str(tmp_path / "att.png")
    )
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert decoding_cli.text_grid(results[0]) == "  a  b\nx ██\ny ░░ ██"
