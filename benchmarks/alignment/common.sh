# Settings and helpers of the alignment benchmarks on both golds, sourced
# by run_buckets.sh, run_unsupervised_buckets.sh, run_self_training.sh and
# read_alone.sh from the repository root.
G=benchmarks/data
GOLDS="fra_eng_gold fra_eng_rare_gold"
PY="nice -n 10 ${PY:-.venv/bin/python}"
# The longest token sequence `align` reads (the runs train on 64): the
# words of the longest gold pairs get links too.
MAX_TOKENS=${MAX_TOKENS:-128}
export PYTHONPATH=$PWD TF_CPP_MIN_LOG_LEVEL=2
# The line where each gold's pairs start in the training text (both golds
# first, as golds_first.py writes them).
first_line() { [ "$1" = fra_eng_gold ] && echo 1 || echo 101; }
# DIAGONAL_TENSION: fast_align's distortion prior in the self-prior
# readings too (`align --diagonal-tension`; their files end in _diagT).
diag=() suffix=
if [ -n "${DIAGONAL_TENSION:-}" ]; then
    diag=(--diagonal-tension "$DIAGONAL_TENSION") suffix=_diag$DIAGONAL_TENSION
fi
prior_flags() {  # SYMMETRIZATION: how the self prior enters the attention
    if [ "$1" = agreement ]; then
        echo --symmetrize agreement --prior-mix product \
            --prior-floor "${PRIOR_FLOOR:-0.2}"
    else
        echo --symmetrize "$1" --prior-weight "${PRIOR_WEIGHT:-0.7}"
    fi
}
# DATA FR_EN EN_FR OUT SYMMETRIZATION: the two heads' links of the pairs
# of DATA with the link rates of their own links mixed in (`align
# --self-prior`: a first pass without a prior, a second with it) and the
# spelling prior (`--cognates`), unless OUT exists.
self_prior_align() {
    [ -f "$4" ] ||
        $PY -m examples.nmt align --data "$1" --data-format anki \
            --max-tokens "$MAX_TOKENS" --self-prior --cognates \
            $(prior_flags "$5") "${diag[@]}" --quiet \
            --run "$2" --reverse-run "$3" --out "$4"
}
