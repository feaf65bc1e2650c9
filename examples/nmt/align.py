"""Attention as word alignment in the NMT example.

- `teacher_forced_attention`: the attention of a trained model fed given
  reference translations.
- Whitespace words (the words of Pharaoh files, `guided_alignment` and the
  `align` command) and the model's tokens: `whitespace.py`;
  `attention_word_matrices` gives the attention over them,
  `attention_word_links` its hard links, and `align_run` the links of one
  or two runs, symmetrized (hard links, or the two directions' soft
  agreement).
- `shift=True` ("Shift-Att", Chen et al., 2020, "Accurate Word Alignment
  Induction from Neural Machine Translation"): a target piece takes the
  attention of the decoder step that reads it (the next row), not of the
  step that predicts it.

The alignment accuracy of the dates data is `align_accuracy.py`'s.
"""

import dataclasses
from typing import Iterator
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

import keras
import numpy as np

from examples.nmt.config import ALIGN_DEFAULTS
from examples.nmt.align_prior import prior_matrix
from examples.nmt.whitespace import piece_counts
from examples.nmt.whitespace import token_links  # noqa: F401
from examples.nmt.whitespace import token_room
from examples.nmt.whitespace import whitespace_attention
from examples.nmt.whitespace import word_positions
from keras_attention import alignment as al
from keras_attention.alignment.agreement import AGREEMENT
from keras_attention.checks import check_bool
from keras_attention.checks import check_choice
from keras_attention.checks import check_positive_int

# How a prior enters the attention (`attention_word_matrices`).
PRIOR_MIXES = ("linear", "product")


def teacher_forced_attention(
    seq2seq,
    source_processor,
    target_processor,
    pairs: Sequence[Tuple[str, str]],
    batch_size: int = 256,
    output: str = "alignment",
) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Attention weights of the model fed the reference targets.

    The model reads each source and the reference target shifted right
    (`[START] y_1 ... y_n`), as in training, and returns the attention of
    every target position: the alignment the model assigns to a given
    translation (not to its own). A model with an alignment head
    (`ModelConfig.alignment_head`) returns the head's weights (its
    `"alignment"` output), not the translation attention's.

    Args:
        seq2seq: A `keras_attention.seq2seq.Seq2Seq` (e.g. from
            `run.load_trained`).
        source_processor: The run's source framed tokenizer (`run.make_processors`).
        target_processor: The run's target framed tokenizer (`run.make_processors`).
        pairs: Sequence of `(source, target)` strings.
        batch_size: Pairs per model call. Defaults to `256`.
        output: The model output read: `"alignment"` (what `align`
            reads) or `"attention"` (the translation attention). Defaults
            to `"alignment"`.

    Returns:
        A list of `(weights (T, S), source_ids, target_ids)` numpy triples,
        one per pair, unpadded: `S = len(source_ids)` (with the source
        `[END]` when configured), `T = len(target_ids) - 1`; row `t` is the
        attention used to predict `target_ids[t + 1]` (the token after
        `[START]` first) and sums to 1 over the source tokens.
    """
    import tensorflow as tf

    batch_size = check_positive_int("batch_size", batch_size)
    out = []
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        src = source_processor.tokenize([s for s, _ in chunk])
        tgt = target_processor.tokenize([t for _, t in chunk])
        src_dense = tf.cast(src.to_tensor(), tf.int32)
        tgt_dense = tf.cast(tgt.to_tensor(), tf.int32)
        weights = seq2seq(
            {"source_ids": src_dense, "target_in": tgt_dense[:, :-1]},
            training=False,
        )[output]
        weights = keras.ops.convert_to_numpy(weights)
        for j in range(len(chunk)):
            s_ids = src[j].numpy()
            t_ids = tgt[j].numpy()
            out.append(
                (weights[j, : len(t_ids) - 1, : len(s_ids)], s_ids, t_ids)
            )
    return out


def attention_word_matrices(
    seq2seq,
    source_processor,
    target_processor,
    pairs: Sequence[Tuple[str, str]],
    batch_size: int = 256,
    progress: bool = False,
    shift: bool = False,
    output: str = "alignment",
    prior=None,
    prior_weight: float = ALIGN_DEFAULTS["prior_weight"],
    cognates: bool = False,
    prior_mix: str = ALIGN_DEFAULTS["prior_mix"],
    prior_floor: float = ALIGN_DEFAULTS["prior_floor"],
    diagonal_tension: Optional[float] = ALIGN_DEFAULTS["diagonal_tension"],
) -> Iterator[Optional[np.ndarray]]:
    """Whitespace-word attention of each pair, teacher-forced.

    For each pair, `teacher_forced_attention`, then `whitespace_attention`
    over the whitespace words of the raw sentences: a
    `(target_words, source_words)` matrix, or `None` for a pair whose
    words cannot be matched (`word_positions` gives `None`). With a
    `prior` (`keras_attention.alignment.LinkRates` of this direction), the
    matrix is `mix_prior(attention, prior.matrix(...), prior_weight)`
    (`prior_mix="linear"`) or `reweight_by_prior(attention,
    prior.matrix(...), prior_floor)` (`"product"`: rows that stay
    distributions, for `agreement_links`); with `cognates`, the prior
    matrix is the `np.maximum` of that and `orthographic_similarity`
    (alone without `prior`). With a `diagonal_tension`, each matrix is
    then `favor_diagonal(matrix, diagonal_tension)` (fast_align's
    distortion prior, rows renormalized).

    Args:
        seq2seq: A `keras_attention.seq2seq.Seq2Seq`.
        source_processor: The run's source framed tokenizer (`run.make_processors`).
        target_processor: The run's target framed tokenizer (`run.make_processors`).
        pairs: Sequence of raw `(source, target)` strings.
        batch_size: Pairs per model call. Defaults to `256`.
        progress: Whether to show a `keras.utils.Progbar` on stdout.
            Defaults to `False`.
        shift: Whether target piece `p` takes the attention row `p + 1`
            (the step whose input is piece `p`, "Shift-Att") instead of
            row `p` (the step that predicts it). Defaults to `False`.
        output: The model output read (`teacher_forced_attention`).
            Defaults to `"alignment"`.
        prior: Optional `LinkRates` (source words as its source).
        prior_weight: The prior's share in `[0, 1]` with
            `prior_mix="linear"`. Defaults to `0.5`.
        cognates: Whether the prior holds the words' spelling similarity.
            Defaults to `False`.
        prior_mix: `"linear"` (`mix_prior`) or `"product"`
            (`reweight_by_prior`). Defaults to `"linear"`.
        prior_floor: The `floor` of `reweight_by_prior` with
            `prior_mix="product"`. Defaults to `0.2`.
        diagonal_tension: Optional `tension` of
            `keras_attention.alignment.favor_diagonal`, a number >= 0.
            Defaults to `None`: no distortion prior.

    Yields:
        One `(target_words, source_words)` numpy matrix (or `None`) per
        pair, in order; the model runs on 1,024 pairs at a time.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    if prior is not None and not isinstance(prior, al.LinkRates):
        raise TypeError(
            "`prior` must be a keras_attention.alignment.LinkRates or None. "
            f"Received: {type(prior).__name__}"
        )
    cognates = check_bool("cognates", cognates)
    check_choice("prior_mix", prior_mix, PRIOR_MIXES)
    if prior_mix == "linear":
        def mix(matrix, prior_matrix):
            return al.mix_prior(matrix, prior_matrix, prior_weight)
    else:
        def mix(matrix, prior_matrix):
            return al.reweight_by_prior(matrix, prior_matrix, prior_floor)
    if prior is not None or cognates:
        mix(np.zeros((1, 1)), np.zeros((1, 1)))  # checks the weight
    else:
        mix = None
    if diagonal_tension is not None:
        al.favor_diagonal(np.ones((1, 1)), diagonal_tension)  # checks it
    return _word_matrices(
        seq2seq, source_processor, target_processor, pairs, batch_size,
        progress, shift, output, prior, cognates, mix, diagonal_tension,
    )


def _word_matrices(seq2seq, source_processor, target_processor, pairs,
                   batch_size, progress, shift, output, prior, cognates,
                   mix, diagonal_tension):
    # The generator of `attention_word_matrices`, whose checks run when it
    # is called; `mix` is None when no prior is mixed in.
    bar = keras.utils.Progbar(len(pairs), unit_name="pair") if progress else None
    s_room = token_room(source_processor)
    t_room = token_room(target_processor)
    for i in range(0, len(pairs), 1024):
        chunk = list(pairs[i : i + 1024])
        attention = teacher_forced_attention(
            seq2seq, source_processor, target_processor, chunk, batch_size,
            output,
        )
        s_counts = piece_counts(source_processor, [s for s, _ in chunk])
        t_counts = piece_counts(target_processor, [t for _, t in chunk])
        for (source, target), (weights, _, _), sc, tc in zip(
            chunk, attention, s_counts, t_counts
        ):
            s_pos = word_positions(source, sc, s_room)
            t_pos = word_positions(target, tc, t_room)
            if s_pos is None or t_pos is None or not s_pos:
                yield None
                continue
            if shift:
                weights = weights[1:]
                t_pos = [[p for p in w if p < len(weights)] for w in t_pos]
            matrix = whitespace_attention(weights, s_pos, t_pos)
            if mix is not None:
                matrix = mix(
                    matrix, prior_matrix(prior, cognates, source, target)
                )
            if diagonal_tension is not None:
                matrix = al.favor_diagonal(matrix, diagonal_tension)
            yield matrix
        if bar is not None:
            bar.add(len(chunk))


def attention_word_links(
    seq2seq,
    source_processor,
    target_processor,
    pairs: Sequence[Tuple[str, str]],
    batch_size: int = 256,
    progress: bool = False,
    shift: bool = False,
    method: str = ALIGN_DEFAULTS["method"],
    threshold: float = ALIGN_DEFAULTS["threshold"],
    output: str = "alignment",
    prior=None,
    prior_weight: float = ALIGN_DEFAULTS["prior_weight"],
    cognates: bool = False,
    prior_mix: str = ALIGN_DEFAULTS["prior_mix"],
    prior_floor: float = ALIGN_DEFAULTS["prior_floor"],
    diagonal_tension: Optional[float] = ALIGN_DEFAULTS["diagonal_tension"],
) -> List[set]:
    """Hard links over whitespace words from teacher-forced attention.

    `keras_attention.alignment.hard_links` of each matrix of
    `attention_word_matrices`: one link per target word to its
    highest-weighted source word (`method="argmax"`), or every link of
    weight at least `threshold` (`"threshold"`: a target word may get
    several links or none). A pair whose words cannot be matched gets no
    links.

    Args:
        seq2seq, source_processor, target_processor, pairs, batch_size,
        progress, shift, output, prior, prior_weight, cognates, prior_mix,
        prior_floor, diagonal_tension: As `attention_word_matrices`.
        method: `"argmax"` or `"threshold"`. Defaults to `"argmax"`.
        threshold: The minimum weight of a link with
            `method="threshold"`. Defaults to `0.5`.

    Returns:
        A list of sets of `(source_word, target_word)` links.
    """
    al.hard_links(np.zeros((1, 1)), method, threshold)  # checks both
    return [
        set() if matrix is None else al.hard_links(matrix, method, threshold)
        for matrix in attention_word_matrices(
            seq2seq, source_processor, target_processor, pairs, batch_size,
            progress, shift, output, prior, prior_weight, cognates,
            prior_mix, prior_floor, diagonal_tension,
        )
    ]


def align_run(
    run_dir: str,
    pairs: Sequence[Tuple[str, str]],
    reverse_run: str = None,
    symmetrize: str = ALIGN_DEFAULTS["symmetrize"],
    batch_size: int = ALIGN_DEFAULTS["batch_size"],
    progress: bool = False,
    shift: bool = False,
    method: str = ALIGN_DEFAULTS["method"],
    threshold: float = ALIGN_DEFAULTS["threshold"],
    prior=None,
    prior_weight: float = ALIGN_DEFAULTS["prior_weight"],
    cognates: bool = False,
    max_tokens: int = None,
    prior_mix: str = ALIGN_DEFAULTS["prior_mix"],
    prior_floor: float = ALIGN_DEFAULTS["prior_floor"],
    agreement_threshold: float = ALIGN_DEFAULTS["agreement_threshold"],
    diagonal_tension: Optional[float] = ALIGN_DEFAULTS["diagonal_tension"],
) -> List[set]:
    """Links of a trained run on raw pairs, optionally symmetrized.

    Args:
        run_dir: Run directory of `train` (source -> target), or `None`
            for the links of `reverse_run` alone.
        pairs: Raw `(source, target)` pairs.
        reverse_run: Optional run trained target -> source: it reads the
            pairs swapped, its links are transposed and symmetrized with
            the forward ones (`keras_attention.alignment.symmetrize`).
        symmetrize: The symmetrization method: one of
            `keras_attention.alignment.symmetrize`'s, on each direction's
            hard links, or `"agreement"`: the links where the two
            directions' soft word attention agree
            (`keras_attention.alignment.agreement_links`, at
            `agreement_threshold`; `method` and `threshold` play no part),
            which needs both runs. Defaults to `"grow-diag-final-and"`.
        batch_size: Pairs per model call. Defaults to `256`.
        progress: Whether to show progress bars. Defaults to `False`.
        shift: "Shift-Att" for both runs (see `attention_word_links`).
            Defaults to `False`.
        method, threshold: The hard links of each direction (see
            `attention_word_links`). Default to argmax links.
        prior, prior_weight, cognates, prior_mix, prior_floor: A lexical
            prior (`LinkRates`, source -> target: the reverse run reads it
            transposed) and the spelling similarity, mixed into each
            direction's attention (see `attention_word_matrices`).
        max_tokens: The longest token sequence each run reads, `[START]`
            and `[END]` included; defaults to the run's own (its training
            cut, `TextConfig.max_tokens`). The recurrent models read any
            length: a larger value aligns the words of long sentences
            that the run's cut would leave without links.
        agreement_threshold: The threshold of `symmetrize="agreement"`,
            in `(0, 1]`. Defaults to `0.3`.
        diagonal_tension: Optional distortion prior of each direction's
            attention (see `attention_word_matrices`). Defaults to `None`.

    Returns:
        A list of sets of `(source_word, target_word)` links.
    """
    from examples.nmt import run as run_lib

    if max_tokens is not None:
        max_tokens = check_positive_int("max_tokens", max_tokens)
    if run_dir is None and reverse_run is None:
        raise ValueError("Give `run_dir`, `reverse_run` or both.")
    agree = symmetrize == AGREEMENT
    if agree:
        if run_dir is None or reverse_run is None:
            raise ValueError(
                f"`symmetrize={AGREEMENT!r}` reads the attention of both "
                "directions: give `run_dir` and `reverse_run`. Received: "
                f"run_dir={run_dir!r}, reverse_run={reverse_run!r}"
            )
        al.agreement_links(np.ones((1, 1)), np.ones((1, 1)),
                           agreement_threshold)  # checks the threshold
    elif run_dir is not None and reverse_run is not None:
        al.symmetrize(set(), set(), symmetrize)  # checks the method

    def load(path):
        seq2seq, source, target, configs = run_lib.load_trained(path)
        if max_tokens is not None:
            text_config = dataclasses.replace(
                configs[1], max_tokens=max_tokens
            )
            source, target = run_lib.make_processors(path, text_config)
        return seq2seq, source, target

    def direction(path, pairs, prior):
        options = dict(
            batch_size=batch_size, progress=progress, shift=shift,
            prior=prior, prior_weight=prior_weight, cognates=cognates,
            prior_mix=prior_mix, prior_floor=prior_floor,
            diagonal_tension=diagonal_tension,
        )
        if agree:
            return list(attention_word_matrices(*load(path), pairs, **options))
        return attention_word_links(
            *load(path), pairs, method=method, threshold=threshold, **options
        )

    links = reverse = None
    if run_dir is not None:
        links = direction(run_dir, pairs, prior)
    if reverse_run is not None:
        reverse = direction(
            reverse_run, [(t, s) for s, t in pairs],
            None if prior is None else prior.transposed(),
        )
    if agree:
        return [
            set() if f is None or r is None
            else al.agreement_links(f, r, agreement_threshold)
            for f, r in zip(links, reverse)
        ]
    if reverse is not None:
        reverse = [al.transpose_links(x) for x in reverse]
    if reverse is None:
        return links
    if links is None:
        return reverse
    return al.symmetrize_corpus(links, reverse, symmetrize)
