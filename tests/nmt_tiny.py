"""The tiny NMT run that the example's smoke tests train once per module."""

from examples.nmt import config as config_lib
from examples.nmt import train as train_lib


def train_tiny(run_dir):
    """Trains the example on 300 dates, 8 units, one epoch (seconds).

    Returns what `examples.nmt.train.train` returns: `(seq2seq, history)`.
    """
    configs = (
        config_lib.DataConfig(
            num_dates=300, validation_fraction=0.1, test_fraction=0.1
        ),
        config_lib.TextConfig(source_vocab_size=300, target_vocab_size=300),
        config_lib.ModelConfig(embedding_dim=8, units=8),
        config_lib.TrainConfig(epochs=1, batch_size=32, verbose=0),
    )
    return train_lib.train(run_dir, *configs, log=lambda *_: None)
