"""Evaluation of translations: BLEU, chrF, exact match, alignment accuracy.

`evaluate_run` evaluates a run's SavedModel on one split (greedy decoding,
and beam search side by side): the split training stored in the run
directory (`load_split`); `evaluate` computes the metrics of any translate
function on a `Corpus`.

- BLEU and chrF: `sacrebleu.corpus_bleu` / `corpus_chrf` of the detokenized
  translations against the raw references.
- Exact match: share of sentences whose translation equals the reference
  after both go through the target pre-tokenization (so "20.Oktober" and
  "20. Oktober" count as equal, "Oktober" and "oktober" do not when the
  target keeps its case).
- Alignment accuracy (dates data): share of aligned target words whose
  highest attention weight falls on their true source word (`align_accuracy.py`),
  in all, per field (weekday, day, month, year) and per month.
"""

import os
import time

from keras_attention.training import splits as splits_lib
from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from examples.nmt import align_accuracy
from examples.nmt import data as data_lib
from examples.nmt import dates
from keras_attention.translator import export_run
from examples.nmt import run as run_lib
from examples.nmt.corpus import corpus_from_rows
from examples.nmt.corpus import pretokenize
from examples.nmt.corpus import take
from keras_attention import serving
from keras_attention.serving import translate_all

def canonical(text, lower_case=False):
    """The comparison form of a sentence for exact match."""
    return " ".join(pretokenize(text, lower_case=lower_case))


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


def _alignment_metrics(results, corpus):
    examples = [
        (r["attention"], r["source_tokens"], r["target_tokens"], a)
        for r, a in zip(results, corpus.alignments)
    ]
    accuracy, words, used = align_accuracy.alignment_accuracy(examples)
    metrics = {
        "alignment_accuracy": accuracy,
        "alignment_words": words,
        "alignment_examples": used,
    }
    if corpus.fields is not None:
        groups = align_accuracy.alignment_accuracy_by_group(
            example + (align_accuracy.date_groups(fields, target),)
            for example, fields, (_, target) in zip(
                examples, corpus.fields, corpus.pairs
            )
        )
        metrics["alignment_by_field"] = {
            name: groups[name] for name in dates.FIELDS if name in groups
        }
        metrics["alignment_by_month"] = {
            name: groups[f"month={name}"]
            for name in dates.MONTHS
            if f"month={name}" in groups
        }
    return metrics


def evaluate(translate_fn, corpus, target_lower_case=False, batch_size=256):
    """All metrics of a corpus split.

    Returns:
        A dict with `examples`, `exact_match`, `bleu`, `chrf`,
        `decode_seconds` (wall-clock time of the translation) and, when the
        corpus has alignments, `alignment_accuracy`, `alignment_words`,
        `alignment_examples`; for the dates data also `alignment_by_field`
        (`"weekday"`, `"day"`, `"month"`, `"year"`) and
        `alignment_by_month` (`"January"`, ...), each a dict from name to
        `{"accuracy", "words"}`; plus `results` (the per-sentence outputs
        of `translate_all`).
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
        metrics.update(_alignment_metrics(results, corpus))
    metrics["results"] = results
    return metrics


def evaluate_run(
    run_dir,
    split="test",
    saved_model=None,
    max_examples=None,
    beam_width=DEFAULT_BEAM_WIDTH,
):
    """Metrics of a run on one split (`load_split`), with its SavedModel
    (exported if missing).

    The top-level metrics are those of greedy decoding; with a positive
    `beam_width`, `metrics["beam"]` holds the same metrics for beam search
    (and `beam_width`).
    """
    data_config, text_config, _, _ = run_lib.load_run_config(run_dir)
    corpus = load_split(run_dir, split, data_config)
    if max_examples is not None:
        corpus = take(corpus, max_examples)
    return score_run(run_dir, corpus, text_config, saved_model, beam_width)


def load_split(run_dir, split, data_config=None):
    """The `Corpus` of a run's split (`"train"`, `"validation"`, `"test"`).

    The validation and test splits are read from the files training wrote
    into the run directory (`corpus.corpus_from_rows`), so the data need
    not be there any more; the training split, and every split of a run
    written before those files, is made again from the run's data
    (`data.load_splits` of its `DataConfig`, `data_config` or run.json's).
    """
    if data_config is None:
        data_config = run_lib.load_run_config(run_dir)[0]
    return splits_lib.load_split(
        run_dir, split, corpus_from_rows,
        lambda: data_lib.load_splits(data_config)[1],
    )


def score_run(run_dir, corpus, text_config, saved_model=None,
              beam_width=DEFAULT_BEAM_WIDTH):
    """Metrics of a run's SavedModel (`RUN/export`, exported if missing, or
    `saved_model`) on `corpus`: greedy at the top level and, with a positive
    `beam_width`, beam search under `"beam"`."""
    if saved_model is None:
        saved_model = run_lib.run_path(run_dir, run_lib.EXPORT)
        if not os.path.exists(os.path.join(saved_model, "saved_model.pb")):
            export_run(run_dir, saved_model)
    saved_model = serving.resolve_saved_model(saved_model)
    lower = text_config.target_lower_case
    metrics = evaluate(serving.load_saved_model(saved_model), corpus, lower)
    if beam_width:
        beam_fn = serving.load_saved_model(
            saved_model, beam_width=beam_width
        )
        metrics["beam"] = evaluate(beam_fn, corpus, lower)
        metrics["beam"]["beam_width"] = beam_width
    return metrics


def strip_results(metrics):
    """`metrics` without the per-sentence `results` (at any depth), for JSON."""
    return {
        k: strip_results(v) if isinstance(v, dict) else v
        for k, v in metrics.items()
        if k != "results"
    }


def _breakdown(metrics):
    """`(label, {"accuracy", "words"})` rows per field, then per month."""
    rows = []
    for key in ("alignment_by_field", "alignment_by_month"):
        rows.extend(
            (f"  {name}", score) for name, score in metrics.get(key, {}).items()
        )
    return rows


def format_metrics(metrics):
    """Text table of `evaluate`'s metrics.

    When `metrics["beam"]` holds the metrics of beam search (with its
    `beam_width`), greedy and beam search are printed side by side. The
    alignment accuracy per field and per month follows the aggregate.
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
        for label, score in _breakdown(metrics):
            lines.append(
                f"{label:<20}{100 * score['accuracy']:.2f} % "
                f"({score['words']} words)"
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
        beam_rows = dict(_breakdown(beam))
        for label, score in _breakdown(greedy):
            other = beam_rows.get(label)
            rows.append(
                (
                    label,
                    pct(score, "accuracy"),
                    "-" if other is None else pct(other, "accuracy"),
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
