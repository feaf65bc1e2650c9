"""`reference-align`: eflomal reference links for `train --guided-alignment`.

    python -m examples.nmt reference-align --data fra.txt --out fra.align
    python -m examples.nmt train --data fra.txt --guided-alignment fra.align
    python -m examples.nmt reference-align --data fra.txt \\
        --direction from-english --out eng-fra.align

The data is read as `train` reads it (`data.load_corpus`, the same
`--data`, `--data-format` and `--direction`), so the output has one line
per pair of the data, in file order, source words first: the form
`--guided-alignment` reads. eflomal aligns both directions; `OUT` holds
the symmetrized links (`--symmetrize`, default grow-diag-final-and),
`OUT.fwd` and `OUT.rev` the two directions
(`keras_attention.alignment.reference`). For an Anki file with
`--direction from-english`, the pairs are aligned as Other -> English and
the links transposed, so both directions of one corpus get the same
alignment. Needs eflomal (the `align` extra).
"""

import os

from examples.nmt import data as data_lib
from examples.nmt import readers
from keras_attention import alignment as al
from keras_attention.alignment import reference


def reference_align(
    paths, out, data_format="auto", direction="to-english",
    method="grow-diag-final-and",
):
    """Writes `out`, `out.fwd` and `out.rev`; returns the symmetrized links.

    Raises:
        ValueError: if the data holds no pair.
        ImportError: if eflomal is not installed.
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    if data_format == "auto" and len(paths) == 1 and os.path.isfile(paths[0]):
        data_format = readers.detect_format(paths[0])
    transpose = data_format == "anki" and direction == "from-english"
    corpus = data_lib.load_corpus(
        paths, data_format=data_format,
        direction="to-english" if transpose else direction,
    )
    if len(corpus) == 0:
        raise ValueError(
            f"No sentence pairs to align: {corpus.skipped} malformed lines "
            f"skipped ({dict(corpus.reasons)}). Received: paths={paths}"
        )
    links = reference.reference_links(
        corpus.pairs, method=method, transpose=transpose
    )
    al.write_pharaoh(out + ".fwd", links["forward"])
    al.write_pharaoh(out + ".rev", links["reverse"])
    al.write_pharaoh(out, links["symmetric"])
    return links["symmetric"]
