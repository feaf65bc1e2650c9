"""The training data of the NMT example, from the data files to tokens.

`prepare` loads and splits the configured data, learns the WordPiece
vocabularies of a run from its training split (written to the run
directory, where the tokenizers' SavedModel assets live) and returns what
it built: the splits, the tokenizers, the vocabularies and, with guided
alignment, the reference links of the pairs of each split (read with the
data and carried with their pairs through filtering and splitting,
`data.attach_links`). `guided_token_links` turns word links into the token
links `keras_attention.training.dataset.make_dataset(links=...)` reads.
"""

import dataclasses
import os

from examples.nmt import whitespace
from examples.nmt import data as data_lib
from examples.nmt import run as run_lib
from examples.nmt import text as text_lib


@dataclasses.dataclass
class Prepared:
    """What `prepare` built.

    Attributes:
        splits: Dict from split name to `Corpus`.
        source: The source framed tokenizer (`run.make_processors`).
        target: The target framed tokenizer (`run.make_processors`).
        source_vocab: The source vocabulary (list of tokens).
        target_vocab: The target vocabulary.
        links: With a links file, a dict from split name to the list of
            `(line_number, word links)` of its pairs; else `None`.
    """

    splits: dict
    source: object
    target: object
    source_vocab: list
    target_vocab: list
    links: dict = None


def prepare(run_dir, data_config, text_config, links_path=None, log=print):
    """Loads and splits the data, learns the vocabularies (once per run).

    A vocabulary file already in the run directory (a resumed run) is kept.

    Args:
        run_dir: The run directory.
        data_config: A `DataConfig`.
        text_config: A `TextConfig`.
        links_path: Optional Pharaoh file of reference links, one line per
            pair of the data (`data.attach_links`).
        log: Printing function.

    Returns:
        A `Prepared`.

    Raises:
        ValueError: if there are no usable pairs or no training pairs.
    """
    corpus, splits = data_lib.load_splits(data_config, links_path)
    log(
        f"data: {len(corpus)} pairs ({corpus.skipped} malformed lines skipped"
        + (f": {dict(corpus.reasons)}" if corpus.skipped else "")
        + "); split "
        + ", ".join(f"{n} {len(s)}" for n, s in splits.items())
    )
    if len(corpus) == 0:
        raise ValueError(
            f"No usable sentence pairs in {list(data_config.paths)}: "
            f"{corpus.skipped} lines skipped"
            + (f" ({dict(corpus.reasons)})" if corpus.skipped else "")
        )
    if len(splits["train"]) == 0:
        raise ValueError(
            "The training split is empty. "
            f"Received: paths={data_config.paths}"
        )
    sides = (
        ("source", text_config.source_vocab_size,
         text_config.source_lower_case, 0, run_lib.SOURCE_VOCAB),
        ("target", text_config.target_vocab_size,
         text_config.target_lower_case, 1, run_lib.TARGET_VOCAB),
    )
    vocabs = []
    for side, size, lower, index, name in sides:
        path = run_lib.run_path(run_dir, name)
        if os.path.exists(path):
            vocab = text_lib.load_vocabulary(path)
        else:
            vocab = text_lib.learn_vocabulary(
                [pair[index] for pair in splits["train"].pairs], size, lower
            )
            text_lib.save_vocabulary(vocab, path)
            log(f"{side} vocabulary: {len(vocab)} tokens -> {path}")
        vocabs.append(vocab)
    source, target = run_lib.make_processors(run_dir, text_config)
    links = None
    if links_path:
        links = {name: split.links for name, split in splits.items()}
    return Prepared(splits, source, target, vocabs[0], vocabs[1], links)


def guided_token_links(corpus, links, source_processor, target_processor):
    """Token links `(source column, target row)` of each pair.

    Args:
        corpus: A `Corpus` split.
        links: Its list of `(line_number, word links)` (`Corpus.links`).
        source_processor: The run's source framed tokenizer (`run.make_processors`).
        target_processor: The run's target framed tokenizer (`run.make_processors`).

    Returns:
        A list of sets (see `align.token_links`); a pair whose words
        cannot be matched (`align.word_positions` gives `None`) gets no
        links.

    Raises:
        ValueError: for a link out of range, naming the line.
    """
    sources = [s for s, _ in corpus.pairs]
    targets = [t for _, t in corpus.pairs]
    s_counts = whitespace.piece_counts(source_processor, sources)
    t_counts = whitespace.piece_counts(target_processor, targets)
    s_room = whitespace.token_room(source_processor)
    t_room = whitespace.token_room(target_processor)
    out = []
    for i, (number, word_links) in enumerate(links):
        s_pos = whitespace.word_positions(sources[i], s_counts[i], s_room)
        t_pos = whitespace.word_positions(targets[i], t_counts[i], t_room)
        if s_pos is None or t_pos is None:
            out.append(set())
            continue
        try:
            out.append(whitespace.token_links(word_links, s_pos, t_pos))
        except ValueError as e:
            raise ValueError(f"{e} (guided alignment line {number})") from e
    return out
