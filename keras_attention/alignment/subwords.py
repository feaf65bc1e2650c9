"""Word-level attention from sub-word attention.

Models attend over sub-word pieces; alignments (and the people who read
them) speak of words. This module groups pieces into words and moves an
attention matrix from pieces to words:

- WordPiece (BERT, tensorflow-text): a piece that starts with `##`
  continues the word of the piece just before it.
- SentencePiece: a piece that starts with `"▁"` (U+2581) starts a word;
  any other piece continues the word of the piece just before it.

Special tokens (`[START]`, `[END]`, `[PAD]`, the empty padding string) are
no word: they get no row and no column, so no link can ever point at them.
`[UNK]` is not special by default: it stands for a real word of the text
(a gold link points at it), and dropping it would shift the index of every
word after it.
"""

from typing import Iterable, Optional, Sequence, Union

import numpy as np

from keras_attention.checks import ArgumentTypeError
from keras_attention.checks import check_choice
from keras_attention.checks import check_links

from keras_attention.typing import ArrayLike

WORDPIECE = "wordpiece"
SENTENCEPIECE = "sentencepiece"
SCHEMES = (WORDPIECE, SENTENCEPIECE)
SENTENCEPIECE_SPACE = "\u2581"
DEFAULT_SPECIAL_TOKENS = ("", "[PAD]", "[START]", "[END]")


def _as_str(token: Union[str, bytes]) -> str:
    if isinstance(token, bytes):
        return token.decode("utf-8")
    return str(token)


def _check_scheme(scheme: str) -> None:
    check_choice("scheme", scheme, SCHEMES)


def _check_tokens(name: str, tokens: Sequence) -> list:
    """The token strings of a sentence: a sequence of `str` or `bytes`,
    not one string (whose characters would count as tokens)."""
    if isinstance(tokens, (str, bytes)) or tokens is None:
        raise ValueError(
            f"`{name}` must be a sequence of token strings, not one "
            f"string. Received: {name}={tokens!r:.80}"
        )
    try:
        tokens = list(tokens)
    except TypeError:
        raise ValueError(
            f"`{name}` must be a sequence of token strings. Received: "
            f"{name}={tokens!r:.80}"
        ) from None
    for token in tokens:
        if not isinstance(token, (str, bytes, np.str_, np.bytes_)):
            raise ArgumentTypeError(
                f"`{name}` must hold token strings (str or bytes). "
                f"Received: {token!r} of type {type(token).__name__} in "
                f"{name}"
            )
    return tokens


def _special(special_tokens: Optional[Iterable[str]]) -> set:
    if special_tokens is None:
        return set(DEFAULT_SPECIAL_TOKENS)
    return {
        _as_str(t) for t in _check_tokens("special_tokens", special_tokens)
    }


def word_groups(
    tokens: Sequence,
    scheme: str = WORDPIECE,
    special_tokens: Optional[Iterable[str]] = None,
) -> list:
    """Groups sub-word tokens into words.

    A continuation piece (`##x` in WordPiece, a piece without a leading
    `"▁"` in SentencePiece) joins the word of the piece right before it;
    after a special token, or at the start, it starts a new word.

    Args:
        tokens: Sequence of token strings (`str` or `bytes`).
        scheme: `"wordpiece"` or `"sentencepiece"`. Defaults to
            `"wordpiece"`.
        special_tokens: Tokens that belong to no word. Defaults to
            `DEFAULT_SPECIAL_TOKENS`: `""`, `[PAD]`, `[START]`, `[END]`.

    Returns:
        A list with, for each word, the list of its token positions.

    Example:

    >>> word_groups(["[START]", "vend", "##redi", "20", "[END]", ""])
    [[1, 2], [3]]
    >>> word_groups(["\u2581ven", "dredi", "\u2581", "20"],
    ...             scheme="sentencepiece")
    [[0, 1], [2, 3]]
    """
    _check_scheme(scheme)
    tokens = _check_tokens("tokens", tokens)
    special = _special(special_tokens)
    groups = []
    for i, token in enumerate(tokens):
        token = _as_str(token)
        if token in special:
            continue
        if scheme == WORDPIECE:
            continues = token.startswith("##")
        else:
            continues = not token.startswith(SENTENCEPIECE_SPACE)
        if continues and groups and groups[-1][-1] == i - 1:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def word_attention(
    weights: ArrayLike,
    source_tokens: Sequence,
    target_tokens: Sequence,
    scheme: str = WORDPIECE,
    special_tokens: Optional[Iterable[str]] = None,
) -> np.ndarray:
    """Word-level attention `(target_words, source_words)`.

    The attention of target word `i` on source word `j` is the mean, over
    the pieces `t` of target word `i`, of the summed weights on the pieces
    `s` of source word `j`:

    `A[i, j] = mean_{t in i} sum_{s in j} weights[t, s]`

    so a row still sums to (at most) one: summing over a source word's
    pieces keeps the mass the target piece put on that word, averaging over
    a target word's pieces keeps one distribution per target word. Mass on
    special tokens is dropped (a row then sums to less than one).

    Args:
        weights: `(T, S)` attention, row `t` for target token `t`, column
            `s` for source token `s` (extra rows or columns beyond the
            token lists, e.g. padding, are ignored).
        source_tokens: The source token strings (at most `S`).
        target_tokens: The target token strings (at most `T`).
        scheme: `"wordpiece"` or `"sentencepiece"`. Defaults to
            `"wordpiece"`.
        special_tokens: Tokens that belong to no word. Defaults to
            `DEFAULT_SPECIAL_TOKENS`.

    Returns:
        A float64 numpy array `(target_words, source_words)`.

    Raises:
        ValueError: if `weights` is not 2-D or is smaller than the token
            lists.
    """
    source_tokens = _check_tokens("source_tokens", source_tokens)
    target_tokens = _check_tokens("target_tokens", target_tokens)
    try:
        weights = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "`weights` must be a 2-D (T, S) array of numbers. Received: "
            f"weights={weights!r:.80}"
        ) from None
    if weights.ndim != 2:
        raise ValueError(
            "`weights` must be a 2-D (T, S) array. "
            f"Received: weights.shape={weights.shape}"
        )
    if (
        weights.shape[0] < len(target_tokens)
        or weights.shape[1] < len(source_tokens)
    ):
        raise ValueError(
            "`weights` must have at least one row per target token and one "
            f"column per source token. Received: weights.shape="
            f"{weights.shape}, {len(target_tokens)} target tokens and "
            f"{len(source_tokens)} source tokens"
        )
    return group_attention(
        weights,
        word_groups(source_tokens, scheme, special_tokens),
        word_groups(target_tokens, scheme, special_tokens),
    )


def group_attention(
    weights: ArrayLike, source_groups: Sequence, target_groups: Sequence
) -> np.ndarray:
    """Attention `(target_groups, source_groups)` between groups of tokens
    (words): `A[i, j] = mean_{t in target_groups[i]} sum_{s in
    source_groups[j]} weights[t, s]` (see `word_attention`).

    Args:
        weights: `(T, S)` attention over tokens.
        source_groups: For each source word, the list of its column
            indices (`word_groups`); an empty list is a word with no token
            (cut off), whose column is all zeros.
        target_groups: For each target word, the list of its row indices;
            an empty list gives a row of zeros.

    Returns:
        A float64 numpy array `(len(target_groups), len(source_groups))`.

    Raises:
        ValueError: if `weights` is not 2-D or a group names a row or
            column it does not have.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2:
        raise ValueError(
            "`weights` must be a 2-D (T, S) array. "
            f"Received: weights.shape={weights.shape}"
        )
    for name, groups, size in (
        ("source_groups", source_groups, weights.shape[1]),
        ("target_groups", target_groups, weights.shape[0]),
    ):
        for k, group in enumerate(groups):
            if any(not 0 <= int(i) < size for i in group):
                raise ValueError(
                    f"`{name}[{k}]` names a position outside the "
                    f"{size} of `weights` {weights.shape}. Received: "
                    f"{name}[{k}]={list(group)}"
                )
    out = np.zeros((len(target_groups), len(source_groups)))
    for j, s_pieces in enumerate(source_groups):
        if not len(s_pieces):
            continue
        # (T, ) summed weight of every target token on source word j.
        column = weights[:, list(s_pieces)].sum(axis=1)
        for i, t_pieces in enumerate(target_groups):
            if len(t_pieces):
                out[i, j] = column[list(t_pieces)].mean()
    return out


def word_links_to_token_links(
    links: Iterable,
    source_tokens: Sequence,
    target_tokens: Sequence,
    scheme: str = WORDPIECE,
    special_tokens: Optional[Iterable[str]] = None,
) -> set:
    """Expands word links `(source_word, target_word)` to token links.

    Every piece of the source word is linked to every piece of the target
    word, so a reference alignment over words can supervise attention over
    pieces (see `GuidedAlignmentLoss`, with `normalize=True` to share a
    target piece's mass among its source pieces).

    Args:
        links: Iterable of `(source_word, target_word)` index pairs.
        source_tokens: The source token strings.
        target_tokens: The target token strings.
        scheme: `"wordpiece"` or `"sentencepiece"`. Defaults to
            `"wordpiece"`.
        special_tokens: Tokens that belong to no word. Defaults to
            `DEFAULT_SPECIAL_TOKENS`.

    Returns:
        A set of `(source_token, target_token)` index pairs.

    Raises:
        ValueError: if a link names a word the tokens do not have.
    """
    links = check_links("links", links)
    source_words = word_groups(source_tokens, scheme, special_tokens)
    target_words = word_groups(target_tokens, scheme, special_tokens)
    out = set()
    for s, t in links:
        if not (0 <= s < len(source_words) and 0 <= t < len(target_words)):
            raise ValueError(
                f"Link {s}-{t} is out of range: the tokens have "
                f"{len(source_words)} source words and {len(target_words)} "
                f"target words. Received: links={sorted(links)}"
            )
        for s_token in source_words[s]:
            for t_token in target_words[t]:
                out.add((s_token, t_token))
    return out
