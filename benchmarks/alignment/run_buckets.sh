#!/bin/bash
# Alignment by word frequency and sentence length on both golds
# (docs/alignment_results.md, "By word frequency and sentence length").
# Usage: benchmarks/alignment/run_buckets.sh [FRA_TXT] [OUT_DIR]
#   FRA_TXT: the Anki French-English file (default $FRA, else
#   ../shared/data/fra-eng/fra.txt); OUT_DIR: default runs/rare.
#   PY: the Python to run (default .venv/bin/python, niced).
# 1. the training text: both golds' pairs first, then the corpus without
#    their copies (each pair as often as in the corpus);
# 2. eflomal (the project's recipe, grow-diag-final-and) on all of it;
# 3. each gold scored by frequency bucket and length (benchmarks.alignment.
#    buckets, counts from the training text).
# HEADS=1 adds the guided alignment head (eflomal links), both directions,
# N pairs (default 30,000) and EPOCHS (default 4) each, argmax and
# threshold 0.5 links, grow-diag-final-and. About 3 min without HEADS, 20
# to 40 min with, on 2 shared CPU cores.
# CONCAT=C appends C longer pairs to the heads' N training pairs, each two
# to four of them joined, links shifted (benchmarks.alignment.
# concat_pairs, the golds' pairs not among them; CONCAT_PARTS="2 4",
# CONCAT_MAX_WORDS=60); the heads still align the pairs as they are.
# TRAIN_FLAGS: more flags of `train` for both heads, e.g. "--validation-
# fraction 0 --test-fraction 0" (transductive: every pair trains the
# heads, the pairs they then align included, as eflomal aligns the text
# it learns from; the default keeps the golds' pairs out of training).
# With HEADS, the neural-plus-count hybrid: the heads' attention mixed with
# eflomal's link rates counted on the whole training text (`align
# --prior-links`): argmax links at each weight of PRIOR_WEIGHTS (default
# "0.7"), threshold links at each WEIGHT:THRESHOLD of PRIOR_THRESHOLDS
# (default "0.4:0.5"), and the rates alone (weight 1); both "" for none.
# Each hybrid row comes again with `--cognates` (the words' spelling
# similarity in the prior too) unless COGNATES=0.
# The defaults are the best of a grid on the 100-pair gold (weights 0.2-1,
# thresholds 0.3-0.6) with the 30,000-pair heads.
set -euo pipefail
FRA=${1:-${FRA:-../shared/data/fra-eng/fra.txt}}
D=${2:-runs/rare}
N=${N:-30000}
EPOCHS=${EPOCHS:-4}
. benchmarks/alignment/common.sh
mkdir -p "$D"

if [ -z "${SKIP_PREP:-}" ]; then
$PY -m benchmarks.alignment.golds_first --corpus "$FRA" \
    --gold-dir $G/fra_eng_gold --gold-dir $G/fra_eng_rare_gold \
    --out "$D/text.txt"
$PY -m benchmarks.alignment.eflomal_recipe --data "$D/text.txt" \
    --max-pairs 10000000 --out "$D/eflomal.align"
fi

buckets() {  # GOLD NAME=PATH... (hypotheses over the gold's pairs only)
    local gold=$1; shift
    local args=()
    for h in "$@"; do args+=(--hyp "$h"); done
    echo "== $gold"
    $PY -m benchmarks.alignment.buckets --corpus "$D/text.txt" \
        --gold-dir $G/$gold "${args[@]}" --json "$D/buckets_$gold.json"
}
if [ -z "${HEADS:-}" ]; then
    for gold in $GOLDS; do
        $PY -m benchmarks.alignment.buckets --corpus "$D/text.txt" \
            --gold-dir $G/$gold --hyp eflomal="$D/eflomal.align" \
            --hyp-first-line "$(first_line $gold)" \
            --json "$D/buckets_eflomal_$gold.json"
    done
    exit 0
fi

# The guided head: pairs and links shuffled alike (the golds stay first),
# the English -> French run on transposed links.
K=$(wc -l < $G/fra_eng_gold/pairs.tsv)
K=$((K + $(wc -l < $G/fra_eng_rare_gold/pairs.tsv)))
if [ -z "${SKIP_TRAIN:-}" ]; then
$PY -m benchmarks.alignment.shuffle_pairs --data "$D/text.txt" \
    --links "$D/eflomal.align" --keep-first "$K" \
    --out-data "$D/text_shuf.txt" --out-links "$D/eflomal_shuf.align"
train_text="$D/text_shuf.txt" train_links="$D/eflomal_shuf.align" max_n=$N
if [ -n "${CONCAT:-}" ]; then
    # Joined from the N pairs the heads train on, appended after them.
    read -r parts max_parts <<< "${CONCAT_PARTS:-2 4}"
    head -n "$N" "$D/text_shuf.txt" > "$D/text_n.txt"
    head -n "$N" "$D/eflomal_shuf.align" > "$D/eflomal_n.align"
    train_text="$D/text_cat.txt" train_links="$D/eflomal_cat.align"
    max_n=$((N + CONCAT))
    $PY -m benchmarks.alignment.concat_pairs --data "$D/text_n.txt" \
        --links "$D/eflomal_n.align" --count "$CONCAT" \
        --parts "$parts" --max-parts "${max_parts:-$parts}" \
        --max-words "${CONCAT_MAX_WORDS:-60}" --skip-first "$K" \
        --out-data "$train_text" --out-links "$train_links"
fi
$PY -m benchmarks.alignment.transpose_links "$train_links" \
    "${train_links%.align}_en_fr.align"
for dir in fr_en en_fr; do
    links="$train_links"; flags=""
    if [ $dir = en_fr ]; then
        links="${train_links%.align}_en_fr.align"; flags="--direction from-english"
    fi
    [ -f "$D/head_$dir/history.json" ] ||
        $PY -m examples.nmt train --data "$train_text" \
            --data-format anki --max-examples "$max_n" --epochs "$EPOCHS" \
            --verbose 2 --mixed-precision off $flags \
            --alignment-head guided --guided-alignment "$links" \
            ${TRAIN_FLAGS:-} --out "$D/head_$dir"
done
fi
for gold in $GOLDS; do
    # eflomal's lines of this gold, alone in a file.
    start=$(first_line $gold)
    n=$(wc -l < $G/$gold/pairs.tsv)
    sed -n "${start},$((start + n - 1))p" "$D/eflomal.align" \
        > "$D/eflomal_$gold.align"
    al() { $PY -m examples.nmt align --data $G/$gold/pairs.tsv --quiet \
        --max-tokens "$MAX_TOKENS" \
        --run "$D/head_fr_en" --reverse-run "$D/head_en_fr" "$@"; }
    al --out "$D/head_$gold.align"
    al --links threshold --threshold 0.5 --out "$D/head_t0.5_$gold.align"
    al --symmetrize intersection --out "$D/head_int_$gold.align"
    al --symmetrize agreement --out "$D/head_agree_$gold.align"
    hybrid=()
    prior=(--prior-data "$D/text.txt" --prior-data-format anki
           --prior-links "$D/eflomal.align")
    variants=("")
    [ "${COGNATES:-1}" = 0 ] || variants+=(--cognates)
    for v in "${variants[@]}"; do
        name=hybrid; [ -z "$v" ] || name="hybrid+cognates"
        for w in ${PRIOR_WEIGHTS-0.7}; do
            f="$D/head${v#--}_p${w}_$gold.align"
            al "${prior[@]}" $v --prior-weight "$w" --out "$f"
            hybrid+=("$name $w argmax=$f")
        done
        for wt in ${PRIOR_THRESHOLDS-0.4:0.5}; do
            w=${wt%:*}; t=${wt#*:}
            f="$D/head${v#--}_p${w}_t${t}_$gold.align"
            al "${prior[@]}" $v --prior-weight "$w" --links threshold \
                --threshold "$t" --out "$f"
            hybrid+=("$name $w threshold $t=$f")
        done
    done
    if [ ${#hybrid[@]} -gt 0 ]; then
        al "${prior[@]}" --prior-weight 1 --out "$D/rates_$gold.align"
        hybrid+=("link rates alone=$D/rates_$gold.align")
    fi
    buckets $gold eflomal="$D/eflomal_$gold.align" \
        "guided argmax=$D/head_$gold.align" \
        "guided threshold=$D/head_t0.5_$gold.align" \
        "guided intersection=$D/head_int_$gold.align" \
        "guided agreement=$D/head_agree_$gold.align" "${hybrid[@]}"
done
