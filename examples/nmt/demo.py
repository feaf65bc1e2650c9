"""The demo of the NMT example: train, export, translate, show, evaluate.

Trains an attentional encoder-decoder (Luong et al., 2015: bidirectional
LSTM encoder, LSTM decoder, "general" attention score after the decoder,
`h~ = tanh(W_c [c; h])`) with `model.fit` on a `tf.data` pipeline,
tokenizing with tensorflow-text (WordPiece learned from the training data),
exports a SavedModel that translates raw strings, loads it back, shows the
attention of a few dates and evaluates it on the held-out test dates.

The data is embedded: dates in French, German, Spanish, Italian,
Portuguese, Dutch and Turkish ("vendredi 20 octobre 1933",
"Freitag, 20. Oktober 1933", "20 Ekim 1933 Cuma") to English
("Friday, October 20, 1933"), generated from CLDR data (babel), with the
true word alignment of every pair, so the learned attention is scored.

    python -m examples.nmt demo --out runs/demo

Time: about 100 seconds of training on 2 CPU cores (2.5 minutes in all
with the data generation, the export and the evaluation); on a GPU it runs
unchanged. The settings are `config.DEMO_SETTINGS`.
"""

import time

from keras_attention.recipes import demo as demo_steps
from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from examples.nmt import evaluate as eval_lib
from keras_attention.translator import export_run
from examples.nmt import train as train_lib
from keras_attention import serving

DEMO_EXAMPLES = (
    "vendredi 20 octobre 1933",
    "Freitag, 20. Oktober 1933",
    "viernes, 20 de octubre de 1933",
    "lundi 1 janvier 2024",
    "3. März 1999",
    "domingo, 25 de diciembre de 2050",
)
# Heatmaps drawn by the demo (the first sentences of DEMO_EXAMPLES).
NUM_HEATMAPS = 3


def run_demo(out, configs, beam_width=DEFAULT_BEAM_WIDTH, log=print):
    """Runs the demo into the run directory `out`; returns its metrics.

    Args:
        out: Run directory.
        configs: `(data, text, model, train)` configs (the dates data).
        beam_width: Also translate and evaluate with beam search of this
            width; `0`: greedy only.
        log: Printing function.
    """
    start = time.time()
    log(f"== 1. train on {configs[0].num_dates} generated dates -> {out}")
    # A demo trains anew each time it runs.
    train_lib.train(out, *configs, log=log, overwrite=True)
    log("== 2. export the SavedModel")
    path = export_run(out)
    log(f"   {path}")
    log("== 3. load it back and translate (tensorflow + tensorflow_text only)")
    examples = list(DEMO_EXAMPLES)
    translate_fn = serving.load_saved_model(path)
    results = serving.translate_all(translate_fn, examples)
    for text, r in zip(examples, results):
        log(f"   {text:<36} -> {r['translation']}")
    if beam_width:
        log(f"   beam search (width {beam_width}, `beam` signature):")
        beam_fn = serving.load_saved_model(path, beam_width=beam_width)
        for text, r in zip(examples, serving.translate_all(beam_fn, examples)):
            log(f"   {text:<36} -> {r['translation']}")
    demo_steps.show_attention(
        out, list(zip(examples, results))[:NUM_HEATMAPS],
        "one row per target token, one column per source token", log,
    )
    return demo_steps.evaluate_and_save(
        out, path, eval_lib, beam_width, start, "dates", log
    )
