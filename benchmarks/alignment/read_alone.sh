#!/bin/bash
# Guided heads read alone: no external aligner at alignment time
# (docs/alignment_results.md, "Without an external aligner", runs TA, TD
# and TE).
# Usage: benchmarks/alignment/read_alone.sh DIR
#   DIR: a run of run_buckets.sh with HEADS=1 (its text_shuf.txt,
#   eflomal_shuf.align, head_fr_en and head_en_fr).
#   N: how many pairs of the shuffled text to align (default 30,000, the
#   golds' pairs first); DIAGONAL_TENSION: fast_align's distortion prior
#   too (`align --diagonal-tension`, files ending in _diagT);
#   PRIOR_FLOOR (default 0.2); PY (default .venv/bin/python, niced).
# The first N pairs are aligned with both heads: the two directions'
# agreement (`--symmetrize agreement`), the heads' own link rates mixed in
# as a product (`--self-prior --prior-mix product`) and the spelling
# prior (`--cognates`). eflomal's links are read only to be compared
# with. Each gold's lines are scored by benchmarks.alignment.buckets.
# About 5 minutes for 30,000 pairs on 2 CPU cores.
set -euo pipefail
D=${1:?usage: read_alone.sh DIR}
N=${N:-30000}
. benchmarks/alignment/common.sh

[ -f "$D/train_$N.txt" ] || head -n "$N" "$D/text_shuf.txt" > "$D/train_$N.txt"
out="$D/alone_agree_$N$suffix.align"
self_prior_align "$D/train_$N.txt" "$D/head_fr_en" "$D/head_en_fr" "$out" \
    agreement
for gold in $GOLDS; do
    echo "== $gold"
    $PY -m benchmarks.alignment.buckets --corpus "$D/text.txt" \
        --gold-dir $G/$gold --hyp-first-line "$(first_line $gold)" \
        --hyp eflomal="$D/eflomal_shuf.align" \
        --hyp "guided heads, agreement + self prior${suffix/_/ }=$out" \
        --json "$D/alone_$N${suffix}_$gold.json"
done
