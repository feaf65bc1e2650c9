"""Evaluation of translations: BLEU, chrF, exact match, alignment accuracy.

- BLEU and chrF: `sacrebleu.corpus_bleu` / `corpus_chrf` of the detokenized
  translations against the raw references.
- Exact match: share of sentences whose translation equals the reference
  after both go through the target pre-tokenization (so "20.Oktober" and
  "20. Oktober" count as equal, "Oktober" and "oktober" do not when the
  target keeps its case).
- Alignment accuracy (dates data): share of aligned target words whose
  highest attention weight falls on their true source word.
  Sub-words are grouped into words (a `##` piece continues the word before
  it); the attention of a target word on a source word is the mean over the
  target word's pieces of the summed weights on the source word's pieces.
  Target words with no counterpart (punctuation) are not counted.
"""

import time

import numpy as np

from examples.nmt import data as data_lib
from examples.nmt import text as text_lib

_SPECIAL = set(text_lib.RESERVED_TOKENS) | {""}


def _as_str(token):
    return token.decode("utf-8") if isinstance(token, bytes) else str(token)


def word_groups(tokens):
    """Groups sub-word tokens into words.

    Args:
        tokens: Sequence of token strings (bytes or str). Reserved tokens
            and `""` padding belong to no word.

    Returns:
        A list with, for each word, the list of its token positions.

    >>> word_groups(["[START]", "vend", "##redi", "20", "[END]", ""])
    [[1, 2], [3]]
    """
    groups = []
    for i, token in enumerate(tokens):
        token = _as_str(token)
        if token in _SPECIAL:
            continue
        if token.startswith("##") and groups and groups[-1][-1] == i - 1:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def word_attention(weights, source_tokens, target_tokens):
    """Word-level attention `(target_words, source_words)`.

    Args:
        weights: `(T, S)` attention, row `t` for target token `t`, column
            `s` for source token `s`.
        source_tokens: The `S` source token strings.
        target_tokens: The `T` target token strings.
    """
    weights = np.asarray(weights, dtype=np.float64)
    source_words = word_groups(source_tokens)
    target_words = word_groups(target_tokens)
    out = np.zeros((len(target_words), len(source_words)))
    for i, t_pieces in enumerate(target_words):
        rows = weights[t_pieces]  # (pieces, S)
        for j, s_pieces in enumerate(source_words):
            out[i, j] = rows[:, s_pieces].sum(axis=1).mean()
    return out


def alignment_accuracy(examples):
    """Share of aligned target words whose highest attention is on a true source word.

    Args:
        examples: Iterable of `(weights, source_tokens, target_tokens,
            alignment)`, with `alignment` a list with, for each target word,
            the collection of indices of its true source words (empty: the
            word is not counted). Examples whose number of target words
            differs from `len(alignment)` (a wrong translation) are skipped.

    Returns:
        `(accuracy, counted_words, used_examples)`; accuracy is `nan` when
        no word was counted.
    """
    hits = counted = used = 0
    for weights, source_tokens, target_tokens, alignment in examples:
        matrix = word_attention(weights, source_tokens, target_tokens)
        if matrix.shape[0] != len(alignment) or matrix.shape[1] == 0:
            continue
        used += 1
        for row, truth in zip(matrix, alignment):
            if not truth:
                continue
            counted += 1
            hits += int(int(np.argmax(row)) in set(truth))
    accuracy = hits / counted if counted else float("nan")
    return accuracy, counted, used


def canonical(text, lower_case=False):
    """The comparison form of a sentence for exact match."""
    return " ".join(data_lib.pretokenize(text, lower_case=lower_case))


def exact_match(hypotheses, references, lower_case=False):
    """Share of hypotheses equal to their reference (canonical forms)."""
    if not references:
        return float("nan")
    same = sum(
        canonical(h, lower_case) == canonical(r, lower_case)
        for h, r in zip(hypotheses, references)
    )
    return same / len(references)


def bleu_chrf(hypotheses, references, lowercase=False):
    """Corpus BLEU and chrF (sacrebleu, default settings).

    `lowercase=True` compares case-insensitively (for a lower-cased
    target side, whose translations have no capitals).
    """
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics import CHRF

    bleu = BLEU(lowercase=lowercase).corpus_score(hypotheses, [references])
    chrf = CHRF(lowercase=lowercase).corpus_score(hypotheses, [references])
    return bleu.score, chrf.score


def translate_all(translate_fn, sources, batch_size=256):
    """Runs a `serving_default`-like function over a list of strings.

    Returns:
        A list of dicts (one per sentence) of numpy values: `translation`
        (str), `source_tokens`, `target_tokens` (lists of str, unpadded)
        and `attention` `(T, S)`.
    """
    import tensorflow as tf

    results = []
    for i in range(0, len(sources), batch_size):
        out = translate_fn(tf.constant(sources[i : i + batch_size]))
        out = {k: v.numpy() for k, v in out.items()}
        for j in range(len(out["translation"])):
            src = [_as_str(t) for t in out["source_tokens"][j] if _as_str(t)]
            length = int(out["target_lengths"][j])
            tgt = [_as_str(t) for t in out["target_tokens"][j][:length]]
            results.append(
                {
                    "translation": _as_str(out["translation"][j]),
                    "source_tokens": src,
                    "target_tokens": tgt,
                    "attention": out["attention"][j][:length, : len(src)],
                }
            )
    return results


def evaluate(translate_fn, corpus, target_lower_case=False, batch_size=256):
    """All metrics of a corpus split.

    Returns:
        A dict with `examples`, `exact_match`, `bleu`, `chrf`,
        `decode_seconds` (wall-clock time of the translation) and, when the
        corpus has alignments, `alignment_accuracy`,
        `alignment_words`, `alignment_examples`; plus `results` (the
        per-sentence outputs of `translate_all`).
    """
    sources = [s for s, _ in corpus.pairs]
    references = [t for _, t in corpus.pairs]
    start = time.perf_counter()
    results = translate_all(translate_fn, sources, batch_size)
    decode_seconds = time.perf_counter() - start
    hypotheses = [r["translation"] for r in results]
    bleu, chrf = bleu_chrf(hypotheses, references, lowercase=target_lower_case)
    metrics = {
        "examples": len(sources),
        "exact_match": exact_match(hypotheses, references, target_lower_case),
        "bleu": bleu,
        "chrf": chrf,
        "decode_seconds": decode_seconds,
    }
    if corpus.alignments is not None:
        accuracy, words, used = alignment_accuracy(
            (r["attention"], r["source_tokens"], r["target_tokens"], a)
            for r, a in zip(results, corpus.alignments)
        )
        metrics.update(
            alignment_accuracy=accuracy,
            alignment_words=words,
            alignment_examples=used,
        )
    metrics["results"] = results
    return metrics


def strip_results(metrics):
    """`metrics` without the per-sentence `results` (at any depth), for JSON."""
    return {
        k: strip_results(v) if isinstance(v, dict) else v
        for k, v in metrics.items()
        if k != "results"
    }


def format_metrics(metrics):
    """Text table of `evaluate`'s metrics.

    When `metrics["beam"]` holds the metrics of beam search (with its
    `beam_width`), greedy and beam search are printed side by side.
    """
    if metrics.get("beam"):
        return _format_side_by_side(metrics, metrics["beam"])
    lines = [
        f"examples            {metrics['examples']}",
        f"exact match         {100 * metrics['exact_match']:.2f} %",
        f"BLEU                {metrics['bleu']:.2f}",
        f"chrF                {metrics['chrf']:.2f}",
    ]
    if "alignment_accuracy" in metrics:
        lines.append(
            f"alignment accuracy  {100 * metrics['alignment_accuracy']:.2f} % "
            f"({metrics['alignment_words']} words of "
            f"{metrics['alignment_examples']} sentences)"
        )
    return "\n".join(lines)


def _format_side_by_side(greedy, beam):
    def pct(m, key):
        return f"{100 * m[key]:.2f} %"

    rows = [
        ("", "greedy", f"beam (width {beam['beam_width']})"),
        ("examples", str(greedy["examples"]), str(beam["examples"])),
        ("exact match", pct(greedy, "exact_match"), pct(beam, "exact_match")),
        ("BLEU", f"{greedy['bleu']:.2f}", f"{beam['bleu']:.2f}"),
        ("chrF", f"{greedy['chrf']:.2f}", f"{beam['chrf']:.2f}"),
    ]
    if "alignment_accuracy" in greedy and "alignment_accuracy" in beam:
        rows.append(
            (
                "alignment accuracy",
                pct(greedy, "alignment_accuracy"),
                pct(beam, "alignment_accuracy"),
            )
        )
        rows.append(
            (
                "  (words/sentences)",
                f"{greedy['alignment_words']}/{greedy['alignment_examples']}",
                f"{beam['alignment_words']}/{beam['alignment_examples']}",
            )
        )
    if "decode_seconds" in greedy and "decode_seconds" in beam:
        rows.append(
            (
                "decoding time",
                f"{greedy['decode_seconds']:.1f} s",
                f"{beam['decode_seconds']:.1f} s",
            )
        )
    return "\n".join(f"{a:<20}{b:<14}{c}".rstrip() for a, b, c in rows)
