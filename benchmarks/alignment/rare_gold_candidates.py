"""Candidate pairs of the rare-word gold (`benchmarks/data/fra_eng_rare_gold`).

Deterministic: from the Anki French-English file, the pairs whose French
side falls in the NMT example's test split (`split_of(french, 0.05, 0.05)
== "test"`, so models trained with the example's defaults never see them),
first occurrence of each French sentence, not in the 100-pair gold, with
at least one word (French or English) seen at most `--max-count` times on
its side of the file (words counted by `benchmarks.alignment.buckets.
word_key`: lower-cased, surrounding punctuation stripped), sorted by the
CRC32 of `french<TAB>english`; then the first pairs of each French length
band (`--bands`, `LOW-HIGH:COUNT` in whitespace words).

    python -m benchmarks.alignment.rare_gold_candidates \\
        --data ../shared/data/fra-eng/fra.txt --out pairs.tsv

Writes `French<TAB>English` lines and prints each pair's rare words.
"""

import argparse
import collections
import zlib

from benchmarks.alignment.buckets import word_counts
from keras_attention.alignment import word_key
from examples.nmt.corpus import split_of

DEFAULT_BANDS = "4-10:62,11-20:36,21-30:8,31-99:4"


def read_pairs(path):
    """`(french, english)` pairs of an Anki file, in file order."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            columns = line.rstrip("\n").split("\t")
            if len(columns) >= 2 and columns[0].strip() and columns[1].strip():
                pairs.append((columns[1], columns[0]))
    return pairs


def parse_bands(text):
    bands = []
    for item in text.split(","):
        span, count = item.split(":")
        low, high = span.split("-")
        bands.append((int(low), int(high), int(count)))
    return bands


def rare_words(sentence, counts, max_count):
    return [w for w in sentence.split() if counts[word_key(w)] <= max_count]


def candidates(pairs, exclude, bands, max_count):
    """The chosen pairs and, for each, its French and English rare words."""
    french_counts = word_counts(f for f, _ in pairs)
    english_counts = word_counts(e for _, e in pairs)
    seen = set(exclude)
    eligible = []
    for french, english in pairs:
        if french in seen:
            continue
        seen.add(french)
        if split_of(french, 0.05, 0.05) != "test":
            continue
        rare = (rare_words(french, french_counts, max_count),
                rare_words(english, english_counts, max_count))
        if rare[0] or rare[1]:
            eligible.append((french, english, rare))
    eligible.sort(
        key=lambda x: zlib.crc32(f"{x[0]}\t{x[1]}".encode("utf-8")))
    chosen = []
    for low, high, count in bands:
        band = [x for x in eligible if low <= len(x[0].split()) <= high]
        chosen.extend(band[:count])
    return chosen


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="../shared/data/fra-eng/fra.txt")
    p.add_argument("--exclude", default="benchmarks/data/fra_eng_gold/pairs.tsv",
                   help="pairs (French<TAB>English) to leave out")
    p.add_argument("--bands", default=DEFAULT_BANDS)
    p.add_argument("--max-count", type=int, default=5)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    with open(args.exclude, encoding="utf-8") as f:
        exclude = [line.split("\t")[0] for line in f if line.strip()]
    chosen = candidates(read_pairs(args.data), exclude,
                        parse_bands(args.bands), args.max_count)
    with open(args.out, "w", encoding="utf-8") as f:
        for french, english, _ in chosen:
            f.write(f"{french}\t{english}\n")
    tally = collections.Counter()
    for french, english, (rare_fr, rare_en) in chosen:
        tally["fr"] += len(rare_fr)
        tally["en"] += len(rare_en)
        print(f"{' '.join(rare_fr)} | {' '.join(rare_en)}")
    print(f"{len(chosen)} pairs -> {args.out}; rare words: "
          f"{tally['fr']} French, {tally['en']} English")


if __name__ == "__main__":
    main()
