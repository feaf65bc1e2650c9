"""The limits and defaults of the exported translators, in one place.

The SavedModel's signatures (`TranslatorModule`), the web page and the
command line read them from here. Plain Python.
"""

# Longest translation, in target tokens (`[END]` included). Each sentence is
# also limited to `2 * source_tokens + 10` (every decoder;
# `keras_attention.seq2seq.generation.SOURCE_LENGTH_LIMIT`).
MAX_OUTPUT_TOKENS = 64
# Beam widths (and the `k` of `nbest`) are clamped to [1, MAX_BEAM_WIDTH],
# so one request cannot allocate `batch * width * vocab` scores without
# bound.
MAX_BEAM_WIDTH = 16
# The beam width of the web page, and of the recipes' `evaluate` and `demo`,
# when none is asked for.
DEFAULT_BEAM_WIDTH = 4
# GNMT length penalty alpha of beam search (`score = log P / lp(|Y|)`).
LENGTH_PENALTY = 0.6
# Tokens a `complete` translation may have after its prefix, at least.
PREFIX_ROOM = 10
