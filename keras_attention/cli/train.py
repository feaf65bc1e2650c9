"""`train`: learn the vocabularies, train a `Translator`, save one `.keras`
file (atomically: a temporary file in the same folder, then `os.replace`).
"""

from typing import Any
from typing import List
from typing import Tuple

import random

from keras_attention.cli.errors import CliError
from keras_attention.cli.files import check_output
from keras_attention.cli.files import save_atomically
from keras_attention.cli.io import read_pairs
from keras_attention.cli.parser import FROM_TEXTS_DEST
from keras_attention.cli.parser import SEQ2SEQ_DEST
from keras_attention.cli.parser import given


def _split(
    sources: List[str], targets: List[str], fraction: float, seed: Any
) -> Tuple[tuple, tuple]:
    """`(train, validation)` pairs: a shuffled `fraction` held out."""
    if not 0.0 <= fraction < 1.0:
        raise CliError(
            f"--validation-split must be in [0, 1); got {fraction}"
        )
    if fraction == 0.0:
        return (sources, targets), None
    held = int(round(len(sources) * fraction))
    if held < 1 or held >= len(sources):
        raise CliError(
            f"--validation-split {fraction} of {len(sources)} pairs leaves "
            "no pair to train or none to validate"
        )
    order = list(range(len(sources)))
    random.Random(seed).shuffle(order)
    pick = [order[held:], order[:held]]
    train, valid = (
        ([sources[i] for i in p], [targets[i] for i in p]) for p in pick
    )
    return train, valid


def _epoch_printer(epochs: int) -> Any:
    import keras

    class EpochLine(keras.callbacks.Callback):
        """One line per epoch: the loss and the accuracy (and the
        validation's)."""

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            logs = logs or {}
            parts = [f"epoch {epoch + 1}/{epochs}"]
            for prefix in ("", "val_"):
                loss = logs.get(prefix + "loss")
                accuracy = [
                    v for k, v in logs.items()
                    if k.startswith(prefix) and "accuracy" in k
                    and (prefix or not k.startswith("val_"))
                ]
                if loss is not None:
                    parts.append(f"{prefix}loss {float(loss):.4f}")
                if accuracy:
                    parts.append(f"{prefix}accuracy {float(accuracy[0]):.4f}")
            print(" ".join(parts), flush=True)

    return EpochLine()


def _tokenizers(args: Any) -> dict:
    out = {}
    for side in ("source", "target"):
        kind = getattr(args, f"{side}_tokenizer") or args.tokenizer
        if kind is not None:
            out[f"{side}_tokenizer"] = kind
    return out


def run(args: Any) -> int:
    """Runs `train`."""
    if not args.out.endswith(".keras"):
        raise CliError(f"--out {args.out}: the model file must end in .keras")
    check_output(args.out, "--out", args.overwrite)
    if args.epochs < 1:
        raise CliError(
            f"--epochs must be at least 1 (got {args.epochs}): an untrained "
            "model translates nothing useful"
        )
    if args.batch_size < 1:
        raise CliError(f"--batch-size must be at least 1; got {args.batch_size}")
    if args.seed is not None and args.seed < 0:
        raise CliError(f"--seed must be 0 or more; got {args.seed}")
    from_texts = given(args, FROM_TEXTS_DEST)
    for name, value in from_texts.items():
        if not isinstance(value, bool) and value < 1:
            flag = "--" + name.replace("_", "-")
            raise CliError(f"{flag} must be at least 1; got {value}")
    sources, targets = read_pairs(args.data, args.data_format, args.target_file)
    train, valid = _split(sources, targets, args.validation_split, args.seed)

    import keras

    from keras_attention.translator import Translator

    if args.seed is not None:
        keras.utils.set_random_seed(args.seed)
    translator = Translator.from_texts(
        *train, **_tokenizers(args), **from_texts,
        **given(args, SEQ2SEQ_DEST),
    )
    print(
        f"training on {len(train[0])} pairs"
        + (f", validating on {len(valid[0])}" if valid else "")
        + f": vocabularies {translator.source_tokenizer.vocabulary_size} "
        f"(source) and {translator.target_tokenizer.vocabulary_size} "
        "(target)",
        flush=True,
    )
    translator.fit(
        *train,
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=valid,
        callbacks=[_epoch_printer(args.epochs)],
        verbose=0,
    )
    save_atomically(args.out, translator.save)
    print(f"saved {args.out}", flush=True)
    return 0
