"""A `Translator` from a run directory, with nothing but the directory.

A run directory (`keras_attention.training.run_dir`) holds `run.json`, whose
`"model"` section has `Seq2Seq`'s arguments and whose `"tokenizers"`
section (`tokenizers_section`) the two tokenizers with their
vocabularies and framing, and the weights `model.weights.h5`. Runs written
before the `"tokenizers"` section are read through their `"text"` section
and WordPiece vocabulary files (`source_vocab.txt`, `target_vocab.txt`).
"""

from typing import Any
from typing import Optional

import inspect
import os

import keras

from keras_attention.training import run_dir as run_dir_lib
from keras_attention.training.settings import LEGACY_MODEL_VALUES
from keras_attention.seq2seq.seq2seq import Seq2Seq
from keras_attention.tokenizers import WordPieceTokenizer

TOKENIZERS = "tokenizers"


def tokenizers_section(
    source_tokenizer: Any,
    target_tokenizer: Any,
    max_tokens: int,
    source_end_token: bool = True,
) -> dict:
    """The `"tokenizers"` section of run.json: both tokenizers serialized
    (vocabularies included) and the framing of `Translator`."""
    serialize = keras.saving.serialize_keras_object
    return {
        "source": serialize(source_tokenizer),
        "target": serialize(target_tokenizer),
        "max_tokens": int(max_tokens),
        "source_end_token": bool(source_end_token),
    }


def model_arguments(section: dict) -> dict:
    """`Seq2Seq`'s arguments from run.json's `"model"` section: settings
    that are not `Seq2Seq` arguments (a recipe's own) are left out, and a
    bool `alignment_head` (the first runs with a head) is read as
    `"guided"`/`"off"`; an argument added since (`projection_dtype`)
    takes the value those runs' models had."""
    names = set(inspect.signature(Seq2Seq.__init__).parameters) - {
        "self",
        "kwargs",
    }
    arguments = {k: v for k, v in section.items() if k in names}
    arguments = {**LEGACY_MODEL_VALUES, **arguments}
    if isinstance(arguments.get("alignment_head"), bool):
        arguments["alignment_head"] = (
            "guided" if arguments["alignment_head"] else "off"
        )
    return arguments


def _read_vocabulary(path: str) -> list:
    with open(path, encoding="utf-8-sig") as f:
        return [line.rstrip("\r\n") for line in f]


def _legacy_tokenizers(run_dir: str, config: dict) -> dict:
    """The `"tokenizers"` section of a run written before it existed: its
    `"text"` section and WordPiece vocabulary files."""
    text = config.get("text")
    paths = [
        run_dir_lib.run_path(run_dir, name)
        for name in (run_dir_lib.SOURCE_VOCAB, run_dir_lib.TARGET_VOCAB)
    ]
    if text is None or not all(os.path.exists(p) for p in paths):
        raise ValueError(
            f"The run at {run_dir!r} names no tokenizers: its run.json has "
            f"no {TOKENIZERS!r} section, nor a 'text' section with "
            "source_vocab.txt and target_vocab.txt beside it. Train it again "
            "with this version, or build the `Translator` from its "
            "`Seq2Seq` and tokenizers yourself."
        )
    source = WordPieceTokenizer(
        _read_vocabulary(paths[0]),
        lower_case=bool(text.get("source_lower_case", False)),
    )
    target = WordPieceTokenizer(
        _read_vocabulary(paths[1]),
        lower_case=bool(text.get("target_lower_case", False)),
    )
    return tokenizers_section(
        source,
        target,
        text.get("max_tokens", 64),
        text.get("source_end_token", True),
    )


def load_run(run_dir: str, weights: Optional[str] = None) -> dict:
    """The `Translator` arguments of a run directory: its `Seq2Seq` with
    the weights loaded, its tokenizers, `max_tokens` and
    `source_end_token` (`Translator(**load_run(run_dir))`).

    Args:
        run_dir: The run directory.
        weights: A weights file to load instead of the run's final
            `model.weights.h5` (a checkpoint, say).

    Raises:
        ValueError: if the run has no run.json, names no tokenizers, has no
            weights file, or its weights do not fit its settings (the
            message names the file and the sizes).
    """
    config = run_dir_lib.load_run_config(run_dir)
    if "model" not in config:
        raise ValueError(
            f"The run.json of {run_dir!r} has no 'model' section. "
            f"Received: sections={sorted(config)}"
        )
    section = config.get(TOKENIZERS) or _legacy_tokenizers(run_dir, config)
    deserialize = keras.saving.deserialize_keras_object
    source = deserialize(section["source"])
    target = deserialize(section["target"])
    arguments = model_arguments(config["model"])
    arguments["source_vocab_size"] = source.vocabulary_size
    arguments["target_vocab_size"] = target.vocabulary_size
    for side, tokenizer in (("source", source), ("target", target)):
        saved = config["model"].get(f"{side}_vocab_size")
        if saved is not None and saved != tokenizer.vocabulary_size:
            raise ValueError(
                f"The run at {run_dir!r} is inconsistent: run.json's model "
                f"has {side}_vocab_size={saved} but its {side} tokenizer "
                f"holds {tokenizer.vocabulary_size} tokens."
            )
    path = weights or run_dir_lib.run_path(run_dir, run_dir_lib.WEIGHTS)
    if not os.path.exists(path):
        raise ValueError(
            f"No weights file {path!r}: the run has not finished training "
            "(resume it), or give a checkpoint as `weights`."
        )
    seq2seq = Seq2Seq(**arguments)
    try:
        seq2seq.load_weights(path)
    except (ValueError, OSError) as e:
        raise ValueError(
            f"The weights file {path!r} does not fit the run's model "
            f"(run.json's model section: units={arguments.get('units')}, "
            f"embedding_dim={arguments.get('embedding_dim')}, vocabularies "
            f"{source.vocabulary_size}/{target.vocabulary_size}), or is "
            f"damaged: {str(e).splitlines()[0]}"
        ) from None
    return {
        "seq2seq": seq2seq,
        "source_tokenizer": source,
        "target_tokenizer": target,
        "max_tokens": section.get("max_tokens", 64),
        "source_end_token": section.get("source_end_token", True),
    }
