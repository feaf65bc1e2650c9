"""Reference alignments (`keras_attention.alignment.reference`) and the
`reference-align` command: the word mapping, symmetrization, transposition
and file form with a stand-in aligner; eflomal itself where installed."""

import random
import sys

import pytest

from keras_attention import alignment as al
from keras_attention.alignment import reference


def fake_aligner(calls):
    """Links token 0 of each side, the last tokens, and (forward only) the
    fifth source token to the second target token when both exist."""

    def align(source_lines, target_lines):
        calls.append((list(source_lines), list(target_lines)))
        forward, reverse = [], []
        for s, t in zip(source_lines, target_lines):
            s, t = s.split(), t.split()
            both = {(0, 0), (len(s) - 1, len(t) - 1)}
            reverse.append(set(both))
            extra = {(4, 1)} if len(s) > 4 and len(t) > 1 else set()
            forward.append(both | extra)
        return forward, reverse

    return align


def test_tokenize_words():
    assert reference.tokenize_words("Va-t'en !") == [
        ["va", "-", "t", "'", "en"], ["!"]
    ]
    assert reference.tokenize_words("  Hello,  world ") == [
        ["hello", ","], ["world"]
    ]


def test_token_links_become_word_links_and_symmetrize():
    calls = []
    pairs = [("Va-t'en !", "Go away !")]
    out = reference.reference_links(pairs, "union", aligner=fake_aligner(calls))
    assert calls == [(["va - t ' en !"], ["go away !"])]
    # Tokens 0 and 4 ("va", "en") are word 0, token 5 ("!") word 1.
    assert out["forward"] == [{(0, 0), (0, 1), (1, 2)}]
    assert out["reverse"] == [{(0, 0), (1, 2)}]
    assert out["symmetric"] == [{(0, 0), (0, 1), (1, 2)}]
    inter = reference.reference_links(
        pairs, "intersection", aligner=fake_aligner([])
    )
    assert inter["symmetric"] == [{(0, 0), (1, 2)}]


def test_transpose_swaps_the_sides_and_the_directions():
    pairs = [("Va-t'en !", "Go away !"), ("a b c", "x y")]
    plain = reference.reference_links(pairs, aligner=fake_aligner([]))
    flipped = reference.reference_links(
        pairs, transpose=True, aligner=fake_aligner([])
    )
    assert flipped["forward"] == [al.transpose_links(x)
                                  for x in plain["reverse"]]
    assert flipped["reverse"] == [al.transpose_links(x)
                                  for x in plain["forward"]]
    assert flipped["symmetric"] == [al.transpose_links(x)
                                    for x in plain["symmetric"]]


@pytest.mark.parametrize(
    "pairs,match",
    [
        ([("a", "")], "non-empty"),
        ([("a",)], "two non-empty"),
        (["a b"], "two non-empty"),
        ([("a", 3)], "two non-empty"),
    ],
)
def test_bad_pairs(pairs, match):
    with pytest.raises(ValueError, match=match):
        reference.reference_links(pairs, aligner=fake_aligner([]))


def test_bad_method_and_bad_aligner():
    with pytest.raises(ValueError, match="method"):
        reference.reference_links([("a", "b")], "diagonal")
    with pytest.raises(ValueError, match="each of the 1 pairs"):
        reference.reference_links(
            [("a", "b")], aligner=lambda s, t: ([], [])
        )


def test_missing_eflomal_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "eflomal", None)
    with pytest.raises(ImportError, match=r"\[align\]"):
        reference.eflomal_token_links(["a"], ["b"])


def write_anki(path, pairs):
    """`English<TAB>Other<TAB>attribution` lines of (other, english) pairs."""
    path.write_text(
        "".join(f"{e}\t{o}\tCC-BY 2.0 (France)\n" for o, e in pairs)
        + "a malformed line\n",
        encoding="utf-8",
    )


def test_cli_from_english_transposes(tmp_path, monkeypatch, capsys):
    from examples.nmt import cli
    from examples.nmt import data as data_lib

    calls = []
    monkeypatch.setattr(reference, "eflomal_token_links", fake_aligner(calls))
    data = tmp_path / "fra.txt"
    write_anki(data, [("Va-t'en !", "Go away !"), ("Salut .", "Hi there .")])
    out = str(tmp_path / "eng-fra.align")
    status = cli.main([
        "reference-align", "--data", str(data), "--direction",
        "from-english", "--out", out,
    ])
    assert status == 0 and "2 pairs" in capsys.readouterr().out
    # Aligned as French -> English, written English first.
    assert calls[0][0] == ["va - t ' en !", "salut ."]
    to_english = reference.reference_links(
        [("Va-t'en !", "Go away !"), ("Salut .", "Hi there .")],
        aligner=fake_aligner([]),
    )
    written = al.read_pharaoh(out)
    assert [s for s, _ in written] == [
        al.transpose_links(x) for x in to_english["symmetric"]
    ]
    assert len(al.read_pharaoh(out + ".fwd")) == 2
    # One line per pair that `train --direction from-english` reads.
    corpus = data_lib.load_corpus([str(data)], direction="from-english")
    assert len(written) == len(corpus)
    for (sure, _), (source, target) in zip(written, corpus.pairs):
        for s, t in sure:
            assert s < len(source.split()) and t < len(target.split())
    # `train --guided-alignment` accepts the file (data.load_splits with
    # links_path attaches one line of links to each pair).
    from examples.nmt import config as config_lib

    data_config = config_lib.DataConfig(
        paths=(str(data),), direction="from-english",
        validation_fraction=0.0, test_fraction=0.0,
    )
    _, splits = data_lib.load_splits(data_config, links_path=out)
    links = splits["train"].links
    assert sorted(number for number, _ in links) == [1, 2]


def test_cli_errors(tmp_path, monkeypatch, capsys):
    from examples.nmt import cli

    empty = tmp_path / "empty.tsv"
    empty.write_text("no tab\n")
    status = cli.main(
        ["reference-align", "--data", str(empty), "--out", str(tmp_path / "o")]
    )
    assert status == 2 and "No sentence pairs" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "eflomal", None)
    good = tmp_path / "pairs.tsv"
    good.write_text("a b\tc d\n")
    status = cli.main(
        ["reference-align", "--data", str(good), "--out", str(tmp_path / "o")]
    )
    assert status == 2 and "[align]" in capsys.readouterr().err


def word_for_word_corpus(count, seed=0):
    """Pairs whose words translate one for one, in the same order."""
    lexicon = {"chat": "cat", "chien": "dog", "voit": "sees", "mange": "eats",
               "pomme": "apple", "oiseau": "bird", "petit": "small",
               "rouge": "red"}
    rng = random.Random(seed)
    words = sorted(lexicon)
    pairs = []
    for _ in range(count):
        source = rng.sample(words, rng.randint(2, 5))
        pairs.append((" ".join(source), " ".join(lexicon[w] for w in source)))
    return pairs


def test_eflomal_links_a_word_for_word_corpus(tmp_path):
    pytest.importorskip(
        "eflomal", reason="eflomal is not installed (the `align` extra)"
    )
    from examples.nmt import reference_align

    pairs = word_for_word_corpus(300)
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    links = reference_align.reference_align(str(data), str(tmp_path / "a"))
    assert len(links) == len(pairs)
    assert len(al.read_pharaoh(str(tmp_path / "a.rev"))) == len(pairs)
    total = sum(len(x) for x in links)
    diagonal = sum(s == t for x in links for s, t in x)
    words = sum(len(s.split()) for s, _ in pairs)
    assert diagonal >= 0.9 * total and total >= 0.9 * words
    # Anki from-english: English words first.
    anki = tmp_path / "fra.txt"
    write_anki(anki, pairs)
    flipped = reference_align.reference_align(
        str(anki), str(tmp_path / "b"), direction="from-english"
    )
    assert len(flipped) == len(pairs)
    assert sum(s == t for x in flipped for s, t in x) >= 0.9 * words
