#!/bin/bash
# One training setting of the example over several seeds: the
# unsupervised attention either learns the alignment or collapses, and the
# seed decides more than any single flag (docs/alignment_results.md), so a setting
# is judged by its spread over seeds, not by one run.
#
# Usage: benchmarks/alignment/seeds.sh NAME [TRAIN FLAGS...]
#   SEEDS="0 1 2 3" (default), D=runs/fra (the data of run_fra_eng.sh:
#   fra_shuf.txt, the gold pairs first), N=30000 pairs, EPOCHS=4.
# For each seed: train -> align the 100 gold pairs (argmax, this run's
# direction; an English -> French run is transposed by --reverse-run) ->
# score-alignment -> evaluate greedy on 1,000 test pairs; then one table
# row (median, min, max of AER and BLEU) by benchmarks.alignment.seed_table.
# About 3 to 4 min per seed on 2 CPU cores.
set -euo pipefail
NAME=$1; shift
D=${D:-runs/fra}
N=${N:-30000}
EPOCHS=${EPOCHS:-4}
SEEDS=${SEEDS:-0 1 2 3}
GOLD=benchmarks/data/fra_eng_gold
PY="nice -n ${NICE:-10} ${PY:-.venv/bin/python}"
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
reverse=""
for a in "$@"; do [ "$a" = from-english ] && reverse=1; done
for s in $SEEDS; do
    R="$D/seeds/${NAME}_s$s"
    if [ ! -f "$R/history.json" ]; then
        echo "== train $NAME seed $s"
        timeout 1800 $PY -m examples.nmt train --data "$D/fra_shuf.txt" \
            --data-format anki --max-examples "$N" --epochs "$EPOCHS" \
            --verbose 2 --mixed-precision off --seed "$s" --out "$R" "$@"
    fi
    if [ -n "$reverse" ]; then
        $PY -m examples.nmt align --data $GOLD/pairs.tsv --quiet \
            --reverse-run "$R" --out "$R/gold.align"
    else
        $PY -m examples.nmt align --data $GOLD/pairs.tsv --quiet \
            --run "$R" --out "$R/gold.align"
    fi
    $PY -m examples.nmt score-alignment --gold $GOLD/gold.pharaoh \
        --hyp "$R/gold.align" --json "$R/aer.json"
    $PY -m examples.nmt evaluate --run "$R" --beam-width 0 \
        --max-examples 1000 --json "$R/test.json" > "$R/test.log"
done
$PY -m benchmarks.alignment.seed_table --name "$NAME" \
    $(for s in $SEEDS; do echo "$D/seeds/${NAME}_s$s"; done)
