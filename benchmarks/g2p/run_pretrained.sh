#!/usr/bin/env bash
# The recipe of the shipped G2P model (examples/g2p/pretrained/), as one
# command: train on the training half of the standard CMUdict split, score
# the dev split carved from it (greedy and beam 4), and package the run's
# weights (without the optimizer state), run.json and held-out splits.
#
#   benchmarks/g2p/run_pretrained.sh [OUT]
#
# Environment: LEXICON (default ../shared/data/cmudict-g2p/train.tsv,
# relative to the repository root), PY (default .venv/bin/python), RUNS
# (default runs/g2p-pretrained), EPOCHS (default 16: the learning rate's
# cosine decay is planned over them; the run keeps a checkpoint per epoch
# and resumes when started again; a run that finished is only packaged),
# CHECKPOINT (package this epoch's checkpoint, e.g. 2, instead of the final
# weights), AVERAGE (package the mean of the checkpoints of the last
# AVERAGE epochs, up to CHECKPOINT or EPOCHS), SEED (default 0: the
# weights' and the shuffling's seed; another seed trains another member
# of an ensemble), UNITS (default 256, per encoder direction),
# ENCODER_LAYERS (default 1), DROPOUT (default 0.2), PATIENCE (default 4:
# early stopping on the validation loss; the checkpoints of every epoch
# stay for AVERAGE), FLOAT16 (1: package the weights as float16), TEACHERS
# (run directories, space-separated: distil them, `train --teachers`) and
# DISTILLATION_WEIGHT (default 0.5, with TEACHERS). The dev
# scores go to
# RUNS[.epochN][.averageN].metrics.json and .eval.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
PY=${PY:-.venv/bin/python}
LEXICON=${LEXICON:-../shared/data/cmudict-g2p/train.tsv}
RUN=${RUNS:-runs/g2p-pretrained}
OUT=${1:-examples/g2p/pretrained}
EPOCHS=${EPOCHS:-16}
SEED=${SEED:-0}
UNITS=${UNITS:-256}
ENCODER_LAYERS=${ENCODER_LAYERS:-1}
DROPOUT=${DROPOUT:-0.2}
PATIENCE=${PATIENCE:-4}
distil=()
if [ -n "${TEACHERS:-}" ]; then
  # shellcheck disable=SC2206  # the run directories, split on spaces
  distil=(--teachers $TEACHERS --distillation-weight "${DISTILLATION_WEIGHT:-0.5}")
fi
mkdir -p "$(dirname "$RUN")"
if [ -f "$RUN/model.weights.h5" ]; then
  echo "$RUN has finished training (model.weights.h5): packaging it" >&2
else
  nice -n 10 "$PY" -m examples.g2p train --out "$RUN" --lexicon "$LEXICON" \
    --validation-fraction 0.02 --test-fraction 0.05 --score additive \
    --units "$UNITS" --encoder-layers "$ENCODER_LAYERS" --embedding-dim 128 \
    --dropout "$DROPOUT" --label-smoothing 0.1 --batch-size 256 \
    --learning-rate 3e-3 --epochs "$EPOCHS" --patience "$PATIENCE" \
    --seed "$SEED" --verbose 2 "${distil[@]}" 2>&1 | tee "$RUN.train.log"
fi
weights="$RUN/model.weights.h5"
if [ -n "${CHECKPOINT:-}" ]; then
  weights=$(printf "%s/checkpoints/epoch_%02d.weights.h5" "$RUN" "$CHECKPOINT")
fi
if [ -n "${AVERAGE:-}" ]; then
  last=${CHECKPOINT:-$EPOCHS}
  weights=$(for ((e = last - AVERAGE + 1; e <= last; e++)); do
    printf "%s/checkpoints/epoch_%02d.weights.h5\n" "$RUN" "$e"
  done | paste -sd, -)
fi
"$PY" benchmarks/g2p/package_run.py "$RUN" "$weights" "$OUT" \
  ${FLOAT16:+--float16}
scores="$RUN${CHECKPOINT:+.epoch$CHECKPOINT}${AVERAGE:+.average$AVERAGE}${FLOAT16:+.float16}"
nice -n 10 "$PY" -m examples.g2p evaluate --run "$OUT" --split test \
  --beam-width 4 --json "$scores.metrics.json" 2>&1 | tee "$scores.eval.log"
