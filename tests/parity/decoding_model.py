"""The hand-set model both the TFA reference script and the parity test
decode: fixed random tables, no training, no TFA needed.

The next-token logits of sentence `b` are `LOGITS[b, previous token, step]`
and its attention `ATTENTION[b, previous token, step]` (the last source
position is padding: its weight is exactly 0). The step saturates at
`STEPS - 1`.
"""

import numpy as np

BATCH, VOCAB, STEPS, SOURCE = 3, 7, 8, 5
START, END = 0, 1
MAX_LENGTH = STEPS

# (length_penalty_weight, coverage_penalty_weight, beam_width)
BEAM_CASES = (
    (0.0, 0.0, 3),
    (0.6, 0.0, 4),
    (0.0, 0.5, 3),
    (1.0, 0.8, 4),
    (0.6, 0.3, 2),
    (2.0, 1.5, 5),
)


def tables():
    rng = np.random.default_rng(2024)
    logits = 2.5 * rng.normal(size=(BATCH, VOCAB, STEPS, VOCAB))
    # Make the end token likely enough that beams end at various steps.
    logits[..., END] += np.linspace(-1.0, 2.5, STEPS)[None, None, :]
    scores = 2.0 * rng.normal(size=(BATCH, VOCAB, STEPS, SOURCE - 1))
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    attention = np.concatenate(
        [weights, np.zeros((BATCH, VOCAB, STEPS, 1))], axis=-1
    )
    return logits.astype("float32"), attention.astype("float32")
