#!/usr/bin/env bash
# G2P benchmark on the standard CMUdict split (g014b2b training half).
#
# For each attention (additive, location, monotonic): train one model with
# a hard 15-minute budget on 2 CPU cores, then evaluate greedy and beam
# (width 4) on the dev split. The dev split is carved out of train.tsv by
# the example's word-hash split: validation 2 % (early stopping, val loss),
# "test" 5 % (our dev set: the standard test half is not provided).
#
#   benchmarks/g2p/run_standard_split.sh [ATTENTION ...]
#
# Environment: LEXICON (default ../shared/data/cmudict-g2p/train.tsv: the
# training half of the g014b2b split as WORD<TAB>PHONES lines, relative to
# the repository root), PY (default .venv/bin/python),
# RUNS (default runs/g2p-bench), EPOCHS (default 4: about 200 s an epoch
# on 2 shared cores), BUDGET (seconds of training, default 900),
# SKIP_TRAIN=1 (evaluate existing runs only).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
PY=${PY:-.venv/bin/python}
LEXICON=${LEXICON:-../shared/data/cmudict-g2p/train.tsv}
RUNS=${RUNS:-runs/g2p-bench}
EPOCHS=${EPOCHS:-4}
BUDGET=${BUDGET:-900}
mkdir -p "$RUNS"
for s in ${@:-additive location monotonic}; do
  run="$RUNS/$s"
  if [ -z "${SKIP_TRAIN:-}" ]; then
    # The hard budget (60 s more for the start-up and the data).
    set +e
    timeout $((BUDGET + 60)) nice -n 10 "$PY" -m examples.g2p train \
      --out "$run" --lexicon "$LEXICON" \
      --validation-fraction 0.02 --test-fraction 0.05 \
      --score "$s" --units 256 --embedding-dim 128 --dropout 0.1 \
      --batch-size 256 --learning-rate 3e-3 --epochs "$EPOCHS" \
      --patience 2 --verbose 2 2>&1 | tee "$run.train.log"
    set -e
  fi
  if [ ! -f "$run/model.weights.h5" ]; then
    # Killed by the budget: the last epoch that finished within it.
    last=$(ls "$run"/checkpoints/epoch_*.weights.h5 | sort | tail -1)
    echo "budget reached: evaluating $last" | tee -a "$run.train.log"
    cp "$last" "$run/model.weights.h5"
  fi
  timeout 1800 nice -n 10 "$PY" -m examples.g2p evaluate \
    --run "$run" --split test --beam-width 4 \
    --json "$run.metrics.json" 2>&1 | tee "$run.eval.log"
done
