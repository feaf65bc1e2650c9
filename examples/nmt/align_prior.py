"""The lexical prior of the NMT example's `align` command.

- `corpus_link_rates`: the `keras_attention.alignment.LinkRates` of a
  corpus file and a Pharaoh file of its links (e.g. `reference-align`'s
  eflomal links of the whole corpus the pairs to align come from).
- `prior_matrix`: a pair's `(target_words, source_words)` prior, the link
  rates, the spelling similarity (`orthographic_similarity`) or their
  maximum, which `align.attention_word_links` mixes into the attention.
"""

import numpy as np

from keras_attention import alignment as al


def prior_matrix(prior, cognates, source, target):
    """The `(target_words, source_words)` prior of a pair: link rates,
    spelling similarity, or their maximum."""
    s_words, t_words = source.split(), target.split()
    matrix = None if prior is None else prior.matrix(s_words, t_words)
    if cognates:
        similar = al.orthographic_similarity(s_words, t_words)
        matrix = similar if matrix is None else np.maximum(matrix, similar)
    return matrix


def corpus_link_rates(
    data, links_path: str, data_format: str = "auto",
    direction: str = "to-english",
):
    """The `LinkRates` of a corpus file and a Pharaoh file of its links.

    Args:
        data: The pairs, as the `align` command's `--data` (one file or
            two line-aligned files); every line must be a pair.
        links_path: One line of links per pair (e.g. `reference-align`'s
            output), source word first; sure and possible links both
            count.
        data_format, direction: As `data.load_corpus`.

    Returns:
        A `keras_attention.alignment.LinkRates` (source -> target).
    """
    from examples.nmt import data as data_lib

    corpus = data_lib.load_corpus(
        data, data_format=data_format, direction=direction
    )
    if corpus.skipped:
        raise ValueError(
            "Every line of the prior's pairs must be a pair (its links are "
            f"one line per pair). Received: {corpus.skipped} malformed "
            f"lines ({dict(corpus.reasons)}) in {data}"
        )
    lines = al.read_pharaoh(links_path)
    if len(lines) != len(corpus.pairs):
        raise ValueError(
            "The prior's links must have one line per pair. Received: "
            f"{len(lines)} lines in {links_path}, {len(corpus.pairs)} pairs "
            f"in {data}"
        )
    return al.LinkRates.from_links(
        [s for s, _ in corpus.pairs], [t for _, t in corpus.pairs],
        [sure | possible for sure, possible in lines],
    )
