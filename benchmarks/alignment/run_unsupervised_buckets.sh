#!/bin/bash
# Unsupervised alignment on both golds by word frequency and length
# (docs/alignment_results.md): the lexical alignment head, trained without
# reference links, seed by seed, against eflomal on the same text.
# Usage: benchmarks/alignment/run_unsupervised_buckets.sh [OUT_DIR]
#   OUT_DIR (default runs/rare) holds run_buckets.sh's text.txt and
#   eflomal.align (run it first; HEADS is not needed).
#   SEEDS (default "0 1 2 3"), N pairs (default 30,000), EPOCHS (default
#   4), COGNATE_WEIGHT (default 0.5), PY (default .venv/bin/python).
# For each seed: the lexical head French -> English and English -> French
# (`--alignment-head lexical`, the first N pairs of the shuffled text,
# the golds' pairs kept out as test pairs), symmetrized grow-diag-final-
# and, argmax links; then the same with the spelling prior (`align
# --cognates`, no links needed). About 4 min per head on 2 CPU cores.
set -euo pipefail
D=${1:-runs/rare}
N=${N:-30000}
EPOCHS=${EPOCHS:-4}
SEEDS=${SEEDS:-0 1 2 3}
W=${COGNATE_WEIGHT:-0.5}
. benchmarks/alignment/common.sh

# The text shuffled as run_buckets.sh shuffles it (the golds first).
K=$(( $(wc -l < $G/fra_eng_gold/pairs.tsv) +
      $(wc -l < $G/fra_eng_rare_gold/pairs.tsv) ))
[ -f "$D/text_shuf.txt" ] ||
    $PY -m benchmarks.alignment.shuffle_pairs --data "$D/text.txt" \
        --keep-first "$K" --out-data "$D/text_shuf.txt"
for s in $SEEDS; do
    for dir in fr_en en_fr; do
        flags=""; [ $dir = fr_en ] || flags="--direction from-english"
        R="$D/lex_${dir}_s$s"
        [ -f "$R/history.json" ] ||
            $PY -m examples.nmt train --data "$D/text_shuf.txt" \
                --data-format anki --max-examples "$N" --epochs "$EPOCHS" \
                --verbose 2 --mixed-precision off --seed "$s" $flags \
                --alignment-head lexical --out "$R"
    done
done
for gold in $GOLDS; do
    start=$(first_line $gold)
    n=$(wc -l < $G/$gold/pairs.tsv)
    sed -n "${start},$((start + n - 1))p" "$D/eflomal.align" \
        > "$D/eflomal_$gold.align"
    hyps=()
    for s in $SEEDS; do
        al() { $PY -m examples.nmt align --data $G/$gold/pairs.tsv --quiet \
        --max-tokens "$MAX_TOKENS" \
            --run "$D/lex_fr_en_s$s" --reverse-run "$D/lex_en_fr_s$s" "$@"; }
        al --out "$D/lex_s${s}_$gold.align"
        al --cognates --prior-weight "$W" --out "$D/lexcog_s${s}_$gold.align"
        hyps+=(--hyp "unsupervised s$s=$D/lex_s${s}_$gold.align"
               --hyp "unsupervised+cognates s$s=$D/lexcog_s${s}_$gold.align")
    done
    echo "== $gold"
    $PY -m benchmarks.alignment.buckets --corpus "$D/text.txt" \
        --gold-dir $G/$gold --hyp eflomal="$D/eflomal_$gold.align" \
        "${hyps[@]}" --json "$D/buckets_unsup_$gold.json"
done
