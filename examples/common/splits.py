"""The deterministic train/validation/test split of both examples.

A sentence (or word) falls in a split by a CRC32 hash of its text, so the
split does not depend on the order of the file, on the sample limit or on
the Python hash seed, and repeated sources always land in the same split.
"""

import zlib

SPLIT_NAMES = ("train", "validation", "test")


def split_of(source, validation_fraction, test_fraction):
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


def check_split_fractions(validation_fraction, test_fraction):
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
