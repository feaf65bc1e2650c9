"""The training text of the alignment benchmark: the gold pairs first.

Writes one Anki file (`English<TAB>French`): the pairs of each gold folder
(`pairs.tsv`, `French<TAB>English`), in order, then the corpus without one
copy of each gold pair it holds. Every pair of the corpus is there exactly
as often as in the corpus (a gold pair that is not in the corpus is added
once), so the word counts of the text are the corpus's, and the gold
pairs are lines 1 to N of the aligner's output.

    python -m benchmarks.alignment.golds_first \\
        --corpus ../shared/data/fra-eng/fra.txt \\
        --gold-dir benchmarks/data/fra_eng_gold \\
        --gold-dir benchmarks/data/fra_eng_rare_gold --out runs/rare/text.txt
"""

import argparse
import collections


def golds_first(corpus_lines, gold_pairs):
    """Anki lines (no newline): the gold pairs, then the rest.

    Args:
        corpus_lines: Anki lines, `English<TAB>French[<TAB>...]`.
        gold_pairs: `(french, english)` pairs.

    Returns:
        `(lines, removed)`: the lines, and how many gold pairs were taken
        out of the corpus.
    """
    wanted = collections.Counter((e, f) for f, e in gold_pairs)
    head = [f"{e}\t{f}" for f, e in gold_pairs]
    rest, removed = [], 0
    for line in corpus_lines:
        columns = line.split("\t")
        key = tuple(columns[:2])
        if len(columns) >= 2 and wanted[key] > 0:
            wanted[key] -= 1
            removed += 1
            continue
        rest.append(line)
    return head + rest, removed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="../shared/data/fra-eng/fra.txt")
    p.add_argument("--gold-dir", action="append", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    gold_pairs = []
    for folder in args.gold_dir:
        with open(f"{folder}/pairs.tsv", encoding="utf-8") as f:
            gold_pairs += [tuple(line.rstrip("\n").split("\t")[:2])
                           for line in f if line.strip()]
    with open(args.corpus, encoding="utf-8") as f:
        corpus = f.read().splitlines()
    lines, removed = golds_first(corpus, gold_pairs)
    with open(args.out, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    print(f"{len(gold_pairs)} gold pairs first ({removed} taken from the "
          f"corpus), {len(lines)} pairs -> {args.out}")


if __name__ == "__main__":
    main()
