#!/bin/bash
# Self-training: alignment heads that learn from their own links, no
# external aligner at any step (docs/alignment_results.md, "Without an
# external aligner").
# Usage: benchmarks/alignment/run_self_training.sh [FRA_TXT] [OUT_DIR]
#   FRA_TXT: the Anki French-English file (default $FRA, else
#   ../shared/data/fra-eng/fra.txt); OUT_DIR: default runs/self.
#   N pairs (default 30,000), EPOCHS per head (default 4), ROUNDS of
#   self-training (default 1), SEED (default 0), LABELS: how each round's
#   two directions are symmetrized into the next round's targets (default
#   grow-diag-final-and), COGNATES=1: the spelling prior (`align
#   --cognates`, weight COGNATE_WEIGHT, default 0.5) in every round's
#   links; SELF_PRIOR_LABELS=1: the targets of every round (the links
#   of the rounds before the last) with the self prior and the spelling
#   prior, as in step 4;
#   PRIOR_WEIGHT of the self prior (default 0.7; PRIOR_FLOOR, default
#   0.2, with LABELS=agreement, whose prior is `--prior-mix product`);
#   DIAGONAL_TENSION: fast_align's distortion prior in step 4's two
#   readings (`align --diagonal-tension`; their files end in _diagT);
#   PY (default .venv/bin/python, niced).
# 1. the training text as run_buckets.sh writes it (both golds' pairs
#    first, then the corpus), shuffled with the golds first, cut to its
#    first N pairs: every head trains on the pairs it then aligns
#    (transductive, as an unsupervised aligner does), the golds' included;
# 2. round 0: the unsupervised lexical head (`--alignment-head lexical`),
#    French -> English and English -> French; `align` the N pairs with
#    both, symmetrized grow-diag-final-and;
# 3. round r = 1..ROUNDS: the guided head (`--alignment-head guided`) of
#    both directions trained on round r-1's links of the same pairs, then
#    `align`ed as in 2;
# 4. the last round's heads `align` the N pairs again with `--self-prior`
#    (the link rates of their own links mixed into the attention) and the
#    spelling prior (`--cognates`), symmetrized grow-diag-final-and, then
#    with `--symmetrize agreement` (the links both directions' soft
#    attention agree on, the self prior's too, the prior as a product:
#    `--prior-mix product`);
# 5. each round's links of the golds' pairs (the first lines) scored by
#    benchmarks.alignment.buckets against eflomal's (eflomal runs only to
#    be compared with: no head learns from it).
# About 12 minutes a round on 2 CPU cores at the defaults (30 minutes for
# ROUNDS=1, 45 for 2).
set -euo pipefail
FRA=${1:-${FRA:-../shared/data/fra-eng/fra.txt}}
D=${2:-runs/self}
N=${N:-30000}
EPOCHS=${EPOCHS:-4}
ROUNDS=${ROUNDS:-1}
SEED=${SEED:-0}
LABELS=${LABELS:-grow-diag-final-and}
. benchmarks/alignment/common.sh
mkdir -p "$D"

K=$(( $(wc -l < $G/fra_eng_gold/pairs.tsv) +
      $(wc -l < $G/fra_eng_rare_gold/pairs.tsv) ))
if [ ! -f "$D/train.txt" ]; then
    $PY -m benchmarks.alignment.golds_first --corpus "$FRA" \
        --gold-dir $G/fra_eng_gold --gold-dir $G/fra_eng_rare_gold \
        --out "$D/text.txt"
    $PY -m benchmarks.alignment.eflomal_recipe --data "$D/text.txt" \
        --max-pairs 10000000 --out "$D/eflomal.align"
    $PY -m benchmarks.alignment.shuffle_pairs --data "$D/text.txt" \
        --links "$D/eflomal.align" --keep-first "$K" \
        --out-data "$D/text_shuf.txt" --out-links "$D/eflomal_shuf.align"
    head -n "$N" "$D/text_shuf.txt" > "$D/train.txt"
fi
transductive="--validation-fraction 0 --test-fraction 0"
train() {  # OUT HEAD [FLAGS...]
    local out=$1 head=$2; shift 2
    [ -f "$out/history.json" ] ||
        $PY -m examples.nmt train --data "$D/train.txt" --data-format anki \
            --epochs "$EPOCHS" --verbose 2 --mixed-precision off \
            --seed "$SEED" --alignment-head "$head" $transductive \
            --out "$out" "$@"
}
align_round() {  # ROUND: both directions' links of every training pair
    local r=$1 cog=(--symmetrize "$LABELS")
    [ -z "${COGNATES:-}" ] ||
        cog+=(--cognates --prior-weight "${COGNATE_WEIGHT:-0.5}")
    [ -z "${SELF_PRIOR_LABELS:-}" ] || [ "$r" -ge "$ROUNDS" ] ||
        cog=(--self-prior --cognates $(prior_flags "$LABELS"))
    [ -f "$D/round$r.align" ] ||
        $PY -m examples.nmt align --data "$D/train.txt" --data-format anki \
            --max-tokens "$MAX_TOKENS" "${cog[@]}" \
            --run "$D/r${r}_fr_en" --reverse-run "$D/r${r}_en_fr" \
            --out "$D/round$r.align"
}

train "$D/r0_fr_en" lexical
train "$D/r0_en_fr" lexical --direction from-english
align_round 0
for r in $(seq 1 "$ROUNDS"); do
    p=$((r - 1))
    $PY -m benchmarks.alignment.transpose_links "$D/round$p.align" \
        "$D/round${p}_en_fr.align"
    train "$D/r${r}_fr_en" guided --guided-alignment "$D/round$p.align"
    train "$D/r${r}_en_fr" guided --guided-alignment \
        "$D/round${p}_en_fr.align" --direction from-english
    align_round "$r"
done
# The last round's links with the lexical prior of its own links
# (`align --self-prior`: a first pass without a prior, the link rates of
# its links, a second pass with them mixed in, and the spelling prior):
# grow-diag-final-and of each direction's links (the prior at weight
# PRIOR_WEIGHT, default 0.7), then the two directions' agreement (the
# prior as a product, floor PRIOR_FLOOR, default 0.2).
last="$D/round${ROUNDS}_self$suffix.align"
agree="$D/round${ROUNDS}_agree$suffix.align"
final() {  # OUT SYMMETRIZATION
    self_prior_align "$D/train.txt" "$D/r${ROUNDS}_fr_en" \
        "$D/r${ROUNDS}_en_fr" "$1" "$2"
}
final "$last" "${LABELS/agreement/grow-diag-final-and}"
final "$agree" agreement

for gold in $GOLDS; do
    hyps=(--hyp eflomal="$D/eflomal_shuf.align")
    for r in $(seq 0 "$ROUNDS"); do
        hyps+=(--hyp "round $r=$D/round$r.align")
    done
    hyps+=(--hyp "round $ROUNDS, self prior${suffix/_/ }=$last")
    hyps+=(--hyp "round $ROUNDS, agreement + self prior${suffix/_/ }=$agree")
    echo "== $gold"
    $PY -m benchmarks.alignment.buckets --corpus "$D/text.txt" \
        --gold-dir $G/$gold --hyp-first-line "$(first_line $gold)" \
        "${hyps[@]}" --json "$D/buckets_$gold.json"
done
