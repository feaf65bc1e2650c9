"""Appends longer training pairs made of shorter ones, their links shifted.

The Anki text is mostly short sentences; the golds hold longer ones, where
the attention of heads trained on the short ones drifts off the diagonal.
A pair made of two (or more) pairs of the text, each side joined with a
space and the links of the second part shifted by the first part's word
counts, teaches a head longer sentences whose links stay in their block:
the same labels, at new lengths and offsets.

    python -m benchmarks.alignment.concat_pairs --data text_shuf.txt \\
        --links eflomal_shuf.align --count 30000 --skip-first 204 \\
        --out-data text_cat.txt --out-links eflomal_cat.align

Writes every input line, then `--count` joined pairs: each joins
`--parts` (default 2; with `--max-parts M`, a number drawn from `--parts`
to `M`) distinct pairs drawn at random (`--seed`) from the
lines after the first `--skip-first` (the golds' pairs stay out of the
joined ones) with at most `--max-words` divided by their number of whitespace
words a side. Lines are Anki `English<TAB>French[<TAB>...]` (the
French side is the source of the links, `i-j` with `i` the French word,
`j` the English word; only the two sides are kept in the joined lines).
"""

import argparse
import random

from keras_attention.alignment import format_pharaoh
from keras_attention.alignment import parse_pharaoh


def join_pairs(pairs: list) -> tuple:
    """`[(english, french, (sure, possible)), ...]` -> one such triple:
    the sides joined by spaces, each part's links shifted by the French
    and English words before it."""
    english, french, sure, possible = [], [], set(), set()
    for en, fr, (s, p) in pairs:
        di, dj = len(french), len(english)
        sure |= {(i + di, j + dj) for i, j in s}
        possible |= {(i + di, j + dj) for i, j in p}
        english += en.split()
        french += fr.split()
    return " ".join(english), " ".join(french), (sure, possible)


def draw(pairs: list, count: int, parts: int, max_words: int,
         rng: random.Random, max_parts: int = 0) -> list:
    """`count` joined pairs of `k` distinct pairs each, `k` drawn
    uniformly from `parts..max_parts` (just `parts` if `max_parts` is
    smaller), the `k` drawn from the pairs with at most `max_words // k`
    words a side."""
    if parts < 2:
        raise ValueError(f"`parts` must be at least 2. Received: {parts}")
    sizes = range(parts, max(parts, max_parts) + 1)
    fits = {}
    for k in sizes:
        fits[k] = [p for p in pairs
                   if len(p[0].split()) <= max_words // k
                   and len(p[1].split()) <= max_words // k]
        if len(fits[k]) < k:
            raise ValueError(
                f"fewer than {k} pairs have at most {max_words // k} "
                f"words a side (max_words={max_words}, parts={k})")
    out = []
    for _ in range(count):
        k = rng.choice(sizes)
        out.append(join_pairs(
            [fits[k][i] for i in rng.sample(range(len(fits[k])), k)]))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--links", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--max-parts", type=int, default=0)
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
    pairs = []
    for number, (line, link) in enumerate(zip(data, links), start=1):
        if number <= args.skip_first:
            continue
        en, fr = line.split("\t")[:2]
        pairs.append(
            (en, fr, parse_pharaoh(link, where=f"{args.links}:{number}")))
    joined = draw(pairs, args.count, args.parts, args.max_words,
                  random.Random(args.seed), args.max_parts)
    with open(args.out_data, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in data)
        f.writelines(f"{en}\t{fr}\n" for en, fr, _ in joined)
    with open(args.out_links, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in links)
        f.writelines(format_pharaoh(*lk) + "\n" for _, _, lk in joined)


if __name__ == "__main__":
    main()
