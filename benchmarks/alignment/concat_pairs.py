"""Appends longer training pairs made of shorter ones, their links shifted.

The Anki text is mostly short sentences; the golds hold longer ones, where
the attention of heads trained on the short ones drifts off the diagonal.
`keras_attention.alignment.concatenate_pairs` joins two (or more) pairs of
the text into one, each side joined with a space and the links of the
later parts shifted by the words before them: longer sentences with the
same labels, at new lengths and offsets.

    python -m benchmarks.alignment.concat_pairs --data text_shuf.txt \\
        --links eflomal_shuf.align --count 30000 --skip-first 204 \\
        --out-data text_cat.txt --out-links eflomal_cat.align

Writes every input line, then `--count` joined pairs: each joins
`--parts` (default 2; with `--max-parts M`, a number drawn from `--parts`
to `M`) distinct pairs drawn at random (`--seed`) from the lines after the
first `--skip-first` (the golds' pairs stay out of the joined ones) with
at most `--max-words` divided by their number of whitespace words a side.
Lines are Anki `English<TAB>French[<TAB>...]` (the French side is the
source of the links, `i-j` with `i` the French word, `j` the English
word; only the two sides are kept in the joined lines). Sure and possible
links are written as sure links in the joined lines (the guided loss
counts both alike).
"""

import argparse

from keras_attention.alignment import concatenate_pairs
from keras_attention.alignment import format_pharaoh
from keras_attention.alignment import parse_pharaoh


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--links", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--max-parts", type=int, default=None)
    p.add_argument("--max-words", type=int, default=50)
    p.add_argument("--skip-first", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-data", required=True)
    p.add_argument("--out-links", required=True)
    args = p.parse_args(argv)
    with open(args.data, encoding="utf-8") as f:
        data = f.read().splitlines()
    with open(args.links, encoding="utf-8") as f:
        links = f.read().splitlines()
    if len(links) != len(data):
        raise ValueError(
            f"{args.links} has {len(links)} lines, {args.data} {len(data)}")
    french, english, possible = [], [], []
    for number, (line, link) in enumerate(zip(data, links), start=1):
        if number <= args.skip_first:
            continue
        en, fr = line.split("\t")[:2]
        english.append(en)
        french.append(fr)
        possible.append(
            parse_pharaoh(link, where=f"{args.links}:{number}")[1])
    joined = concatenate_pairs(
        french, english, possible, args.count, args.parts, args.max_parts,
        args.max_words, args.seed)
    with open(args.out_data, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in data)
        f.writelines(f"{en}\t{fr}\n" for fr, en in zip(*joined[:2]))
    with open(args.out_links, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in links)
        f.writelines(format_pharaoh(lk) + "\n" for lk in joined[2])


if __name__ == "__main__":
    main()
