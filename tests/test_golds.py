"""The shipped gold alignments: format, indices and the README's counts.

Both golds are `pairs.tsv` (`French<TAB>English`, one pair a line) and
`gold.pharaoh` (one line of links a pair, `i-j` sure, `i?j` possible,
0-based over the whitespace words). Every link must name a word of its
pair, no link may be listed twice, and the counts the README gives must be
the files' counts.
"""

import pathlib
import re

import pytest

from keras_attention import alignment as al

DATA = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "data"
GOLDS = ("fra_eng_gold", "fra_eng_rare_gold")
_LINK = re.compile(r"^(\d+)([-?])(\d+)$")


def _read(name):
    folder = DATA / name
    pairs = (folder / "pairs.tsv").read_text(encoding="utf-8").splitlines()
    links = (folder / "gold.pharaoh").read_text(encoding="utf-8").splitlines()
    return folder, pairs, links


@pytest.mark.parametrize("name", GOLDS)
def test_every_link_names_a_word_of_its_pair(name):
    _, pairs, links = _read(name)
    assert len(pairs) == len(links), "one line of links per pair"
    for number, (pair, line) in enumerate(zip(pairs, links), start=1):
        columns = pair.split("\t")
        assert len(columns) == 2 and all(c.strip() for c in columns), (
            f"{name}/pairs.tsv:{number} is not French<TAB>English")
        n_src, n_tgt = (len(c.split()) for c in columns)
        seen = set()
        for token in line.split():
            match = _LINK.match(token)
            assert match, f"{name}/gold.pharaoh:{number}: {token!r}"
            i, j = int(match.group(1)), int(match.group(3))
            assert i < n_src and j < n_tgt, (
                f"{name}/gold.pharaoh:{number}: {token} outside "
                f"{n_src} x {n_tgt} words")
            assert (i, j) not in seen, (
                f"{name}/gold.pharaoh:{number}: {i},{j} listed twice")
            seen.add((i, j))
        assert any(kind == "-" for kind in re.findall(r"[-?]", line)), (
            f"{name}/gold.pharaoh:{number} has no sure link")
    # The library's reader accepts the file as it is.
    assert len(al.read_pharaoh(str(DATA / name / "gold.pharaoh"))) == len(pairs)


@pytest.mark.parametrize("name", GOLDS)
def test_readme_counts_are_the_files_counts(name):
    folder, pairs, links = _read(name)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    text = " ".join(readme.split())
    sure = sum(t.count("-") for line in links for t in line.split())
    possible = sum(t.count("?") for line in links for t in line.split())
    assert f"{sure} sure and {possible} possible links" in text
    assert f"({len(pairs)} " in readme.splitlines()[0]


def test_the_golds_do_not_share_a_pair():
    _, first, _ = _read("fra_eng_gold")
    _, rare, _ = _read("fra_eng_rare_gold")
    assert len(rare) >= 100
    assert len(set(rare)) == len(rare)
    french = {pair.split("\t")[0] for pair in first}
    assert not [pair for pair in rare if pair.split("\t")[0] in french]
