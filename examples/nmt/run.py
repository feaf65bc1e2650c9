"""The NMT example's run directory: `keras_attention.training.run_dir`'s
layout (run.json, the two WordPiece vocabularies, checkpoints, backup,
logs, final weights, history, export), read back into the example's
configs and tokenizers. run.json's `"tokenizers"` section names the
tokenizers, so `Translator.from_run` reloads a run by itself.
"""

from examples.nmt import config as config_lib
from keras_attention.training import run_dir
from keras_attention.training.run_dir import BACKUP  # noqa: F401
from keras_attention.training.run_dir import CHECKPOINT_PATTERN  # noqa: F401
from keras_attention.training.run_dir import CHECKPOINTS  # noqa: F401
from keras_attention.training.run_dir import EXPORT  # noqa: F401
from keras_attention.training.run_dir import HISTORY  # noqa: F401
from keras_attention.training.run_dir import LOGS  # noqa: F401
from keras_attention.training.run_dir import METRICS  # noqa: F401
from keras_attention.training.run_dir import RUN_CONFIG  # noqa: F401
from keras_attention.training.run_dir import SOURCE_VOCAB
from keras_attention.training.run_dir import TARGET_VOCAB
from keras_attention.training.run_dir import WEIGHTS  # noqa: F401
from keras_attention.training.run_dir import run_path
from keras_attention.translator import runs


def save_run_config(
    run_dir_path, *configs, sections=config_lib.SECTIONS, tokenizers=None
):
    """Writes the configs (`(data, text, model, train)`) to run.json, and
    the `"tokenizers"` section when given (`tokenizers_section`)."""
    config = config_lib.to_dicts(configs, sections)
    if tokenizers is not None:
        config[runs.TOKENIZERS] = tokenizers
    run_dir.save_run_config(run_dir_path, config)


def tokenizers_section(run_dir_path, text_config):
    """run.json's `"tokenizers"` section of a run whose vocabulary files
    are written (`keras_attention.translator.runs.tokenizers_section`)."""
    return runs.tokenizers_section(
        *make_tokenizers(run_dir_path, text_config),
        max_tokens=text_config.max_tokens,
        source_end_token=text_config.source_end_token,
    )


def load_run_config(run_dir_path, sections=config_lib.SECTIONS):
    """The configs (`(data, text, model, train)` by default) of a run.

    Raises:
        ValueError: if the directory has no run.json.
    """
    return config_lib.from_dicts(
        run_dir.load_run_config(run_dir_path), sections
    )


def make_tokenizers(run_dir_path, text_config):
    """The source and target `WordPieceTokenizer`s of a run's vocabularies."""
    from examples.nmt import text as text_lib

    return (
        text_lib.load_tokenizer(
            run_path(run_dir_path, SOURCE_VOCAB), text_config.source_lower_case
        ),
        text_lib.load_tokenizer(
            run_path(run_dir_path, TARGET_VOCAB), text_config.target_lower_case
        ),
    )


def make_processors(run_dir_path, text_config):
    """The source and target tokenizers of a run's vocabularies, framed
    (`Tokenizer.framed`) as the model reads them: sources end with `[END]`
    (with `source_end_token`), targets start with `[START]` and end with
    `[END]`, both cut to `max_tokens`.

    Raises:
        ValueError: for `max_tokens` under 3.
    """
    if text_config.max_tokens < 3:
        raise ValueError(
            "`max_tokens` must be at least 3 ([START], one token, [END]). "
            f"Received: max_tokens={text_config.max_tokens}"
        )
    source, target = make_tokenizers(run_dir_path, text_config)
    return (
        source.framed(
            False, text_config.source_end_token, text_config.max_tokens
        ),
        target.framed(True, True, text_config.max_tokens),
    )


def load_trained(run_dir_path, weights=None):
    """Rebuilds the model of a run and loads its weights
    (`keras_attention.translator.Translator.from_run`).

    Args:
        run_dir_path: The run directory.
        weights: Optional weights file (e.g. a checkpoint). Defaults to the
            final `model.weights.h5`.

    Returns:
        `(seq2seq, source_processor, target_processor, configs)`: the
        processors are the framed tokenizers, `configs` the tuple of
        `load_run_config`.
    """
    from keras_attention.translator import Translator

    configs = load_run_config(run_dir_path)
    translator = Translator.from_run(run_dir_path, weights)
    return (translator.seq2seq, *translator.framed_tokenizers, configs)
