"""Reference alignments with eflomal, symmetrized by keras_attention.

The recipe of `docs/alignment.md`, `keras_attention.alignment.reference`
(tokenise each whitespace word, eflomal in both directions, token links
mapped back to the words, symmetrized), on the first pairs of an Anki
file, written as Pharaoh links (`i-j`, 0-based, source word first) over the
raw whitespace words: `OUT.fwd`, `OUT.rev` and `OUT` (symmetrized). Users
get the same links for a whole corpus from
`python -m examples.nmt reference-align`.

    python -m benchmarks.alignment.eflomal_recipe \\
        --data ../shared/data/fra-eng/fra.txt --max-pairs 2000 \\
        --out runs/fra-eng.align

The Anki file holds `English<TAB>French<TAB>attribution`; the default
direction is French -> English (`--direction to-english`), as in the
example. With `--gold GOLD` (Pharaoh over the same words, the first pairs
of the slice) it prints AER, precision and recall of the three outputs.
Time: about 10 s for 2,000 pairs on 2 CPU cores.
"""

import argparse
import time

from keras_attention import alignment as al
from keras_attention.alignment.reference import reference_links
from keras_attention.alignment.symmetrization import METHODS


def read_anki(path: str, max_pairs: int, direction: str):
    """`(source, target)` raw pairs of an Anki file."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            columns = line.rstrip("\n").split("\t")
            if len(columns) < 2 or not columns[0].strip():
                continue
            english, other = columns[0], columns[1]
            if not other.strip():
                continue
            pairs.append(
                (other, english) if direction == "to-english"
                else (english, other)
            )
            if len(pairs) >= max_pairs:
                break
    return pairs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="Anki TSV file")
    p.add_argument("--max-pairs", type=int, default=2000)
    p.add_argument("--direction", default="to-english",
                   choices=["to-english", "from-english"])
    p.add_argument("--symmetrize", default="grow-diag-final-and",
                   choices=METHODS)
    p.add_argument("--out", required=True, help="Pharaoh output file")
    p.add_argument("--gold", help="optional gold Pharaoh file to score")
    p.add_argument("--one-based", action="store_true",
                   help="the gold file counts from 1")
    args = p.parse_args(argv)

    start = time.time()
    pairs = read_anki(args.data, args.max_pairs, args.direction)
    links = reference_links(pairs, args.symmetrize)
    forward, reverse = links["forward"], links["reverse"]
    symmetric = links["symmetric"]
    al.write_pharaoh(args.out + ".fwd", forward)
    al.write_pharaoh(args.out + ".rev", reverse)
    al.write_pharaoh(args.out, symmetric)
    elapsed = time.time() - start
    links = sum(len(x) for x in symmetric)
    print(f"{len(pairs)} pairs, {links} {args.symmetrize} links "
          f"-> {args.out} (+ .fwd, .rev) in {elapsed:.1f} s")

    if args.gold:
        gold = al.read_pharaoh(args.gold, one_based=args.one_based)
        n = len(gold)
        sure = [s for s, _ in gold]
        possible = [q for _, q in gold]
        print(f"{'':<22}{'AER':>7}{'P':>7}{'R':>7}  ({n} gold pairs)")
        for name, hyp in (("eflomal forward", forward),
                          ("eflomal reverse", reverse),
                          (f"{args.symmetrize}", symmetric)):
            sc = al.alignment_scores(hyp[:n], sure, possible)
            print(f"{name:<22}{100 * sc['aer']:6.1f}%"
                  f"{100 * sc['precision']:6.1f}%{100 * sc['recall']:6.1f}%")


if __name__ == "__main__":
    main()
