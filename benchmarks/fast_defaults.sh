#!/bin/bash
# The example's fast training defaults (`--mixed-precision auto`,
# `--jit-compile auto`) against float32 without XLA (the defaults before),
# on the fra-eng pairs: translation quality and epoch time.
# Usage: benchmarks/fast_defaults.sh [FRA_TXT] [OUT_DIR]
#   FRA_TXT: the Anki French-English file (fra.txt of
#       https://www.manythings.org/anki/fra-eng.zip); default $FRA, else
#       ../shared/data/fra-eng/fra.txt. OUT_DIR: default runs/fast.
#   PY: the Python to run (default .venv/bin/python).
#   PHASE=quality: train both (N pairs, EPOCHS epochs, French -> English,
#       the example's default model), then BLEU/chrF/exact match of greedy
#       decoding on the test split (the first TEST pairs).
#   PHASE=timing: ROUNDS alternating runs of TIME_EPOCHS epochs (default
#       1) of each setting of TIMED (same data; `xla`: float32 with XLA on,
#       batches padded to their bucket's width, so one compilation per
#       bucket, in the first epoch); the epoch seconds of every run. Run it
#       on a quiet machine.
set -euo pipefail
FRA=${1:-${FRA:-../shared/data/fra-eng/fra.txt}}
D=${2:-runs/fast}
N=${N:-30000}
EPOCHS=${EPOCHS:-4}
TEST=${TEST:-1000}
ROUNDS=${ROUNDS:-2}
PHASE=${PHASE:-quality}
PY=${PY:-.venv/bin/python}
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$D"
# fra.txt is sorted by length: shuffle it so the first N pairs cover
# every length.
[ -f "$D/fra_shuf.txt" ] || $PY -m benchmarks.alignment.shuffle_pairs \
    --data "$FRA" --out-data "$D/fra_shuf.txt"
train() {
    $PY -m examples.nmt train --data "$D/fra_shuf.txt" --data-format anki \
        --max-examples "$N" --verbose 2 "$@"
}
declare -A SETTINGS=(
    [fp32]="--mixed-precision off --jit-compile off"
    [auto]="--mixed-precision auto --jit-compile auto"
    [xla]="--mixed-precision off --jit-compile on"
)
TIMED=${TIMED:-fp32 auto xla}
if [ "$PHASE" = quality ]; then
    for s in fp32 auto; do
        train --out "$D/$s" --epochs "$EPOCHS" ${SETTINGS[$s]}
        $PY -m examples.nmt evaluate --run "$D/$s" --beam-width 0 \
            --max-examples "$TEST" --json "$D/$s.eval.json"
    done
else
    for r in $(seq "$ROUNDS"); do
        for s in $TIMED; do
            rm -rf "$D/time_$s"
            train --out "$D/time_$s" --epochs "${TIME_EPOCHS:-1}" \
                ${SETTINGS[$s]} \
                | tee -a "$D/timing_$s.log" | grep -E "trained|epoch_seconds"
        done
    done
fi
