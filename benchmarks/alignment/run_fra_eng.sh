#!/bin/bash
# Alignment figures of docs/alignment.md on the fra-eng pairs (issue 16).
# Usage: benchmarks/alignment/run_fra_eng.sh [DATA_DIR] [OUT_DIR]
# Runs one step at a time, niced; about 35 min on 2 shared CPU cores.
set -euo pipefail
FRA=${1:-/work/shared/data/fra-eng/fra.txt}
D=${2:-runs/fra}
N=${N:-30000}          # training pairs (the first N of the shuffled file)
EPOCHS=${EPOCHS:-4}
GOLD=benchmarks/data/fra_eng_gold
PY="nice -n 10 .venv/bin/python"
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$D"

# 1. The data: the gold pairs first (as Anki lines, English<TAB>French),
#    then fra.txt; shuffled (the gold stays first) so that the first N
#    pairs cover every length (fra.txt is sorted by length).
if [ -z "${SKIP_PREP:-}" ]; then
awk -F'\t' '{print $2"\t"$1}' $GOLD/pairs.tsv > "$D/gold_anki.txt"
cat "$D/gold_anki.txt" "$FRA" > "$D/fra_gold.txt"

# 2. eflomal on every pair, both directions, grow-diag-final-and; scored
#    on the gold (the first 100 pairs).
$PY -m benchmarks.alignment.eflomal_recipe --data "$D/fra_gold.txt" \
    --max-pairs 1000000 --out "$D/eflomal.align" --gold $GOLD/gold.pharaoh
$PY -m benchmarks.alignment.shuffle_pairs --data "$D/fra_gold.txt" \
    --links "$D/eflomal.align" --keep-first 100 \
    --out-data "$D/fra_shuf.txt" --out-links "$D/eflomal_shuf.align"
fi

# 3. The example, unsupervised, each direction; then guided by eflomal's
#    grow-diag-final-and links (French -> English). The gold pairs fall in
#    the test split (README of the gold).
train() {
    timeout 900 $PY -m examples.nmt train --data "$D/fra_shuf.txt" \
        --data-format anki --max-examples $N --epochs $EPOCHS --verbose 2 "$@"
}
[ -n "${SKIP_EN_FR:-}" ] || train --out "$D/en_fr" --direction from-english
train --out "$D/fr_en"
train --out "$D/fr_en_guided" --guided-alignment "$D/eflomal_shuf.align"

# 4. Teacher-forced attention on the gold pairs -> Pharaoh -> AER.
align() { $PY -m examples.nmt align --data $GOLD/pairs.tsv --quiet "$@"; }
score() {
    echo "== $1"
    $PY -m examples.nmt score-alignment --gold $GOLD/gold.pharaoh \
        --hyp "$D/$1.align" --json "$D/$1.json"
}
align --run "$D/fr_en" --out "$D/fr_en.align"
align --reverse-run "$D/en_fr" --out "$D/en_fr.align"
align --run "$D/fr_en" --reverse-run "$D/en_fr" --out "$D/sym.align"
align --run "$D/fr_en_guided" --out "$D/guided.align"
for m in fr_en en_fr sym guided; do score $m; done

# 5. Translation quality on the test split (greedy, first 1000 pairs).
for r in fr_en fr_en_guided; do
    echo "== $r test"
    $PY -m examples.nmt evaluate --run "$D/$r" --beam-width 0 \
        --max-examples 1000
done

# 6. Unsupervised, with the dates demo's fix (embeddings as attention
#    values, [END] not attended): each direction and symmetrized.
if [ -z "${SKIP_EMB:-}" ]; then
FIX="--attention-values embedding --no-attend-source-end"
train --out "$D/fr_en_emb" $FIX
align --run "$D/fr_en_emb" --out "$D/fr_en_emb.align"
score fr_en_emb
train --out "$D/en_fr_emb" --direction from-english $FIX
align --reverse-run "$D/en_fr_emb" --out "$D/en_fr_emb.align"
align --run "$D/fr_en_emb" --reverse-run "$D/en_fr_emb" \
    --out "$D/sym_emb.align"
for m in en_fr_emb sym_emb; do score $m; done
$PY -m examples.nmt evaluate --run "$D/fr_en_emb" --beam-width 0 \
    --max-examples 1000
fi
