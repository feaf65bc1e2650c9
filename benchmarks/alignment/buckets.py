"""Alignment scores by word frequency and by sentence length.

Given the training text (for the word counts), a gold standard (its pairs
and Pharaoh links) and hypothesis links over the same whitespace words:

- AER, precision and recall over all gold pairs;
- **sure-link recall by frequency bucket**: a sure link `(i, j)` falls in
  the bucket of the *lower* of the two counts `count_src(word_i)` and
  `count_tgt(word_j)`, each the number of times the word occurs on its
  side of the training text (`word_key`: lower-cased, surrounding
  punctuation stripped): `>= 100`, `5-99`, `< 5` (rare or unseen);
- **AER, precision and recall by sentence length**: the number of
  whitespace words of the source (French) sentence, `0-10`, `11-20`,
  `21-30`, `31+`.

Scores come from `keras_attention.alignment.alignment_scores` (corpus-level
sums, Och & Ney 2003).

    python -m benchmarks.alignment.buckets \\
        --corpus runs/rare/fra_golds.txt \\
        --gold-dir benchmarks/data/fra_eng_rare_gold \\
        --hyp eflomal=runs/rare/eflomal.align --hyp-first-line 101

`--corpus` is an Anki file (`English<TAB>French[<TAB>...]`, the French side
the source), the text the aligner was trained on; `--hyp NAME=PATH` may be
repeated; `--hyp-first-line N` (1-based) is where the gold's pairs start in
each hypothesis file. Prints Markdown tables; `--json PATH` writes them.
"""

import argparse
import collections
import json

from keras_attention import alignment as al
from keras_attention.alignment import word_key

FREQUENCY_BUCKETS = (">= 100", "5-99", "< 5")
LENGTH_BUCKETS = ("0-10", "11-20", "21-30", "31+")


def word_counts(sentences):
    """A `collections.Counter` of the `word_key`s of whitespace words."""
    counts = collections.Counter()
    for sentence in sentences:
        counts.update(word_key(w) for w in sentence.split())
    return counts


def frequency_bucket(count):
    """`">= 100"`, `"5-99"` or `"< 5"`."""
    if count >= 100:
        return FREQUENCY_BUCKETS[0]
    if count >= 5:
        return FREQUENCY_BUCKETS[1]
    return FREQUENCY_BUCKETS[2]


def length_bucket(length):
    """`"0-10"`, `"11-20"`, `"21-30"` or `"31+"` for a word count."""
    if length <= 10:
        return LENGTH_BUCKETS[0]
    if length <= 20:
        return LENGTH_BUCKETS[1]
    if length <= 30:
        return LENGTH_BUCKETS[2]
    return LENGTH_BUCKETS[3]


def link_bucket(link, source_words, target_words, source_counts,
                target_counts):
    """The frequency bucket of a link: the lower of its two words' counts."""
    i, j = link
    if not (0 <= i < len(source_words) and 0 <= j < len(target_words)):
        raise ValueError(
            f"link {i}-{j} is outside the pair: expected a source index "
            f"below {len(source_words)} and a target index below "
            f"{len(target_words)}. Received: {source_words!r}, "
            f"{target_words!r}"
        )
    return frequency_bucket(min(source_counts[word_key(source_words[i])],
                                target_counts[word_key(target_words[j])]))


def bucket_report(pairs, gold, hypotheses, source_counts, target_counts):
    """Scores over all pairs, by frequency bucket and by length bucket.

    Args:
        pairs: `(source, target)` raw sentences of the gold.
        gold: `(sure, possible)` link sets per pair (`read_pharaoh`).
        hypotheses: Per pair, the hypothesis `(source, target)` links.
        source_counts, target_counts: Word counts of each side of the
            training text (`word_counts`).

    Returns:
        `{"all": scores, "frequency": {bucket: {"links", "hits",
        "recall"}}, "length": {bucket: scores + "pairs"}}`, `scores` the
        dict of `alignment_scores`.

    Raises:
        ValueError: if the three inputs do not have one entry per pair, or
            a gold link is outside its pair.
    """
    pairs, gold, hypotheses = list(pairs), list(gold), list(hypotheses)
    if not len(pairs) == len(gold) == len(hypotheses):
        raise ValueError(
            "`pairs`, `gold` and `hypotheses` must have one entry per pair. "
            f"Received: {len(pairs)}, {len(gold)} and {len(hypotheses)}"
        )
    sure = [s for s, _ in gold]
    possible = [p for _, p in gold]
    report = {"all": al.alignment_scores(hypotheses, sure, possible)}

    by_frequency = {b: [set() for _ in pairs] for b in FREQUENCY_BUCKETS}
    for n, ((src, tgt), links) in enumerate(zip(pairs, sure)):
        src, tgt = src.split(), tgt.split()
        for link in links:
            bucket = link_bucket(link, src, tgt, source_counts, target_counts)
            by_frequency[bucket][n].add(link)
    report["frequency"] = {}
    for bucket, bucket_sure in by_frequency.items():
        scores = al.alignment_scores(hypotheses, bucket_sure)
        report["frequency"][bucket] = {
            "links": scores["sure"],
            "hits": scores["hits_sure"],
            "recall": scores["recall"],
        }

    report["length"] = {}
    for bucket in LENGTH_BUCKETS:
        chosen = [n for n, (src, _) in enumerate(pairs)
                  if length_bucket(len(src.split())) == bucket]
        scores = al.alignment_scores(
            [hypotheses[n] for n in chosen], [sure[n] for n in chosen],
            [possible[n] for n in chosen])
        scores["pairs"] = len(chosen)
        report["length"][bucket] = scores
    return report


def _pct(value):
    return "-" if value != value else f"{100 * value:.1f} %"


def markdown_tables(reports):
    """Three Markdown tables (overall, by frequency, by length) for
    `{name: bucket_report(...)}`."""
    names = list(reports)
    lines = ["| aligner | AER | precision | recall |", "|---|---|---|---|"]
    for name in names:
        a = reports[name]["all"]
        lines.append(f"| {name} | {_pct(a['aer'])} | "
                     f"{_pct(a['precision'])} | {_pct(a['recall'])} |")
    first = reports[names[0]]
    lines += ["", "| sure links, lower count of the two words | links | "
              + " | ".join(names) + " |",
              "|---|---|" + "---|" * len(names)]
    for bucket in FREQUENCY_BUCKETS:
        cells = [_pct(reports[n]["frequency"][bucket]["recall"])
                 for n in names]
        lines.append(f"| {bucket} | {first['frequency'][bucket]['links']} | "
                     + " | ".join(cells) + " |")
    lines += ["", "| French words | pairs | sure links | "
              + " | ".join(f"{n} AER" for n in names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    for bucket in LENGTH_BUCKETS:
        row = first["length"][bucket]
        cells = [_pct(reports[n]["length"][bucket]["aer"]) for n in names]
        lines.append(f"| {bucket} | {row['pairs']} | {row['sure']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_anki_sides(path):
    """`(french, english)` sentences of an Anki file."""
    french, english = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            columns = line.rstrip("\n").split("\t")
            if len(columns) >= 2 and columns[0].strip() and columns[1].strip():
                english.append(columns[0])
                french.append(columns[1])
    return french, english


def read_gold_pairs(path):
    with open(path, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")[:2]) for line in f
                if line.strip()]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True,
                   help="Anki file of the training text (for the counts)")
    p.add_argument("--gold-dir", required=True,
                   help="folder with pairs.tsv and gold.pharaoh")
    p.add_argument("--hyp", action="append", required=True,
                   help="NAME=PATH of Pharaoh hypothesis links (repeatable)")
    p.add_argument("--hyp-first-line", type=int, default=1,
                   help="1-based line of each --hyp where the gold starts")
    p.add_argument("--json", help="write the reports here")
    args = p.parse_args(argv)

    french, english = read_anki_sides(args.corpus)
    source_counts, target_counts = word_counts(french), word_counts(english)
    pairs = read_gold_pairs(f"{args.gold_dir}/pairs.tsv")
    gold = al.read_pharaoh(f"{args.gold_dir}/gold.pharaoh")
    start = args.hyp_first_line - 1
    reports = {}
    for item in args.hyp:
        name, sep, path = item.partition("=")
        if not sep:
            raise ValueError(f"`--hyp` must be NAME=PATH. Received: {item!r}")
        links = [s for s, _ in al.read_pharaoh(path)][start:start + len(gold)]
        reports[name] = bucket_report(pairs, gold, links, source_counts,
                                      target_counts)
    print(f"{args.gold_dir}: {len(pairs)} pairs; counts from {args.corpus} "
          f"({len(french)} pairs)\n")
    print(markdown_tables(reports))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(reports, f, indent=1)


if __name__ == "__main__":
    main()
