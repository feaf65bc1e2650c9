"""The data of the NMT example, as the command line names it.

`load_corpus` reads `"dates"` (the embedded dates, `dates.py`, with the
true word alignment of every pair), `"tfds:NAME"`, one file (Anki or TSV)
or two line-aligned files (`readers.py`); `load_splits` gives the filtered
train/validation/test split of a `config.DataConfig`, optionally with the
reference links of a Pharaoh file attached to their pairs
(`attach_links`) before filtering.
"""

import dataclasses
import os

from examples.nmt import dates
from examples.nmt import readers
from examples.nmt.corpus import filter_corpus
from examples.nmt.corpus import split_pairs


DATA_FORMATS = ("auto", "anki", "tsv", "parallel")

def load_corpus(
    paths,
    data_format="auto",
    direction="to-english",
    num_dates=None,
    seed=0,
):
    """Loads a corpus given on the command line.

    Args:
        paths: `["dates"]` for the embedded data, `["tfds:NAME"]`, one file
            (Anki or TSV) or two line-aligned files `[source, target]`.
        data_format: `"auto"`, `"anki"`, `"tsv"` or `"parallel"`.
        direction: For Anki files, `"to-english"` or `"from-english"`.
        num_dates: Number of generated pairs for `"dates"`. Defaults to
            `dates.NUM_DATES`.
        seed: Seed of the dates generator.

    Returns:
        A `Corpus`.
    """
    if isinstance(paths, str):
        paths = [paths]
    paths = list(paths)
    if paths == ["dates"]:
        return dates.generate_dates(
            dates.NUM_DATES if num_dates is None else num_dates, seed=seed
        )
    if len(paths) == 1 and paths[0].startswith("tfds:"):
        return readers.read_tfds(paths[0][len("tfds:") :])
    if len(paths) == 2 or data_format == "parallel":
        if len(paths) != 2:
            raise ValueError(
                "The parallel format needs two files, source and target. "
                f"Received: paths={paths}"
            )
        return readers.read_parallel(*paths)
    if len(paths) != 1:
        raise ValueError(
            "Expected 'dates', 'tfds:NAME', one file or two line-aligned "
            f"files. Received: paths={paths}"
        )
    (path,) = paths
    if not os.path.exists(path):
        raise ValueError(f"No such data file. Received: path={path!r}")
    if data_format == "auto":
        data_format = readers.detect_format(path)
    if data_format == "anki":
        return readers.read_anki(path, direction)
    if data_format == "tsv":
        return readers.read_tsv(path)
    raise ValueError(
        "`data_format` must be 'auto', 'anki', 'tsv' or 'parallel'. "
        f"Received: data_format={data_format!r}"
    )


def attach_links(corpus, path):
    """`corpus` with the links of the Pharaoh file `path` attached.

    The file has one line per pair of the data as read (before filtering;
    sure and possible links both count). Each pair gets
    `(line_number, {(source_word, target_word)})` in `Corpus.links`,
    which filtering and splitting carry with it.

    Raises:
        ValueError: if the file has another number of lines than the data
            has pairs.
    """
    from keras_attention import alignment as al

    lines = al.read_pharaoh(path)
    if len(lines) != len(corpus):
        raise ValueError(
            f"The guided alignment file must have one line per pair of "
            f"the data: {len(corpus)} pairs read ({corpus.skipped} malformed "
            f"lines skipped). Received: {len(lines)} lines in {path!r}"
        )
    links = [
        (number + 1, set(sure) | set(possible))
        for number, (sure, possible) in enumerate(lines)
    ]
    return dataclasses.replace(corpus, links=links)


def load_splits(data_config, links_path=None):
    """The deterministic train/validation/test split of a `DataConfig`.

    Args:
        data_config: A `DataConfig`.
        links_path: Optional Pharaoh file of reference links, one line per
            pair of the data (`attach_links`): each split then holds its
            pairs' links in `Corpus.links`.

    Returns:
        `(corpus, splits)`: the filtered corpus and the dict of
        `split_pairs`.
    """
    corpus = load_corpus(
        list(data_config.paths),
        data_format=data_config.data_format,
        direction=data_config.direction,
        num_dates=data_config.num_dates,
        seed=data_config.seed,
    )
    if links_path:
        corpus = attach_links(corpus, links_path)
    corpus = filter_corpus(
        corpus,
        max_words=data_config.max_words,
        max_examples=data_config.max_examples,
    )
    return corpus, split_pairs(
        corpus, data_config.validation_fraction, data_config.test_fraction
    )
