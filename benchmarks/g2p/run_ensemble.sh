#!/usr/bin/env bash
# A G2P ensemble as one command: MEMBERS runs of the pretrained recipe
# (benchmarks/g2p/run_pretrained.sh, seeds 0 .. MEMBERS-1, each packaged as
# the mean of its last AVERAGE checkpoints and scored on the dev split),
# then the members exported as one SavedModel (their probabilities averaged
# at every step) and scored; with DISTIL=1, a student of the shipped size
# trained on the members' averaged distributions (`train --teachers`),
# packaged and scored too.
#
#   benchmarks/g2p/run_ensemble.sh [PREFIX]
#
# PREFIX (default runs/g2p-ens): the members are PREFIX-seedK (the run) and
# PREFIX-seedK-avg (packaged), the ensemble PREFIX-export, the student
# PREFIX-student(-avg). Environment: MEMBERS (default 3), AVERAGE (default
# 5), DISTIL (unset: no student), STUDENT_UNITS (default 256),
# STUDENT_DROPOUT (default 0.2),
# DISTILLATION_WEIGHT (default 0.5), and those of run_pretrained.sh (EPOCHS,
# UNITS, ENCODER_LAYERS, DROPOUT, PATIENCE, LEXICON, PY) for the members.
# Each step that finished is not run again: a stopped run resumes. Scores:
# PREFIX-export.metrics.json and the members' and student's .metrics.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
PY=${PY:-.venv/bin/python}
PREFIX=${1:-runs/g2p-ens}
MEMBERS=${MEMBERS:-3}
export AVERAGE=${AVERAGE:-5} PY
if [ "$MEMBERS" -lt 2 ]; then
  echo "run_ensemble.sh: MEMBERS must be 2 or more (received $MEMBERS)" >&2
  exit 2
fi
members=()
for ((k = 0; k < MEMBERS; k++)); do
  member="$PREFIX-seed$k"
  if [ ! -f "$member-avg/model.weights.h5" ]; then
    SEED=$k RUNS=$member benchmarks/g2p/run_pretrained.sh "$member-avg"
  fi
  members+=("$member-avg")
done
if [ ! -d "$PREFIX-export" ]; then
  "$PY" -m examples.g2p export --run "${members[0]}" \
    --ensemble "${members[@]:1}" --out "$PREFIX-export"
fi
nice -n 10 "$PY" -m examples.g2p evaluate --run "${members[0]}" \
  --saved-model "$PREFIX-export" --split test --beam-width 4 \
  --json "$PREFIX-export.metrics.json" 2>&1 | tee "$PREFIX-export.eval.log"
if [ -n "${DISTIL:-}" ]; then
  UNITS=${STUDENT_UNITS:-256} ENCODER_LAYERS=1 SEED=0 \
    DROPOUT=${STUDENT_DROPOUT:-0.2} \
    TEACHERS="${members[*]}" RUNS="$PREFIX-student" \
    benchmarks/g2p/run_pretrained.sh "$PREFIX-student-avg"
fi
