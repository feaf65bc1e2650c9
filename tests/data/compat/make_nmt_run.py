"""Writes `tests/data/compat/nmt_run/`: a tiny NMT run directory (run.json,
vocabularies, final weights) and `expected.json`, the greedy translations
and attention of a few dates as the code of the time gave them.

`tests/test_run_dir_compat.py` loads the run with the current code and checks
that it translates the same (`outputs` follows the current API; the data
were written by the version of the commit that added them, when the
example's model was a plain class of seven `keras.Model`s). Run from the
repository root:

    python -m tests.data.compat.make_nmt_run
"""

import json
import os
import shutil

import numpy as np

from examples.nmt import config as config_lib
from examples.nmt import train as train_lib

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "nmt_run")
SOURCES = [
    "3 mars 1999",
    "lundi 4 juin 2001",
    "12 décembre 1987",
    "vendredi 21 août 2015",
]


def main():
    shutil.rmtree(RUN, ignore_errors=True)
    configs = (
        config_lib.DataConfig(
            num_dates=1500, validation_fraction=0.1, test_fraction=0.1
        ),
        config_lib.TextConfig(source_vocab_size=200, target_vocab_size=200),
        config_lib.ModelConfig(embedding_dim=16, units=16),
        config_lib.TrainConfig(epochs=10, batch_size=32, learning_rate=1e-2, verbose=0),
    )
    train_lib.train(RUN, *configs, log=lambda *_: None)
    # Only what loading needs: no checkpoints, backup, logs or history.
    for name in ("checkpoints", "backup", "logs", "history.json"):
        path = os.path.join(RUN, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    expected = {"sources": SOURCES}
    expected.update(outputs(RUN))
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


def outputs(run_dir):
    """Greedy and beam translations of `SOURCES` and the first decoder
    step's log-probabilities and attention, by the code of today."""
    import tensorflow as tf

    from examples.nmt import run as run_lib
    from keras_attention.serving import TranslatorModule

    seq2seq, source, target, _ = run_lib.load_trained(run_dir)
    module = TranslatorModule(seq2seq, source, target)
    text = tf.constant(SOURCES)
    greedy = module.translate(text)
    beam = module.translate_beam(text, tf.constant(3))
    ids = source.tokenize(text).to_tensor().numpy()
    state = seq2seq.encode(ids)
    tokens = np.full((len(SOURCES),), 2, "int32")
    log_probs, _, attention = seq2seq.step(tokens, state)
    return {
        "greedy": [t.decode() for t in greedy["translation"].numpy()],
        "beam": [t.decode() for t in beam["translation"].numpy()],
        "greedy_scores": greedy["scores"].numpy().tolist(),
        "first_step_log_probs": np.asarray(log_probs).tolist(),
        "first_step_attention": np.asarray(attention).tolist(),
    }


if __name__ == "__main__":
    main()
