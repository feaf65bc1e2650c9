"""keras_attention.alignment: sub-words, links, symmetrization, Pharaoh, AER.

Pure numpy/Python: the expected values are worked by hand in the comments.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_attention import alignment as al
from keras_attention.alignment.symmetrization import METHODS

# ----------------------------------------------------------------------
# Sub-words -> words.


def test_word_groups_wordpiece():
    tokens = ["[START]", "vend", "##redi", "20", "[END]", ""]
    assert al.word_groups(tokens) == [[1, 2], [3]]
    # Bytes (tensorflow-text output) are accepted.
    assert al.word_groups([b"oct", b"##obre"]) == [[0, 1]]


def test_word_groups_continuation_after_special_starts_a_word():
    # "##x" right after [START] has no word to continue: it starts one.
    assert al.word_groups(["[START]", "##x", "##y", "z"]) == [[1, 2], [3]]


def test_word_groups_sentencepiece():
    tokens = ["\u2581ven", "dredi", "\u2581", "20", "</s>"]
    groups = al.word_groups(
        tokens, scheme="sentencepiece", special_tokens={"</s>"}
    )
    # A lone "▁" starts a word that "20" continues.
    assert groups == [[0, 1], [2, 3]]


def test_unk_is_a_word_by_default():
    # [UNK] stands for a real word: dropping it would shift later indices.
    assert al.word_groups(["a", "[UNK]", "b"]) == [[0], [1], [2]]
    assert al.word_groups(["a", "[UNK]", "b"], special_tokens={"[UNK]"}) == [
        [0],
        [2],
    ]


def test_word_groups_bad_scheme():
    with pytest.raises(ValueError, match="scheme"):
        al.word_groups(["a"], scheme="bpe")


def test_word_attention_hand_worked():
    source = ["vend", "##redi", "20", "[END]"]
    target = ["Fri", "##day", "20", "[END]"]
    weights = [
        [0.5, 0.3, 0.1, 0.1],  # Fri
        [0.2, 0.2, 0.2, 0.4],  # ##day
        [0.0, 0.1, 0.8, 0.1],  # 20
        [0.0, 0.0, 0.0, 1.0],  # [END]
    ]
    # Friday on vendredi: mean(0.5 + 0.3, 0.2 + 0.2) = 0.6;
    # Friday on 20: mean(0.1, 0.2) = 0.15; 20 on vendredi: 0.0 + 0.1;
    # 20 on 20: 0.8. [END] has no row and no column.
    expected = [[0.6, 0.15], [0.1, 0.8]]
    np.testing.assert_allclose(
        al.word_attention(weights, source, target), expected
    )


def test_word_attention_ignores_padding_rows_and_columns():
    weights = np.zeros((5, 6))
    weights[0, 0] = 1.0
    out = al.word_attention(weights, ["a", "b"], ["x"])
    np.testing.assert_allclose(out, [[1.0, 0.0]])


def test_word_attention_bad_shapes():
    with pytest.raises(ValueError, match="2-D"):
        al.word_attention(np.zeros(3), ["a"], ["b"])
    with pytest.raises(ValueError, match="at least one row"):
        al.word_attention(np.zeros((1, 1)), ["a", "b"], ["x"])


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(["a", "##b", "[END]", "c", "[UNK]"]),
                    min_size=1, max_size=8),
    seed=st.integers(0, 1000),
)
def test_word_attention_keeps_the_mass_on_words(pieces, seed):
    rng = np.random.default_rng(seed)
    weights = rng.random((len(pieces), len(pieces)))
    weights /= weights.sum(axis=1, keepdims=True)
    out = al.word_attention(weights, pieces, pieces)
    groups = al.word_groups(pieces)
    assert out.shape == (len(groups), len(groups))
    words = [i for g in groups for i in g]
    # Row i: the mean over its pieces of the mass they put on words.
    for i, g in enumerate(groups):
        want = weights[g][:, words].sum(axis=1).mean()
        assert out[i].sum() == pytest.approx(want)
    assert np.all(out >= 0) and np.all(out.sum(axis=1) <= 1 + 1e-9)


def test_word_links_to_token_links():
    source = ["[START]", "vend", "##redi", "20"]
    target = ["Fri", "##day", "20", "[END]"]
    # Word link 0-0 (vendredi-Friday) becomes 2 x 2 piece links; 1-1 one.
    links = al.word_links_to_token_links({(0, 0), (1, 1)}, source, target)
    assert links == {(1, 0), (1, 1), (2, 0), (2, 1), (3, 2)}
    with pytest.raises(ValueError, match="out of range"):
        al.word_links_to_token_links({(2, 0)}, source, target)


# ----------------------------------------------------------------------
# Hard links.


def test_hard_links_argmax_and_threshold():
    matrix = [[0.6, 0.4], [0.1, 0.8], [0.0, 0.0]]
    # One link per target word; the all-zero row gets none.
    assert al.hard_links(matrix) == {(0, 0), (1, 1)}
    # Every weight >= 0.4.
    assert al.hard_links(matrix, "threshold", 0.4) == {(0, 0), (1, 0), (1, 1)}


def test_hard_links_bad_input():
    with pytest.raises(ValueError, match="method"):
        al.hard_links([[1.0]], method="max")
    with pytest.raises(ValueError, match="2-D"):
        al.hard_links([1.0])
    with pytest.raises(ValueError, match="threshold"):
        al.hard_links([[1.0]], "threshold", float("nan"))


def test_attention_links_never_link_a_special_token():
    source = ["a", "b", "[END]"]
    target = ["x", "[END]"]
    # "x" puts most of its mass on the source [END]: its link goes to the
    # best real word, "b"; the target [END] row gives no link.
    weights = [[0.1, 0.3, 0.6], [0.0, 0.0, 1.0]]
    assert al.attention_links(weights, source, target) == {(1, 0)}
    assert al.attention_links(weights, source, target, "threshold", 0.5) == (
        set()
    )


def test_transpose_links():
    assert al.transpose_links({(0, 1), (2, 3)}) == {(1, 0), (3, 2)}


# ----------------------------------------------------------------------
# Symmetrization (Moses symal), worked by hand. Links are (source,
# target); symal scans points as (target, source).

# Case A: 4 x 4.
#   forward = {0-0, 1-1, 3-2}, reverse = {0-0, 3-3}
#   intersection {0-0}; union {0-0, 1-1, 3-2, 3-3}.
#   grow: the neighbours of (t0, s0) are (t1, s0) = 0-1 and (t0, s1) =
#     1-0, not in the union: {0-0}.
#   grow-diag: the diagonal (t1, s1) = 1-1 is in the union with both words
#     uncovered: added; its neighbours are not in the union: {0-0, 1-1}.
#   -final: forward-only first, in (t, s) order: (t2, s3) = 3-2, both
#     uncovered: added (s3 and t2 now covered). Then reverse-only:
#     (t3, s3) = 3-3: t3 uncovered, s3 covered: added by -final, not by
#     -final-and (needs both uncovered).
CASE_A = ({(0, 0), (1, 1), (3, 2)}, {(0, 0), (3, 3)})
EXPECTED_A = {
    "intersection": {(0, 0)},
    "union": {(0, 0), (1, 1), (3, 2), (3, 3)},
    "grow": {(0, 0)},
    "grow-diag": {(0, 0), (1, 1)},
    "grow-diag-final": {(0, 0), (1, 1), (3, 2), (3, 3)},
    "grow-diag-final-and": {(0, 0), (1, 1), (3, 2)},
}

# Case B, a growing chain:
#   forward = {0-0, 1-0, 2-2}, reverse = {0-0, 1-1}
#   intersection {0-0}; union {0-0, 1-0, 1-1, 2-2}.
#   grow, pass 1: at (t0, s0) the neighbour (t0, s1) = 1-0 covers s1:
#     added after (t0, s0) in scan order, so visited in the same pass; at
#     (t0, s1) the neighbour (t1, s1) = 1-1 covers t1: added, visited; at
#     (t1, s1) no horizontal/vertical neighbour is in the union; pass 2
#     adds nothing: {0-0, 1-0, 1-1}.
#   grow-diag: at (t1, s1) the diagonal (t2, s2) = 2-2 is added: the union.
CASE_B = ({(0, 0), (1, 0), (2, 2)}, {(0, 0), (1, 1)})
EXPECTED_B = {
    "intersection": {(0, 0)},
    "union": {(0, 0), (1, 0), (1, 1), (2, 2)},
    "grow": {(0, 0), (1, 0), (1, 1)},
    "grow-diag": {(0, 0), (1, 0), (1, 1), (2, 2)},
    "grow-diag-final": {(0, 0), (1, 0), (1, 1), (2, 2)},
    "grow-diag-final-and": {(0, 0), (1, 0), (1, 1), (2, 2)},
}

# Case C, the order of -final-and: forward {2-0, 2-1}, reverse {1-1}; no
#   intersection, so grow-diag is empty.
#   -final-and, forward-only in (t, s) order: (t0, s2) = 2-0 added (s2,
#     t0 covered); (t1, s2) = 2-1: s2 covered: not added. Reverse-only:
#     (t1, s1) = 1-1, both uncovered: added.
#   -final: 2-0 added; 2-1 (t1 uncovered) added; 1-1 (s1 uncovered) added.
CASE_C = ({(2, 0), (2, 1)}, {(1, 1)})
EXPECTED_C = {
    "intersection": set(),
    "union": {(2, 0), (2, 1), (1, 1)},
    "grow": set(),
    "grow-diag": set(),
    "grow-diag-final": {(2, 0), (2, 1), (1, 1)},
    "grow-diag-final-and": {(2, 0), (1, 1)},
}




def test_grow_diag_visits_points_added_during_the_scan():
    # symal scans a std::set while inserting into it: a point inserted
    # after the one being scanned is visited in the same pass.
    #   forward {1-2, 2-1}, reverse {0-0, 0-2, 1-1, 2-1}
    #   intersection {2-1} = (t1, s2); union (t, s): (0,0) (1,1) (1,2)
    #   (2,0) (2,1).
    #   pass 1, at (t1, s2): (t1, s1) = 1-1 covers s1; the diagonal
    #     (t2, s1) = 1-2 covers t2; both are added; (t2, s1) sorts after
    #     (t1, s2), so it is scanned now: its neighbour (t2, s0) = 0-2
    #     covers s0: added. (t1, s1) sorts before: it waits.
    #   pass 2, at (t1, s1): the diagonal (t0, s0) = 0-0 covers t0: added.
    # All five union links. A scan of a snapshot would reach (t1, s1)
    # first in pass 2, add 0-0 (covering s0) and then refuse 0-2.
    forward = {(1, 2), (2, 1)}
    reverse = {(0, 0), (0, 2), (1, 1), (2, 1)}
    assert al.symmetrize(forward, reverse, "grow-diag") == {
        (0, 0), (0, 2), (1, 1), (1, 2), (2, 1)
    }


@pytest.mark.parametrize(
    "case, expected",
    [(CASE_A, EXPECTED_A), (CASE_B, EXPECTED_B), (CASE_C, EXPECTED_C)],
    ids=["A", "B", "C"],
)
@pytest.mark.parametrize("method", METHODS)
def test_symmetrize_hand_worked(case, expected, method):
    forward, reverse = case
    assert al.symmetrize(forward, reverse, method) == expected[method]


def test_symmetrize_final_tries_forward_links_first():
    # Both directions want t0: forward 0-0, reverse 1-0. -final-and keeps
    # the forward link (tried first); swapping the arguments keeps 1-0.
    assert al.symmetrize({(0, 0)}, {(1, 0)}) == {(0, 0)}
    assert al.symmetrize({(1, 0)}, {(0, 0)}) == {(1, 0)}
    # -final adds the second too: s1 is still uncovered.
    assert al.symmetrize({(0, 0)}, {(1, 0)}, "grow-diag-final") == {
        (0, 0),
        (1, 0),
    }


def test_symmetrize_bad_input():
    with pytest.raises(ValueError, match="method"):
        al.symmetrize(set(), set(), "grow-diag-final-or")
    with pytest.raises(ValueError, match="forward"):
        al.symmetrize({(0, -1)}, set())
    with pytest.raises(ValueError, match="reverse"):
        al.symmetrize(set(), {"0-1"})
    with pytest.raises(ValueError, match="one alignment per sentence"):
        al.symmetrize_corpus([set()], [])


links_strategy = st.sets(
    st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=14
)


@settings(max_examples=200, deadline=None)
@given(forward=links_strategy, reverse=links_strategy)
def test_symmetrize_properties(forward, reverse):
    inter, union = forward & reverse, forward | reverse
    results = {
        m: al.symmetrize(forward, reverse, m)
        for m in METHODS
    }
    assert results["intersection"] == inter
    assert results["union"] == union
    for links in results.values():
        assert inter <= links <= union
    # The final steps only add links to grow-diag.
    assert results["grow-diag"] <= results["grow-diag-final"]
    assert results["grow-diag"] <= results["grow-diag-final-and"]
    # After -final every word of a union link is aligned.
    final = results["grow-diag-final"]
    assert {s for s, _ in union} == {s for s, _ in final}
    assert {t for _, t in union} == {t for _, t in final}
    # Agreeing directions are left as they are.
    for m in METHODS:
        assert al.symmetrize(forward, forward, m) == forward


# ----------------------------------------------------------------------
# Pharaoh.


def test_parse_and_format_pharaoh():
    sure, possible = al.parse_pharaoh("0-0 1p2 2?1\n")
    assert sure == {(0, 0)}
    assert possible == {(0, 0), (1, 2), (2, 1)}
    assert al.format_pharaoh({(1, 0), (0, 0)}, {(2, 1), (0, 0)}) == (
        "0-0 1-0 2?1"
    )
    assert al.parse_pharaoh("") == (set(), set())


def test_pharaoh_one_based():
    sure, possible = al.parse_pharaoh("1-1 3?2", one_based=True)
    assert sure == {(0, 0)} and possible == {(0, 0), (2, 1)}
    assert al.format_pharaoh({(0, 0)}, one_based=True) == "1-1"
    with pytest.raises(ValueError, match="index 0 in a 1-based"):
        al.parse_pharaoh("0-1", one_based=True)


def test_pharaoh_round_trip(tmp_path):
    path = str(tmp_path / "links.txt")
    sure = [{(0, 0), (1, 2)}, set(), {(3, 1)}]
    possible = [{(2, 2)}, {(0, 0)}, set()]
    al.write_pharaoh(path, sure, possible)
    with open(path) as f:
        assert f.read() == "0-0 1-2 2?2\n0?0\n3-1\n"
    back = al.read_pharaoh(path)
    assert [s for s, _ in back] == sure
    assert [p for _, p in back] == [s | p for s, p in zip(sure, possible)]


@pytest.mark.parametrize("bad", ["0-", "a-1", "0-1-2", "0:1", "-1-2"])
def test_read_pharaoh_names_file_and_line(tmp_path, bad):
    path = tmp_path / "gold.txt"
    path.write_text(f"0-0\n1-1 {bad}\n")
    with pytest.raises(ValueError, match=r"gold.txt:2: malformed link"):
        al.read_pharaoh(str(path))


def test_write_pharaoh_bad_input(tmp_path):
    path = str(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="one entry per sentence"):
        al.write_pharaoh(path, [set()], [set(), set()])
    with pytest.raises(ValueError, match="non-negative"):
        al.write_pharaoh(path, [{(0, -1)}])


# ----------------------------------------------------------------------
# Scoring.


def test_alignment_scores_hand_worked():
    hypotheses = [{(0, 0), (1, 1), (2, 1)}, {(0, 1)}]
    sure = [{(0, 0), (1, 1)}, {(0, 0)}]
    possible = [{(2, 1)}, {(1, 1)}]  # completed with the sure links
    scores = al.alignment_scores(hypotheses, sure, possible)
    # |A| = 3 + 1 = 4, |S| = 2 + 1 = 3, |A & S| = 2 + 0, |A & P| = 3 + 0.
    assert (scores["hypothesis"], scores["sure"]) == (4, 3)
    assert (scores["hits_sure"], scores["hits_possible"]) == (2, 3)
    assert scores["possible"] == 3 + 2
    assert scores["precision"] == pytest.approx(3 / 4)
    assert scores["recall"] == pytest.approx(2 / 3)
    # Corpus level: 1 - (2 + 3) / (4 + 3) = 2/7 (the mean of the two
    # sentences' AERs, 0 and 1, would be 0.5).
    assert scores["aer"] == pytest.approx(2 / 7)
    assert scores["sentences"] == 2


def test_alignment_scores_perfect_empty_and_errors():
    perfect = al.alignment_scores([{(0, 0)}], [{(0, 0)}])
    assert perfect["aer"] == 0.0 and perfect["precision"] == 1.0
    empty = al.alignment_scores([set()], [{(0, 0)}])
    assert math.isnan(empty["precision"]) and empty["recall"] == 0.0
    assert empty["aer"] == 1.0
    with pytest.raises(ValueError, match="one alignment per sentence"):
        al.alignment_scores([set()], [set(), set()])


@settings(max_examples=100, deadline=None)
@given(a=links_strategy, s=links_strategy, p=links_strategy)
def test_alignment_scores_bounds(a, s, p):
    scores = al.alignment_scores([a], [s], [p])
    if a or s:
        assert 0.0 <= scores["aer"] <= 1.0
    # Only sure links, all found and nothing else: AER 0.
    if s:
        assert al.alignment_scores([s], [s], [p])["aer"] == 0.0
