"""Alignment in the NMT example: whitespace words and tokens, guided
alignment training, the `align` and `score-alignment` commands."""

import functools
import os
import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from examples.nmt import align  # noqa: E402
from keras_attention.seq2seq import layers as alignment_head  # noqa: E402
from examples.nmt import cli  # noqa: E402
from examples.nmt import config as config_lib  # noqa: E402
from keras_attention.seq2seq.tokens import END_ID  # noqa: E402
from examples.nmt import pipeline  # noqa: E402
from keras_attention.training import dataset as dataset_lib  # noqa: E402
from examples.nmt import run as run_lib  # noqa: E402
from examples.nmt import text as text_lib  # noqa: E402
from examples.nmt import train as train_lib  # noqa: E402
from keras_attention import alignment as al  # noqa: E402

pytestmark = pytest.mark.tf_only


# ----------------------------------------------------------------------
# Whitespace words -> pieces.


def test_word_positions_punctuation_split():
    # "L'homme" is 3 pieces (l ' homme), "dort." 2.
    positions = align.word_positions("L'homme dort.", [3, 2])
    assert positions == [[0, 1, 2], [3, 4]]


def test_word_positions_multi_piece_word_and_cut():
    # "octobre" in 3 pieces; the cut at 3 content pieces drops the rest.
    assert align.word_positions("20 octobre 1933", [1, 3, 1]) == [
        [0], [1, 2, 3], [4]
    ]
    assert align.word_positions("20 octobre 1933", [1, 3, 1], room=3) == [
        [0], [1, 2], []
    ]


def test_word_positions_mismatch_is_none():
    assert align.word_positions("a b", [1]) is None


def test_token_links_link_every_piece():
    source = [[0], [1, 2]]
    target = [[0, 1], [2]]
    assert align.token_links({(1, 0)}, source, target) == {
        (1, 0), (1, 1), (2, 0), (2, 1)
    }
    with pytest.raises(ValueError, match="out of range"):
        align.token_links({(2, 0)}, source, target)


def test_whitespace_attention_sums_source_means_target():
    weights = np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0], [0.0, 0.0, 1.0]])
    out = align.whitespace_attention(weights, [[0], [1, 2]], [[0, 1], [2]])
    np.testing.assert_allclose(out, [[0.4, 0.6], [0.0, 1.0]])


def _processor(path, add_start=True):
    """A framed `WordPieceTokenizer` of a vocabulary file, as the NMT
    example frames its tokenizers (lower-cased, `[END]`, 64 tokens)."""
    return text_lib.load_tokenizer(path).framed(add_start, True, 64)


def _vocab(tmp_path, words):
    path = os.path.join(str(tmp_path), "vocab.txt")
    text_lib.save_vocabulary(list(text_lib.RESERVED_TOKENS) + words, path)
    return path


def test_piece_counts_follow_the_processor(tmp_path):
    path = _vocab(tmp_path, ["l", "'", "homme", ".", "oct", "##obre", "20"])
    processor = _processor(path, add_start=False)
    counts = align.piece_counts(processor, ["L'homme.", "20 octobre"])
    assert counts == [[4], [1, 2]]
    ids = processor.tokenize(["20 octobre"])[0].numpy().tolist()
    positions = align.word_positions("20 octobre", counts[1])
    # Position p is token p of the source (no [START]); [END] is last.
    assert [ids[p] for p in positions[1]] == [8, 9]
    assert ids[-1] == text_lib.END_ID


class _FixedAttention:
    """A stand-in `Seq2Seq` whose attention row `r` is `row(r, columns)`
    (default: all on source token `(r - 1) mod 3`)."""

    def __init__(self, row=None):
        self.row = row or (lambda r, n: np.eye(n)[(r - 1) % 3])

    def __call__(self, inputs, training=False):
        batch, rows = inputs["target_in"].shape
        columns = inputs["source_ids"].shape[1]
        weights = np.zeros((batch, rows, columns), "float32")
        for r in range(rows):
            weights[:, r] = self.row(r, columns)
        return {"attention": weights, "alignment": weights}


def _abc_xyz(tmp_path):
    """Source ("a b c") and target ("x y z") processors of 3 words."""
    (tmp_path / "s").mkdir()
    (tmp_path / "t").mkdir()
    source = _processor(
        _vocab(tmp_path / "s", ["a", "b", "c"]), add_start=False
    )
    target = _processor(_vocab(tmp_path / "t", ["x", "y", "z"]))
    return source, target


def test_shift_takes_the_row_of_the_step_that_reads_the_word(tmp_path):
    source, target = _abc_xyz(tmp_path)
    pairs = [("a b c", "x y z")]
    # Row r predicts target word r; row r + 1 reads it.
    plain = align.attention_word_links(_FixedAttention(), source, target, pairs)
    shifted = align.attention_word_links(
        _FixedAttention(), source, target, pairs, shift=True
    )
    assert plain == [{(2, 0), (0, 1), (1, 2)}]
    assert shifted == [{(0, 0), (1, 1), (2, 2)}]


def _split_row(r, columns):
    # 0.6 on source token r mod 3, 0.4 on (r + 1) mod 3.
    row = np.zeros(columns)
    row[r % 3], row[(r + 1) % 3] = 0.6, 0.4
    return row


def test_threshold_links_keep_every_weight_above_the_threshold(tmp_path):
    source, target = _abc_xyz(tmp_path)
    pairs = [("a b c", "x y z")]
    links = functools.partial(
        align.attention_word_links, _FixedAttention(_split_row), source,
        target, pairs,
    )
    assert links() == [{(0, 0), (1, 1), (2, 2)}]
    assert links(method="threshold", threshold=0.5) == links()
    assert links(method="threshold", threshold=0.3) == [
        {(0, 0), (1, 0), (1, 1), (2, 1), (2, 2), (0, 2)}
    ]
    assert links(method="threshold", threshold=0.7) == [set()]
    with pytest.raises(ValueError, match="method"):
        links(method="softmax")


def test_shift_applies_to_the_reverse_run(tmp_path, monkeypatch):
    _fixed_runs(tmp_path, monkeypatch)
    pairs = [("a b c", "x y z")]
    diagonal = [{(0, 0), (1, 1), (2, 2)}]
    # The reverse run reads "x y z" -> "a b c"; its links are transposed.
    assert align.align_run(None, pairs, reverse_run="rev") == [
        {(0, 2), (1, 0), (2, 1)}
    ]
    assert align.align_run(None, pairs, reverse_run="rev", shift=True) == (
        diagonal
    )
    assert align.align_run(
        "fwd", pairs, reverse_run="rev", symmetrize="intersection",
        shift=True,
    ) == diagonal


def test_threshold_links_apply_to_the_reverse_run(tmp_path, monkeypatch):
    """`method`/`threshold` hold for both directions, not the forward run
    only: each row splits its weight over two source tokens, so threshold
    links give every word two links in either direction, argmax one."""
    from examples.nmt import run as run_lib

    path = _vocab(tmp_path, ["a", "b", "c", "x", "y", "z"])
    source = _processor(path, add_start=False)
    target = _processor(path)
    split = _FixedAttention(
        lambda r, n: 0.5 * (np.eye(n)[(r - 1) % 3] + np.eye(n)[r % 3])
    )
    monkeypatch.setattr(
        run_lib, "load_trained", lambda run_dir: (split, source, target, None)
    )
    pairs = [("a b c", "x y z")]
    for run, reverse in (("fwd", None), (None, "rev")):
        argmax = align.align_run(run, pairs, reverse_run=reverse)
        assert len(argmax[0]) == 3
        dense = align.align_run(
            run, pairs, reverse_run=reverse, method="threshold", threshold=0.4
        )
        assert len(dense[0]) == 6 and argmax[0] <= dense[0]
    union = align.align_run(
        "fwd", pairs, reverse_run="rev", symmetrize="union",
        method="threshold", threshold=0.4,
    )
    assert len(union[0]) > 6


def _fixed_runs(tmp_path, monkeypatch):
    """Both runs are `_FixedAttention`: row r on source token (r-1) mod 3."""
    from examples.nmt import run as run_lib

    path = _vocab(tmp_path, ["a", "b", "c", "x", "y", "z"])
    source = _processor(path, add_start=False)
    target = _processor(path)
    monkeypatch.setattr(
        run_lib, "load_trained",
        lambda run_dir: (_FixedAttention(), source, target, None),
    )


def test_prior_mixes_into_both_directions(tmp_path, monkeypatch):
    _fixed_runs(tmp_path, monkeypatch)
    pairs = [("a b c", "x y z")]
    diagonal = [{(0, 0), (1, 1), (2, 2)}]
    # The prior says a-x, b-y, c-z (rate 1 each, "A" and "Z." alike).
    prior = al.LinkRates.from_links(["A b c."], ["x y Z."], diagonal)
    plain_fwd = [{(2, 0), (0, 1), (1, 2)}]
    plain_rev = [{(0, 2), (1, 0), (2, 1)}]
    for run, reverse, plain in (
        ("fwd", None, plain_fwd), (None, "rev", plain_rev),
    ):
        links = functools.partial(
            align.align_run, run, pairs, reverse_run=reverse, prior=prior
        )
        # Each row: 1 - w on the attention's word, w on the prior's.
        assert links(prior_weight=0.0) == plain
        assert links(prior_weight=0.4) == plain
        assert links(prior_weight=0.6) == diagonal
        assert links(prior_weight=1.0) == diagonal
        # Threshold links: both words at 0.5 each, under a weight of 0.5.
        assert links(
            prior_weight=0.5, method="threshold", threshold=0.5
        ) == [plain[0] | diagonal[0]]
    with pytest.raises(TypeError, match="`prior` must be a"):
        align.align_run("fwd", pairs, prior={("a", "x"): 1.0})
    with pytest.raises(ValueError, match="weight"):
        align.align_run("fwd", pairs, prior=prior, prior_weight=1.5)


def test_cognates_prior_needs_no_links(tmp_path, monkeypatch):
    from examples.nmt import run as run_lib

    path = _vocab(tmp_path, ["alpha", "beta", "gamma"])
    source = _processor(path, add_start=False)
    target = _processor(path)
    monkeypatch.setattr(
        run_lib, "load_trained",
        lambda run_dir: (_FixedAttention(), source, target, None),
    )
    pairs = [("alpha beta gamma", "Alpha beta gamma")]
    links = functools.partial(align.align_run, "fwd", pairs)
    # The attention puts each word on the word before: the same spelling
    # (case aside) outweighs it from a weight above 0.5.
    assert links() == [{(2, 0), (0, 1), (1, 2)}]
    assert links(cognates=True, prior_weight=0.4) == links()
    assert links(cognates=True, prior_weight=0.6) == [{(0, 0), (1, 1), (2, 2)}]
    # With link rates too, the prior is the larger of the two: alpha-beta
    # at rate 1/2 alone links beta to alpha (the other rows have no prior:
    # no link), beside the spelling's 1 for beta-beta it does not.
    rates = al.LinkRates.from_links(
        ["alpha", "alpha"], ["beta", "beta"], [{(0, 0)}, set()]
    )
    assert links(prior=rates, prior_weight=1.0) == [{(0, 1)}]
    assert links(prior=rates, cognates=True, prior_weight=1.0) == [
        {(0, 0), (1, 1), (2, 2)}
    ]
    with pytest.raises(TypeError, match="cognates"):
        links(cognates="yes")
    out = str(tmp_path / "out.align")
    data = str(tmp_path / "pairs.tsv")
    with open(data, "w", encoding="utf-8") as f:
        f.write("alpha beta gamma\tAlpha beta, gamma.\n")
    assert cli.main(
        ["align", "--run", "fwd", "--data", data, "--out", out, "--quiet",
         "--cognates", "--prior-weight", "0.6"]
    ) == 0
    assert al.read_pharaoh(out)[0][0] == {(0, 0), (1, 1), (2, 2)}


def test_max_tokens_aligns_what_the_runs_cut_leaves_out(
    tmp_path, monkeypatch
):
    from examples.nmt import run as run_lib

    run_dir = str(tmp_path / "run")
    os.makedirs(run_dir)
    words = list(text_lib.RESERVED_TOKENS) + ["a", "b", "c", "x", "y", "z"]
    for name in ("source_vocab.txt", "target_vocab.txt"):
        text_lib.save_vocabulary(words, os.path.join(run_dir, name))
    # The run's cut: 4 tokens, [START] x y [END] on the target side.
    text_config = config_lib.TextConfig(max_tokens=4)
    monkeypatch.setattr(
        run_lib, "load_trained",
        lambda path: (
            _FixedAttention(), *run_lib.make_processors(path, text_config),
            (None, text_config, None, None),
        ),
    )
    pairs = [("a b c", "x y z")]
    cut = align.align_run(run_dir, pairs)
    whole = align.align_run(run_dir, pairs, max_tokens=16)
    # z (target word 2) is cut: no link; read whole, every word has one.
    assert sorted(j for _, j in cut[0]) == [0, 1]
    assert sorted(j for _, j in whole[0]) == [0, 1, 2]
    with pytest.raises(ValueError, match="max_tokens"):
        align.align_run(run_dir, pairs, max_tokens=0)
    with pytest.raises(ValueError, match="max_tokens.*at least 3"):
        align.align_run(run_dir, pairs, max_tokens=2)
    out = str(tmp_path / "out.align")
    data = str(tmp_path / "pairs.tsv")
    with open(data, "w", encoding="utf-8") as f:
        f.write("a b c\tx y z\n")
    assert cli.main(["align", "--run", run_dir, "--data", data, "--out", out,
                     "--quiet", "--max-tokens", "16"]) == 0
    assert al.read_pharaoh(out)[0][0] == whole[0]


def _write(path, text):
    """Writes `text` to `path` (UTF-8); returns the path as a str."""
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_align_command_takes_a_prior(tmp_path, monkeypatch, capsys):
    _fixed_runs(tmp_path, monkeypatch)
    data = _write(tmp_path / "pairs.tsv", "a b c\tx y z\nc b a\tz y x\n")
    # The prior's corpus: the same words, linked on the diagonal.
    prior_data = _write(tmp_path / "prior.tsv", "a b c\tx y z\nb c\ty z\n")
    prior_links = str(tmp_path / "prior.align")
    al.write_pharaoh(prior_links, [{(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1)}])
    out = str(tmp_path / "out.align")
    base = ["align", "--run", "fwd", "--data", data, "--out", out, "--quiet"]
    assert cli.main(
        base + ["--prior-data", prior_data, "--prior-links", prior_links,
                "--prior-weight", "0.6"]
    ) == 0
    assert "pairs/s" in capsys.readouterr().out
    # Pair 2 reverses both sides: its diagonal is a word-for-word match.
    assert [s for s, _ in al.read_pharaoh(out)] == [
        {(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2)}
    ]
    # The prior's corpus in another format: an Anki file (English first).
    anki = str(tmp_path / "prior_anki.txt")
    with open(anki, "w", encoding="utf-8") as f:
        f.write("x y z\ta b c\tCC-BY 2.0\ny z\tb c\tCC-BY 2.0\n")
    assert cli.main(
        base + ["--prior-data", anki, "--prior-data-format", "anki",
                "--prior-links", prior_links, "--prior-weight", "0.6"]
    ) == 0
    assert [s for s, _ in al.read_pharaoh(out)] == [
        {(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2)}
    ]
    # Without --prior-data the prior is counted on --data itself.
    al.write_pharaoh(prior_links, [{(0, 0)}, {(0, 0)}])
    assert cli.main(base + ["--prior-links", prior_links,
                            "--prior-weight", "1"]) == 0
    # a-x (linked in pair 1) and c-z (pair 2) at rate 1/2 each; y has no
    # prior: its row is all 0, no link.
    assert [s for s, _ in al.read_pharaoh(out)] == [
        {(0, 0), (2, 2)}, {(0, 0), (2, 2)}
    ]
    capsys.readouterr()
    # Misuse: exit status 2 and a message naming the argument.
    assert cli.main(base + ["--prior-data", prior_data]) == 2
    assert "--prior-data` needs `--prior-links`" in capsys.readouterr().err
    al.write_pharaoh(prior_links, [{(0, 0)}])
    assert cli.main(base + ["--prior-links", prior_links]) == 2
    assert "one line per pair. Received: 1 lines" in capsys.readouterr().err
    al.write_pharaoh(prior_links, [{(0, 0)}, {(0, 7)}])
    assert cli.main(base + ["--prior-links", prior_links]) == 2
    assert "Link 0-7 of line 2 is out of range" in capsys.readouterr().err
    al.write_pharaoh(prior_links, [{(0, 0)}, {(0, 0)}])
    assert cli.main(base + ["--prior-links", prior_links,
                            "--prior-weight", "-0.5"]) == 2
    assert "weight" in capsys.readouterr().err


def test_self_prior_counts_the_runs_own_links(tmp_path, monkeypatch, capsys):
    """`--self-prior`: the link rates of a first pass without a prior over
    `--prior-data` (default: `--data`), no reference aligner: the links of
    `--prior-links` given that pass's output."""
    _fixed_runs(tmp_path, monkeypatch)
    data = _write(tmp_path / "pairs.tsv", "b c a\tx y z\n")
    prior_data = _write(
        tmp_path / "prior.tsv", "a b c\tx y z\nA b c.\tx y Z.\n"
    )
    out = str(tmp_path / "out.align")
    first = str(tmp_path / "first.align")
    base = ["align", "--run", "fwd", "--data", data, "--out", out, "--quiet"]

    def sure(path):
        return [s for s, _ in al.read_pharaoh(path)]

    # The runs' own links of the prior's pairs: target word j on source
    # word j - 1 (c-x, a-y, b-z), whatever the words.
    positional = {(2, 0), (0, 1), (1, 2)}
    assert cli.main(["align", "--run", "fwd", "--data", prior_data,
                     "--out", first, "--quiet"]) == 0
    assert sure(first) == [positional, positional]
    # At weight 1 the rates alone link x to c, y to a, z to b wherever
    # they stand; under 0.5 the attention's positions win.
    self_prior = base + ["--self-prior", "--prior-data", prior_data]
    assert cli.main(self_prior + ["--prior-weight", "1"]) == 0
    assert "self prior: 2 pairs, 6 links" in capsys.readouterr().out
    assert sure(out) == [{(1, 0), (2, 1), (0, 2)}]
    assert cli.main(self_prior + ["--prior-weight", "0.4"]) == 0
    assert sure(out) == [positional]
    for extra in ([], ["--reverse-run", "rev"], ["--cognates"]):
        for weight in ("0.6", "1"):
            assert cli.main(self_prior + extra + ["--prior-weight", weight]) == 0
            own = al.read_pharaoh(out)
            assert cli.main(
                base + extra + ["--prior-links", first, "--prior-data",
                                prior_data, "--prior-weight", weight]
            ) == 0
            assert al.read_pharaoh(out) == own, (extra, weight)
    # Without --prior-data the rates are counted on --data itself: its own
    # positional links, so the rates alone give them back.
    assert cli.main(base + ["--self-prior", "--prior-weight", "1"]) == 0
    assert sure(out) == [positional]
    capsys.readouterr()
    assert cli.main(self_prior + ["--prior-links", first]) == 2
    assert "does not go with `--prior-links`" in capsys.readouterr().err


def test_align_command_shows_progress_on_large_corpora(
    tmp_path, monkeypatch, capsys
):
    """1,000 pairs and more get a progress bar (pairs done of the total)
    unless --quiet; every run prints its throughput."""
    _fixed_runs(tmp_path, monkeypatch)
    data = str(tmp_path / "pairs.tsv")
    out = str(tmp_path / "out.align")
    base = ["align", "--run", "fwd", "--data", data, "--out", out]
    for count, quiet, bar in ((1200, False, True), (1200, True, False),
                              (999, False, False)):
        with open(data, "w", encoding="utf-8") as f:
            f.write("a b c\tx y z\n" * count)
        assert cli.main(base + (["--quiet"] if quiet else [])) == 0
        printed = capsys.readouterr().out
        assert (f"{count}/{count}" in printed) == bar, printed
        assert f"{count} pairs, {3 * count} links" in printed
        assert "pairs/s)" in printed
        assert len(al.read_pharaoh(out)) == count


# ----------------------------------------------------------------------
# Guided alignment through the pipeline.


def _copy_pairs(count, seed=0):
    """Synthetic pairs: the target copies the source word by word."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        n = rng.randint(3, 6)
        ids = [rng.randrange(8) for _ in range(n)]
        pairs.append(
            (" ".join(f"s{i}x" for i in ids), " ".join(f"t{i}y" for i in ids))
        )
    return pairs


def _write_pairs(path, pairs, links):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{s}\t{t}\n" for s, t in pairs)
    al.write_pharaoh(path + ".align", links)


def _reversed_links(pairs):
    out = []
    for s, _ in pairs:
        n = len(s.split())
        out.append({(i, n - 1 - i) for i in range(n)})
    return out


def test_links_keep_their_pair_through_filtering(tmp_path):
    pairs = [("a b", "x y"), ("a b c d e", "x"), ("c", "z"), ("a b", "x y")]
    links = [{(0, 0)}, {(4, 0)}, {(0, 0)}, {(1, 1)}]
    path = str(tmp_path / "pairs.tsv")
    _write_pairs(path, pairs, links)
    data = config_lib.DataConfig(
        paths=(path,), max_words=3, validation_fraction=0.0,
        test_fraction=0.0,
    )
    from examples.nmt import data as data_lib

    _, splits = data_lib.load_splits(data, path + ".align")
    assert splits["train"].pairs == [pairs[0], pairs[2], pairs[3]]
    # Lines 1, 3, 4 (the long pair is dropped; equal pairs keep their own).
    got = splits["train"].links
    assert got == [(1, {(0, 0)}), (3, {(0, 0)}), (4, {(1, 1)})]
    with open(path + ".short", "w") as f:
        f.write("0-0\n")
    with pytest.raises(ValueError, match="one line per pair"):
        data_lib.load_splits(data, path + ".short")


def test_links_travel_with_their_pair_into_the_splits(tmp_path):
    """Each split holds the links of its own pairs: equal pairs with
    different links keep theirs (no matching by text)."""
    pairs = [(f"w{i} a", f"v{i} b") for i in range(40)] + [("same", "same")] * 2
    links = [{(0, 0)}] * 40 + [{(0, 0)}, set()]
    path = str(tmp_path / "pairs.tsv")
    _write_pairs(path, pairs, links)
    data = config_lib.DataConfig(
        paths=(path,), validation_fraction=0.3, test_fraction=0.3,
    )
    from examples.nmt import data as data_lib

    _, splits = data_lib.load_splits(data, path + ".align")
    numbers = sorted(n for s in splits.values() for n, _ in s.links)
    assert numbers == list(range(1, 43))
    for split in splits.values():
        for pair, (number, _) in zip(split.pairs, split.links):
            assert pair == pairs[number - 1]


def test_make_dataset_feeds_the_reference(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "t").mkdir()
    s_path = _vocab(tmp_path / "s", ["a", "bb", "##b"])
    t_path = _vocab(tmp_path / "t", ["x", "y"])
    source = _processor(s_path, add_start=False)
    target = _processor(t_path)
    from examples.nmt.corpus import Corpus

    corpus = Corpus(pairs=[("a bbb", "y x"), ("a", "x")])
    word_links = [(1, {(1, 0), (0, 1)}), (2, {(0, 0)})]
    links = pipeline.guided_token_links(corpus, word_links, source, target)
    # "bbb" = bb ##b: source columns 1 and 2.
    assert links[0] == {(1, 0), (2, 0), (0, 1)}
    ds = dataset_lib.make_dataset(corpus, source, target, 2, links=links)
    inputs, targets = next(iter(ds))
    reference = targets["alignment"].numpy()
    assert reference.shape == (2, 3, 4)  # T = 2 words + [END], S = 3 + [END]
    np.testing.assert_array_equal(
        reference[0], [[0, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        reference[1], [[1, 0, -1, -1], [0, 0, -1, -1], [-1, -1, -1, -1]]
    )
    assert targets["logits"].shape == inputs["target_in"].shape
    # Fixed shapes (XLA): the reference padded with -1 to the batch width.
    ds = dataset_lib.make_dataset(
        corpus, source, target, 2, links=links, fixed_shapes=True,
        bucket_boundaries=(3, 6),
    )
    inputs, targets = next(iter(ds))
    padded = targets["alignment"].numpy()
    width = inputs["source_ids"].shape[1]
    assert width == 5 and padded.shape == (2, width - 1, width)
    assert targets["logits"].shape == inputs["target_in"].shape == (2, width - 1)
    np.testing.assert_array_equal(padded[:, :3, :4], reference)
    assert np.all(padded[:, 3:, :] == -1) and np.all(padded[:, :, 4:] == -1)


def _train(run_dir, path, guided, epochs=6, head="off"):
    configs = (
        config_lib.DataConfig(
            paths=(path,), validation_fraction=0.1, test_fraction=0.0
        ),
        config_lib.TextConfig(source_vocab_size=60, target_vocab_size=60),
        config_lib.ModelConfig(
            embedding_dim=16, units=16, bridge=False, alignment_head=head
        ),
        config_lib.TrainConfig(
            epochs=epochs, batch_size=32, verbose=0, learning_rate=1e-2,
            warmup_steps=10, bucket_boundaries=(),
            guided_alignment=path + ".align" if guided else None,
        ),
    )
    return train_lib.train(run_dir, *configs, log=lambda *_: None)


def _agreement(links, reference):
    hits = sum(len(a & b) for a, b in zip(links, reference))
    return hits / sum(len(b) for b in reference)


@pytest.mark.slow
def test_guided_attention_follows_the_given_links(tmp_path):
    # The copy task aligns on the diagonal by itself; the given links are
    # the reversed diagonal, which only guidance can teach.
    pairs = _copy_pairs(400)
    reference = _reversed_links(pairs)
    path = str(tmp_path / "pairs.tsv")
    _write_pairs(path, pairs, reference)
    test = pairs[:60]
    scores = {}
    for guided in (False, True):
        run_dir = str(tmp_path / f"run_{guided}")
        _train(run_dir, path, guided)
        links = align.align_run(run_dir, test)
        scores[guided] = _agreement(links, reference[:60])
    assert scores[True] > 0.8, scores
    assert scores[True] > scores[False] + 0.3, scores


@pytest.mark.slow
def test_alignment_head_learns_the_links_the_attention_is_left_free(tmp_path):
    """With `alignment_head`, guidance trains a second attention (queried
    with the predicted word too) and `align` reads it: it follows the
    reversed diagonal, while the translation attention, unsupervised, is
    free to stay on the copy task's own diagonal."""
    pairs = _copy_pairs(400)
    reference = _reversed_links(pairs)
    path = str(tmp_path / "pairs.tsv")
    _write_pairs(path, pairs, reference)
    run_dir = str(tmp_path / "run")
    _train(run_dir, path, guided=True, head="guided")
    test = pairs[:60]
    assert _agreement(align.align_run(run_dir, test), reference[:60]) > 0.8
    seq2seq, source, target, _ = run_lib.load_trained(run_dir)
    assert seq2seq.alignment_head == "guided"
    head = align.attention_word_links(seq2seq, source, target, test)
    assert _agreement(head, reference[:60]) > 0.8
    for (w, _, _) in align.teacher_forced_attention(
        seq2seq, source, target, test
    ):
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
    # The translation attention, unsupervised, does not follow them.
    plain = align.attention_word_links(
        seq2seq, source, target, test, output="attention"
    )
    assert _agreement(plain, reference[:60]) < 0.5


def test_alignment_head_needs_guided_alignment(tmp_path):
    path = str(tmp_path / "pairs.tsv")
    pairs = _copy_pairs(20)
    _write_pairs(path, pairs, _reversed_links(pairs))
    with pytest.raises(ValueError, match="alignment_head='guided'.*guided_alignment"):
        _train(str(tmp_path / "run"), path, guided=False, head="guided")
    with pytest.raises(ValueError, match="alignment_head='lexical'.*guided_alignment"):
        _train(str(tmp_path / "run"), path, guided=True, head="lexical")


@pytest.mark.slow
def test_lexical_alignment_head_aligns_without_links(tmp_path):
    """The unsupervised lexical head: on a copy task whose words are
    shuffled against the source (so position says nothing), only the
    lexical table can tell which source word a target word comes from;
    `align` reads the head's posterior and finds the permutation."""
    rng = random.Random(3)
    pairs, truth = [], []
    for s, t in _copy_pairs(500, seed=2):
        words = t.split()
        order = list(range(len(words)))
        rng.shuffle(order)
        pairs.append((s, " ".join(words[k] for k in order)))
        # Target word j copies source word order[j].
        truth.append({(order[j], j) for j in range(len(order))})
    path = str(tmp_path / "pairs.tsv")
    _write_pairs(path, pairs, truth)
    run_dir = str(tmp_path / "run")
    _, history = _train(run_dir, path, guided=False, head="lexical", epochs=8)
    assert history["lexical_loss"][-1] < history["lexical_loss"][0]
    test = pairs[:60]
    # Source words repeat within a sentence: score against every position
    # of the right word.
    seq2seq, source, target, _ = run_lib.load_trained(run_dir)
    for w, _, _ in align.teacher_forced_attention(seq2seq, source, target, test):
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
    links = align.attention_word_links(seq2seq, source, target, test)
    right = sum(
        s.split()[i][1:-1] == t.split()[j][1:-1]
        for (s, t), pair in zip(test, links) for i, j in pair
    )
    lexical = right / sum(len(p) for p in links)
    assert lexical > 0.85, lexical
    # The translation attention alone, not trained for it, does worse.
    plain = align.attention_word_links(
        seq2seq, source, target, test, output="attention"
    )
    plain_right = sum(
        s.split()[i][1:-1] == t.split()[j][1:-1]
        for (s, t), pair in zip(test, plain) for i, j in pair
    )
    assert plain_right / sum(len(p) for p in plain) < lexical - 0.3


def test_next_tokens_rebuild_target_out():
    target = np.array([[1, 5, 6, 3], [1, 7, 3, 0], [1, 3, 0, 0]], "int32")
    target_in, target_out = target[:, :-1], target[:, 1:]
    rebuilt = np.asarray(alignment_head.next_tokens(target_in, END_ID))
    # Row 0 is the longest (its [END] is only in target_out); the others
    # end inside target_in.
    np.testing.assert_array_equal(rebuilt, target_out)


@pytest.mark.slow
def test_cli_round_trip_train_align_score(tmp_path, capsys):
    pairs = _copy_pairs(300, seed=1)
    diagonal = [{(i, i) for i in range(len(s.split()))} for s, _ in pairs]
    path = str(tmp_path / "pairs.tsv")
    _write_pairs(path, pairs, diagonal)
    run_dir = str(tmp_path / "run")
    rev_dir = str(tmp_path / "rev")
    rev_path = str(tmp_path / "rev.tsv")
    _write_pairs(rev_path, [(t, s) for s, t in pairs], diagonal)
    common = [
        "--validation-fraction", "0.1", "--test-fraction", "0",
        "--source-vocab-size", "60", "--target-vocab-size", "60",
        "--embedding-dim", "16", "--units", "16", "--no-bridge",
        "--epochs", "6", "--learning-rate", "0.01", "--warmup-steps", "10",
        "--verbose", "0",
    ]
    # Guided by the diagonal (the tiny unsupervised model aligns poorly).
    assert cli.main(
        ["train", "--data", path, "--out", run_dir,
         "--guided-alignment", path + ".align"] + common
    ) == 0
    assert cli.main(
        ["train", "--data", rev_path, "--out", rev_dir,
         "--guided-alignment", rev_path + ".align",
         "--guided-alignment-type", "mse",
         "--guided-alignment-weight", "5"] + common
    ) == 0
    gold = str(tmp_path / "gold.tsv")
    _write_pairs(gold, pairs[:40], diagonal[:40])
    hyp = str(tmp_path / "hyp.align")
    assert cli.main(
        ["align", "--run", run_dir, "--data", gold, "--out", hyp,
         "--reverse-run", rev_dir, "--quiet"]
    ) == 0
    shifted = str(tmp_path / "shifted.align")
    assert cli.main(
        ["align", "--run", run_dir, "--data", gold, "--out", shifted,
         "--reverse-run", rev_dir, "--quiet", "--shift",
         "--symmetrize", "intersection"]
    ) == 0
    # Intersection: at most one link per word of each side.
    for links, _ in al.read_pharaoh(shifted):
        assert len({i for i, _ in links}) == len(links)
        assert len({j for _, j in links}) == len(links)
    # Threshold links of one direction: a target word may get 0..n links,
    # and every argmax link (weight >= 1/S >= a tiny threshold) is kept.
    dense = str(tmp_path / "dense.align")
    assert cli.main(
        ["align", "--run", run_dir, "--data", gold, "--out", dense,
         "--quiet", "--links", "threshold", "--threshold", "1e-6"]
    ) == 0
    argmax = str(tmp_path / "argmax.align")
    assert cli.main(
        ["align", "--run", run_dir, "--data", gold, "--out", argmax, "--quiet"]
    ) == 0
    for (d, _), (a, _) in zip(al.read_pharaoh(dense), al.read_pharaoh(argmax)):
        assert a <= d
    lines = al.read_pharaoh(hyp)
    assert len(lines) == 40
    # The links are over the whitespace words of the pairs.
    for (s, t), (links, _) in zip(pairs[:40], lines):
        assert all(
            i < len(s.split()) and j < len(t.split()) for i, j in links
        )
    capsys.readouterr()
    json_path = str(tmp_path / "scores.json")
    assert cli.main(
        ["score-alignment", "--gold", gold + ".align", "--hyp", hyp,
         "--json", json_path]
    ) == 0
    out = capsys.readouterr().out
    assert "aer" in out and "precision" in out and "recall" in out
    import json

    with open(json_path) as f:
        scores = json.load(f)
    # Unsupervised, the same tiny runs score about 0.77.
    assert scores["aer"] < 0.5, scores
    # A file of the wrong length is refused with exit status 2.
    assert cli.main(
        ["score-alignment", "--gold", path + ".align", "--hyp", hyp]
    ) == 2


# ----------------------------------------------------------------------
# The month fix's model options.


def test_source_end_not_attended():
    from keras_attention.training import runs as model_lib

    config = config_lib.ModelConfig(
        source_vocab_size=13, target_vocab_size=11, embedding_dim=6,
        units=5, attend_source_end=False, attention_values="embedding",
    )
    seq2seq = model_lib.build_model(config)
    source = np.array([[4, 5, 3], [6, 3, 0]], "int32")
    target_in = np.array([[2, 4], [2, 5]], "int32")
    weights = np.asarray(seq2seq(
        {"source_ids": source, "target_in": target_in}, training=False
    )["attention"])
    assert np.all(weights[0, :, 2] == 0) and np.all(weights[1, :, 1:] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_attention_memory_options_validation():
    with pytest.raises(ValueError, match="attention_values"):
        config_lib.ModelConfig(5, 5, attention_values="states")
    with pytest.raises(ValueError, match="needs `model='luong'`"):
        config_lib.ModelConfig(5, 5, model="stepwise", attention_keys="embedding")
    with pytest.raises(ValueError, match="encoder would be unused"):
        config_lib.ModelConfig(
            5, 5, attention_keys="embedding", attention_values="embedding",
            bridge=False,
        )


def _two_runs(tmp_path, monkeypatch, forward, reverse):
    """`load_trained("fwd")` gives `forward`, any other run `reverse`
    (`_FixedAttention`s); every load is counted in the returned list."""
    from examples.nmt import run as run_lib

    path = _vocab(tmp_path, ["a", "b", "c", "x", "y", "z"])
    source = _processor(path, add_start=False)
    target = _processor(path)
    loads = []

    def load(run_dir):
        loads.append(run_dir)
        model = forward if run_dir == "fwd" else reverse
        return model, source, target, None

    monkeypatch.setattr(run_lib, "load_trained", load)
    return loads, source, target


def test_agreement_links_where_both_directions_agree(tmp_path, monkeypatch):
    """`symmetrize="agreement"`: the links of `agreement_links` on the two
    directions' word attention, the reverse one read swapped and not
    transposed before."""
    # Forward: target word j puts 0.6 on source word j, 0.4 on j + 1.
    # Reverse (reading "x y z" -> "a b c"): source word i puts all on
    # target word i - 1. They agree on (j + 1, j): sqrt(0.4 * 1) = 0.63.
    _, source, target = _two_runs(
        tmp_path, monkeypatch, _FixedAttention(_split_row), _FixedAttention()
    )
    pairs = [("a b c", "x y z"), ("c a", "z x y")]
    agree = functools.partial(
        align.align_run, "fwd", pairs, reverse_run="rev",
        symmetrize="agreement",
    )
    assert agree()[0] == {(1, 0), (2, 1), (0, 2)}
    assert agree(agreement_threshold=0.64) == [set(), set()]
    forward = list(align.attention_word_matrices(
        _FixedAttention(_split_row), source, target, pairs
    ))
    reverse = list(align.attention_word_matrices(
        _FixedAttention(), source, target, [(t, s) for s, t in pairs]
    ))
    for threshold in (0.1, 0.3, 0.5, 0.63):
        assert agree(agreement_threshold=threshold) == [
            al.agreement_links(f, r, threshold)
            for f, r in zip(forward, reverse)
        ]
    # Hard-link symmetrization of the same runs links every word.
    union = align.align_run("fwd", pairs, reverse_run="rev",
                            symmetrize="union")
    assert len(union[0]) == 6 and agree()[0] < union[0]


def test_product_prior_keeps_rows_distributions(tmp_path, monkeypatch):
    """`prior_mix="product"`: `reweight_by_prior` of the word attention
    with the prior's matrix, in both directions."""
    from examples.nmt import run as run_lib

    _, source, target = _two_runs(
        tmp_path, monkeypatch, _FixedAttention(_split_row), _FixedAttention()
    )
    pairs = [("a b c", "x y z")]
    diagonal = [{(0, 0), (1, 1), (2, 2)}]
    prior = al.LinkRates.from_links(["a b c"], ["x y z"], diagonal)
    plain = next(align.attention_word_matrices(
        _FixedAttention(_split_row), source, target, pairs
    ))
    for floor in (0.05, 0.2, 3.0):
        (product,) = align.attention_word_matrices(
            _FixedAttention(_split_row), source, target, pairs, prior=prior,
            prior_mix="product", prior_floor=floor,
        )
        expected = al.reweight_by_prior(
            plain, prior.matrix("a b c".split(), "x y z".split()), floor
        )
        np.testing.assert_allclose(product, expected)
        np.testing.assert_allclose(product.sum(axis=1), 1.0)
    # The reverse run puts 0.4 on the diagonal and 0.6 beside it: every
    # pair it weighs agrees at sqrt(0.6 * 0.4) = sqrt(0.4 * 0.6) = 0.49,
    # under 0.5. The diagonal prior (floor 0.2) moves both directions'
    # mass onto the diagonal (0.9 and 0.8): agreement 0.85 there.
    monkeypatch.setattr(run_lib, "load_trained", lambda run_dir: (
        _FixedAttention(_split_row) if run_dir == "fwd" else _FixedAttention(
            lambda r, n: 0.4 * np.eye(n)[r % 3] + 0.6 * np.eye(n)[(r - 1) % 3]
        ), source, target, None,
    ))
    agree = functools.partial(
        align.align_run, "fwd", pairs, reverse_run="rev",
        symmetrize="agreement", agreement_threshold=0.5,
    )
    assert agree() == [set()]
    assert agree(prior=prior, prior_mix="product") == diagonal
    # A floor large enough leaves the attention as it is.
    assert agree(prior=prior, prior_mix="product", prior_floor=1e9) == [set()]
    with pytest.raises(ValueError, match="prior_mix"):
        align.align_run("fwd", pairs, prior=prior, prior_mix="sum")
    with pytest.raises(ValueError, match="floor"):
        align.align_run("fwd", pairs, prior=prior, prior_mix="product",
                        prior_floor=0.0)


def test_agreement_checks_come_before_any_model_loads(tmp_path, monkeypatch):
    loads, _, _ = _two_runs(
        tmp_path, monkeypatch, _FixedAttention(), _FixedAttention()
    )
    pairs = [("a b c", "x y z")]
    for run, reverse in (("fwd", None), (None, "rev")):
        with pytest.raises(ValueError, match="both directions.*run_dir="):
            align.align_run(run, pairs, reverse_run=reverse,
                            symmetrize="agreement")
    for threshold in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            align.align_run("fwd", pairs, reverse_run="rev",
                            symmetrize="agreement",
                            agreement_threshold=threshold)
    with pytest.raises(ValueError, match="method"):
        align.align_run("fwd", pairs, reverse_run="rev", symmetrize="agree")
    assert loads == []


def test_align_command_agreement_with_a_self_prior(
    tmp_path, monkeypatch, capsys
):
    """`align --symmetrize agreement --self-prior --prior-mix product`:
    the first pass (the self prior's links) is the agreement's too."""
    _two_runs(
        tmp_path, monkeypatch, _FixedAttention(_split_row), _FixedAttention()
    )
    data = _write(tmp_path / "pairs.tsv", "a b c\tx y z\nb c a\ty z x\n")
    out = str(tmp_path / "out.align")
    base = ["align", "--run", "fwd", "--reverse-run", "rev", "--data", data,
            "--out", out, "--quiet", "--symmetrize", "agreement"]
    assert cli.main(base) == 0
    agreed = [{(1, 0), (2, 1), (0, 2)}] * 2
    assert [s for s, _ in al.read_pharaoh(out)] == agreed
    assert cli.main(base + ["--agreement-threshold", "0.7"]) == 0
    assert [s for s, _ in al.read_pharaoh(out)] == [set(), set()]
    # The runs' own agreed links as the prior (rate 1 each): the product
    # only sharpens what the two directions already agree on.
    assert cli.main(base + ["--self-prior", "--prior-mix", "product",
                            "--prior-floor", "0.05"]) == 0
    assert "self prior: 2 pairs, 6 links" in capsys.readouterr().out
    assert [s for s, _ in al.read_pharaoh(out)] == agreed
    assert cli.main(base + ["--agreement-threshold", "2"]) == 2
    assert "threshold" in capsys.readouterr().err
    assert cli.main(["align", "--run", "fwd", "--data", data, "--out", out,
                     "--symmetrize", "agreement"]) == 2
    assert "both directions" in capsys.readouterr().err


def _far_row(r, n):
    # Target word r: 0.45 on source word r (the diagonal), 0.55 on source
    # word r - 1 mod 3 (for word 0, the last source word).
    return 0.45 * np.eye(n)[r % 3] + 0.55 * np.eye(n)[(r - 1) % 3]


def test_diagonal_tension_favors_the_diagonal_in_both_directions(
    tmp_path, monkeypatch, capsys
):
    """`diagonal_tension`: `favor_diagonal` of each direction's word
    attention, after the lexical prior, before the links; the command's
    `--diagonal-tension` too."""
    _, source, target = _two_runs(
        tmp_path, monkeypatch, _FixedAttention(_far_row),
        _FixedAttention(_far_row),
    )
    pairs = [("a b c", "x y z")]
    plain = next(align.attention_word_matrices(
        _FixedAttention(_far_row), source, target, pairs
    ))
    for tension in (0.0, 1.0, 4.0):
        (favored,) = align.attention_word_matrices(
            _FixedAttention(_far_row), source, target, pairs,
            diagonal_tension=tension,
        )
        np.testing.assert_allclose(favored, al.favor_diagonal(plain, tension))
    # After a product prior: the prior's reweighting, then the diagonal's.
    prior = al.LinkRates.from_links(["a b c"], ["x y z"], [{(1, 0)}])
    (both,) = align.attention_word_matrices(
        _FixedAttention(_far_row), source, target, pairs, prior=prior,
        prior_mix="product", diagonal_tension=2.0,
    )
    np.testing.assert_allclose(both, al.favor_diagonal(al.reweight_by_prior(
        plain, prior.matrix("a b c".split(), "x y z".split()), 0.2), 2.0))
    off = [{(2, 0), (0, 1), (1, 2)}]
    diagonal = [{(0, 0), (1, 1), (2, 2)}]
    for run, reverse, expected_off in (
        ("fwd", None, off), (None, "rev", [{(t, s) for s, t in off[0]}]),
    ):
        links = functools.partial(align.align_run, run, pairs,
                                  reverse_run=reverse)
        assert links() == expected_off
        # Word 1 of 3 at 1/3: source word 3 is 2/3 away; exp(-4 * 2/3) *
        # 0.55 < 0.45.
        assert links(diagonal_tension=4.0) == diagonal
        assert links(diagonal_tension=0.0) == expected_off
    # Agreement reads the favored matrices of both directions.
    assert align.align_run(
        "fwd", pairs, reverse_run="rev", symmetrize="agreement",
        agreement_threshold=0.5, diagonal_tension=4.0,
    ) == diagonal
    with pytest.raises(ValueError, match="tension"):
        align.align_run("fwd", pairs, diagonal_tension=-1.0)
    data = _write(tmp_path / "pairs.tsv", "a b c\tx y z\n")
    out = str(tmp_path / "out.align")
    base = ["align", "--run", "fwd", "--reverse-run", "rev", "--data", data,
            "--out", out, "--quiet", "--symmetrize", "intersection"]
    assert cli.main(base) == 0
    assert [s for s, _ in al.read_pharaoh(out)] == [set()]
    assert cli.main(base + ["--diagonal-tension", "4"]) == 0
    assert [s for s, _ in al.read_pharaoh(out)] == diagonal
    assert cli.main(base + ["--diagonal-tension", "nan"]) == 2
    assert "tension" in capsys.readouterr().err
