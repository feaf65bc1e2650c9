"""The deterministic train/validation/test split of a recipe's data.

A sentence (or word) falls in a split by a CRC32 hash of its text, so the
split does not depend on the order of the file, on the sample limit or on
the Python hash seed, and repeated sources always land in the same split.

Training stores the held-out splits it made in the run directory
(`save_held_out`); `load_split` reads a split back from there, and splits
the run's data again only where the run has no file for it.
"""

from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterable

import zlib

SPLIT_NAMES = ("train", "validation", "test")


def split_of(
    source: str, validation_fraction: float, test_fraction: float
) -> str:
    """The split (`"train"`, `"validation"`, `"test"`) of a source sentence.

    Decided by a CRC32 hash of the source, so it does not depend on the
    order of the file, on the sample limit or on the Python hash seed, and
    repeated sources always land in the same split.
    """
    bucket = zlib.crc32(source.encode("utf-8")) % 10000 / 10000.0
    if bucket < test_fraction:
        return "test"
    if bucket < test_fraction + validation_fraction:
        return "validation"
    return "train"


def check_split_fractions(
    validation_fraction: float, test_fraction: float
) -> None:
    """Raises `ValueError` unless both shares are in [0, 1) with a sum
    below 1."""
    for name, value in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if not 0.0 <= value < 1.0:
            raise ValueError(
                f"`{name}` must be in [0, 1). Received: {name}={value}"
            )
    if validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            "`validation_fraction + test_fraction` must be below 1. Received: "
            f"validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}"
        )


def save_held_out(
    run_dir: str, splits: Dict[str, Any], rows: Callable[[Any], Iterable]
) -> None:
    """Writes the held-out splits of `splits` (a dict from split name) into
    the run directory (`keras_attention.training.run_dir.save_split`), each
    as the rows that `rows(split)` gives, for `load_split`."""
    from keras_attention.training import run_dir as run_lib

    for name in run_lib.SPLIT_FILES:
        run_lib.save_split(run_dir, name, rows(splits[name]))


def load_split(
    run_dir: str,
    split: str,
    from_rows: Callable[[list], Any],
    regenerate: Callable[[], Dict[str, Any]],
) -> Any:
    """A split of a run: `from_rows` of the rows training stored
    (`save_held_out`), else (the training split, a run written before the
    split files) `regenerate()[split]`, the split made again from the
    run's data."""
    from keras_attention.training import run_dir as run_lib

    rows = run_lib.load_split(run_dir, split)
    if rows is None:
        return regenerate()[split]
    return from_rows(rows)
