"""Settings of the NMT example: the one place their defaults are written.

Four dataclasses, one per stage, saved together in a run's `run.json`:
`DataConfig` (where the pairs come from, how they are split), `TextConfig`
(tokenization), and the library's `ModelConfig` (the network) and
`TrainConfig` (optimisation, `keras_attention.training.settings`). A field declared
with `option(...)` is also a command-line flag (`keras_attention.recipes.parser`).
The demo's settings are `DEMO_SETTINGS`, overrides of these defaults.
Plain Python: the command line parses before TensorFlow is imported.
"""

import dataclasses
from typing import Optional
from typing import Tuple

from keras_attention.training import settings as settings_lib
from keras_attention.training.settings import ModelConfig
from keras_attention.training.settings import TrainConfig
from keras_attention.training.settings import option

from examples.nmt.data import DATA_FORMATS
from examples.nmt.dates import NUM_DATES
from examples.nmt.readers import DIRECTIONS

# Default longest token sequence (sub-words, with `[START]`/`[END]`);
# `text.py` reads it from here.
MAX_TOKENS = 64
# Defaults of `align.align_run`, the `align` command's too.
ALIGN_DEFAULTS = {
    "symmetrize": "grow-diag-final-and",
    "batch_size": 256,
    "method": "argmax",
    "threshold": 0.5,
    "prior_weight": 0.5,
    "prior_mix": "linear",
    "prior_floor": 0.2,
    "agreement_threshold": 0.3,
    "diagonal_tension": None,
}


@dataclasses.dataclass
class DataConfig:
    """Where the sentence pairs come from and how they are split."""

    paths: Tuple[str, ...] = option(
        ("dates",),
        "'dates' (embedded, default), 'tfds:NAME', one file (Anki "
        "'English<TAB>Other[<TAB>attribution]' or 'source<TAB>target' TSV) "
        "or two line-aligned files SOURCE TARGET; .gz accepted",
        flag="--data", type=str, nargs="+",
    )
    data_format: str = option(
        "auto", "format of the data", choices=DATA_FORMATS
    )
    direction: str = option(
        "to-english", "direction of an Anki file", choices=DIRECTIONS
    )
    num_dates: int = option(NUM_DATES, "pairs of generated dates")
    seed: int = option(0, "seed of the generated dates", flag="--data-seed")
    max_words: int = option(40, "drop longer pairs (words)")
    max_examples: Optional[int] = option(
        None, "keep at most N pairs", type=int
    )
    validation_fraction: float = option(0.05, "share of the validation split")
    test_fraction: float = option(0.05, "share of the test split")


@dataclasses.dataclass
class TextConfig:
    """Tokenization settings of both sides."""

    source_vocab_size: int = option(8000, "source WordPiece vocabulary size")
    target_vocab_size: int = option(8000, "target WordPiece vocabulary size")
    source_lower_case: bool = True
    target_lower_case: bool = option(
        False, "lower-case the target side too (the source always is)",
        flag="--lower-case-target",
    )
    max_tokens: int = option(MAX_TOKENS, "longest token sequence")
    # `[END]` after the source: gives every source at least one token, but
    # is also a place where a forward encoder can gather the whole
    # sentence, which attention may use instead of the aligned word.
    source_end_token: bool = option(True, "append [END] to the sources")


# The sections of `run.json` and of the command line, in order.
SECTIONS = (
    ("data", DataConfig),
    ("text", TextConfig),
    ("model", ModelConfig),
    ("train", TrainConfig),
)

# The demo (dates data, 2 CPU cores, about 60-100 s of training). The
# attention averages the source embeddings, not the encoder states: a
# context then carries only the attended tokens, so the decoder must attend
# to the word it translates (with encoder states as values, the state at
# the source [END] or at the comma after a weekday also knows the month or
# the weekday: docs/alignment.md). The keys stay the encoder states (they
# know the position); [END] is not attended. The bridge is dropped for half
# of the training sentences: it is a second way to the source, which the
# decoder would otherwise read the months and the Turkish weekday (last
# word) from instead of attending to them; without any bridge the model
# does not find the Turkish weekday at all. Source punctuation is not
# attended either: a comma after a weekday would become its pointer.
# The figures are in docs/alignment_results.md.
DEMO_SETTINGS = {
    "train": {"epochs": 8, "learning_rate": 5e-3},
    "model": {
        "embedding_dim": 32, "units": 64, "bridge": True,
        "bridge_dropout": 0.5,
        "attention_values": "embedding", "attend_source_end": False,
        "attend_source_punctuation": False,
    },
}
# `demo --quick`: a smoke run of seconds, poor quality.
QUICK_DEMO_SETTINGS = {
    "data": {"num_dates": 600},
    "train": {"epochs": 1},
    "model": {"units": 16, "embedding_dim": 8},
}


def replace(configs, settings, sections=SECTIONS):
    """`configs` with `settings` applied (`settings_lib.replace`)."""
    return settings_lib.replace(configs, settings, sections)


def from_dicts(config, sections=SECTIONS):
    """The configs from the dicts of `run.json` (lists as tuples)."""
    return settings_lib.from_dicts(config, sections)


def to_dicts(configs, sections=SECTIONS):
    """The configs as the dicts of `run.json`."""
    return settings_lib.to_dicts(configs, sections)
