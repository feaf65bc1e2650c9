# Settings and helpers of the alignment benchmarks on both golds, sourced
# by run_buckets.sh, run_unsupervised_buckets.sh and run_self_training.sh
# from the repository root.
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
