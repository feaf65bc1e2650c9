#!/bin/bash
# Every row of the "By word frequency and sentence length" tables of
# docs/alignment_results.md, in order: runs R2, T, E and U.
# Usage: benchmarks/alignment/run_rare_all.sh [FRA_TXT] [OUT_DIR]
#   FRA_TXT: the Anki French-English file (default $FRA, else
#   ../shared/data/fra-eng/fra.txt); OUT_DIR: default runs/rare.
#   Needs eflomal (`make .venv/.align`, or `pip install ".[align]"`).
# R2 (OUT_DIR): eflomal on the training text, the guided heads on 30,000
#    pairs with the golds' pairs held out, the hybrids;
# T (OUT_DIR_tr): the same 30,000 pairs, all of them training pairs;
# E (OUT_DIR_all): every pair, transductive;
# U (OUT_DIR): the unsupervised lexical head, seeds 0-3.
# T and E read R2's text and eflomal links (eflomal is not seeded: one
# set of links for every run). About 2 hours on 2 CPU cores (E: 1 hour).
# A run whose heads are trained already is only scored again.
set -euo pipefail
FRA=${1:-${FRA:-../shared/data/fra-eng/fra.txt}}
D=${2:-runs/rare}
B=benchmarks/alignment
TRANSDUCTIVE="--validation-fraction 0 --test-fraction 0"

echo "== run R2: $D"
# R2's text and eflomal links are made once (run_buckets.sh skips its
# preparation when SKIP_PREP is not empty).
prep=""; [ ! -f "$D/eflomal.align" ] || prep=1
SKIP_PREP=$prep HEADS=1 $B/run_buckets.sh "$FRA" "$D"
for run in T:tr:30000 E:all:1000000; do
    IFS=: read -r name suffix n <<< "$run"
    out="${D}_$suffix"
    echo "== run $name: $out"
    mkdir -p "$out"
    cp "$D/text.txt" "$D/eflomal.align" "$out/"
    SKIP_PREP=1 HEADS=1 N=$n TRAIN_FLAGS="$TRANSDUCTIVE" \
        $B/run_buckets.sh "$FRA" "$out"
done
echo "== run U: $D"
$B/run_unsupervised_buckets.sh "$D"
