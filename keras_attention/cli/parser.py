"""The argument parser of `python -m keras_attention`.

Imports no TensorFlow: the defaults shown by `--help` are read from the
signatures of `Seq2Seq.__init__`, `Translator.from_texts` and
`Translator.fit` (`inspect.signature`), so that no default is written
twice; a flag the user does not give is not passed on, and the library's
default applies.
"""

from typing import Any
from typing import Callable
from typing import Dict
from typing import Optional
from typing import Sequence

import argparse
import inspect
import typing

from keras_attention.cli.errors import CliError
from keras_attention.cli.io import DATA_FORMATS

PROG = "keras-seq2seq-attention"
COMMANDS = ("train", "translate", "evaluate", "export", "serve", "align")
# The `Seq2Seq` arguments the command line does not expose: the vocabulary
# sizes come from the tokenizers, token ids are not known to a user.
# (`projection_dtype` matters under a mixed policy only, which the
# command line does not set.)
_HIDDEN_SEQ2SEQ = ("source_vocab_size", "target_vocab_size",
                   "unattended_source_ids", "projection_dtype")
# Prefix of the destinations of the `Seq2Seq` flags in the namespace.
SEQ2SEQ_DEST = "seq2seq__"
# Prefix of the destinations of `Translator.from_texts` flags.
FROM_TEXTS_DEST = "from_texts__"
TOKENIZERS = ("wordpiece", "sentencepiece", "whitespace", "character")
# The help lines of the commands whose flags import the library (their
# defaults are read from its signatures): `build_parser` lists them by
# these lines alone when another command runs.
HELP = {
    "train": "train a Translator on sentence pairs",
    "serve": "serve a local translation web page",
    "align": "word alignments of sentence pairs (Pharaoh lines)",
}
_EPILOG = (
    "Exit statuses: 0 done, 2 a user error (one line 'error: ...' on "
    "stderr), 1 an internal error, 130 interrupted. docs/cli.md has the "
    "file formats and examples."
)


class Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are `CliError`s: one line
    `error: ...` and exit status 2, without the usage block."""

    def error(self, message: str) -> typing.NoReturn:
        raise CliError(f"{message} (see {self.prog} --help)")


def _defaults(function: Callable) -> Dict[str, inspect.Parameter]:
    return {
        name: p
        for name, p in inspect.signature(function).parameters.items()
        if p.kind is p.POSITIONAL_OR_KEYWORD and name != "self"
    }


def _value_type(parameter: inspect.Parameter) -> Optional[type]:
    """`bool`, `int`, `float` or `str` for a parameter, from its default or
    its annotation (`Optional[int]`); `None` for other types."""
    default = parameter.default
    if default is not None and default is not parameter.empty:
        kind = type(default)
        return kind if kind in (bool, int, float, str) else None
    annotation = parameter.annotation
    if isinstance(annotation, str):
        return None
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    candidates = args or [annotation]
    for kind in (bool, int, float, str):
        if kind in candidates:
            return kind
    return None


def _choices() -> Dict[str, tuple]:
    from keras_attention.seq2seq import seq2seq

    inputs = getattr(seq2seq, "ATTENTION_INPUTS", None)
    found = {
        "model": getattr(seq2seq, "MODELS", None),
        "score": getattr(seq2seq, "SCORES", None),
        "cell": getattr(seq2seq, "CELLS", None),
        "attention_keys": inputs,
        "attention_values": inputs,
        "alignment_head": getattr(seq2seq, "ALIGNMENT_HEADS", None),
    }
    return {k: tuple(v) for k, v in found.items() if v}


def add_seq2seq_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per argument of `Seq2Seq.__init__` (`--units`,
    `--embedding-dim`, `--model`, `--score`, ...), its default from the
    signature; the values given land in `args.seq2seq__<name>`."""
    from keras_attention.seq2seq.seq2seq import Seq2Seq

    group = parser.add_argument_group(
        "model (the arguments of keras_attention.seq2seq.Seq2Seq)"
    )
    choices = _choices()
    for name, parameter in _defaults(Seq2Seq.__init__).items():
        kind = _value_type(parameter)
        if name in _HIDDEN_SEQ2SEQ or kind is None:
            continue
        flag = "--" + name.replace("_", "-")
        default = parameter.default
        shown = "none" if default is None else default
        options: Dict[str, Any] = {
            "dest": SEQ2SEQ_DEST + name,
            "default": argparse.SUPPRESS,
            "help": f"default: {shown}",
        }
        if kind is bool:
            options["action"] = argparse.BooleanOptionalAction
        else:
            options["type"] = kind
            options["metavar"] = "N" if kind is int else (
                "F" if kind is float else "NAME"
            )
            if name in choices:
                options["choices"] = choices[name]
                options.pop("metavar")
        group.add_argument(flag, **options)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """`--data`, `--data-format`, `--target-file`."""
    group = parser.add_argument_group("data")
    group.add_argument(
        "--data", required=True, metavar="FILE",
        help="sentence pairs: a TSV file (source<TAB>target) or, with "
        "--target-file, the source side of two aligned files",
    )
    group.add_argument(
        "--data-format", choices=DATA_FORMATS, default=None,
        help="default: parallel with --target-file, else tsv",
    )
    group.add_argument(
        "--target-file", metavar="FILE", default=None,
        help="the translations of --data, one a line",
    )


def _int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer, got {text!r}"
        ) from None
    return value


def _add_train(commands: Any) -> None:
    from keras_attention.translator.translator import Translator

    from_texts = _defaults(Translator.from_texts)
    fit = _defaults(Translator.fit)
    p = commands.add_parser(
        "train", help=HELP["train"],
        description="Learns the vocabularies, trains a Translator and saves "
        "it as one .keras file.",
    )
    add_data_arguments(p)
    p.add_argument("--out", required=True, metavar="MODEL.keras",
                   help="the model file to write")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out")
    group = p.add_argument_group("tokenizers (Translator.from_texts)")
    kinds = TOKENIZERS
    group.add_argument(
        "--tokenizer", choices=kinds, default=None,
        help="both sides' tokenizer; default: "
        f"{from_texts['source_tokenizer'].default}",
    )
    group.add_argument("--source-tokenizer", choices=kinds, default=None)
    group.add_argument("--target-tokenizer", choices=kinds, default=None)
    for name, metavar in (
        ("vocabulary_size", "N"),
        ("source_vocabulary_size", "N"),
        ("target_vocabulary_size", "N"),
        ("max_tokens", "N"),
    ):
        shown = from_texts[name].default
        group.add_argument(
            "--" + name.replace("_", "-"), type=_int, metavar=metavar,
            dest=FROM_TEXTS_DEST + name, default=argparse.SUPPRESS,
            help=f"default: {'that of --vocabulary-size' if shown is None else shown}",
        )
    group.add_argument(
        "--lower-case", action="store_true", dest=FROM_TEXTS_DEST + "lower_case",
        default=argparse.SUPPRESS, help="lower-case the texts",
    )
    group = p.add_argument_group("training")
    group.add_argument("--epochs", type=_int, metavar="N",
                       default=fit["epochs"].default,
                       help="at least 1; default: %(default)s")
    group.add_argument("--batch-size", type=_int, metavar="N",
                       default=fit["batch_size"].default,
                       help="default: %(default)s")
    group.add_argument("--validation-split", type=float, metavar="F",
                       default=0.0,
                       help="the fraction of pairs held out to validate, in "
                       "[0, 1); default: %(default)s")
    group.add_argument("--seed", type=_int, metavar="N", default=None,
                       help="seed of the weights, the split and the "
                       "shuffling")
    add_seq2seq_arguments(p)


def add_decoding_arguments(
    parser: argparse.ArgumentParser, full: bool = True
) -> None:
    """`--beam-width`, and with `full` the n-best, sampling and length
    flags."""
    group = parser.add_argument_group("decoding (default: greedy)")
    group.add_argument("--beam-width", type=_int, metavar="N",
                       default=None, help="beam search of N beams")
    if not full:
        return
    group.add_argument("--n-best", type=_int, metavar="N", default=None,
                       help="print the N best translations of each text "
                       "(beam search; --beam-width defaults to N)")
    group.add_argument("--sample", action="store_true",
                       help="draw translations at random")
    group.add_argument("--temperature", type=float, metavar="T", default=None,
                       help="with --sample: > 0; default: 1")
    group.add_argument("--top-k", type=_int, metavar="K", default=None,
                       help="with --sample: draw among the K likeliest "
                       "tokens")
    group.add_argument("--seed", type=_int, metavar="S", default=None,
                       help="with --sample: the same draws for a seed")
    group.add_argument("--max-length", type=_int, metavar="N",
                       default=None,
                       help="longest translation in tokens (.keras models; "
                       "default: the model's max_tokens)")


def _add_model(parser: argparse.ArgumentParser, saved_model: bool) -> None:
    parser.add_argument(
        "--model", required=True, metavar="PATH",
        help="a .keras Translator file, a run directory (run.json: the "
        "examples' train writes one)"
        + (", an exported SavedModel directory, or a .tflite or .onnx "
           "export (its .vocab.json beside it)" if saved_model else ""),
    )


def _add_translate(commands: Any) -> None:
    p = commands.add_parser(
        "translate", help="translate texts (arguments, --file or stdin)",
        description="Prints one translation a line. Without TEXT or --file "
        "reads stdin, one text a line, and answers each line as it comes.",
    )
    _add_model(p, True)
    p.add_argument("texts", nargs="*", metavar="TEXT", help="texts to translate")
    p.add_argument("--file", metavar="FILE", default=None,
                   help="texts to translate, one a line")
    add_decoding_arguments(p)


def _add_evaluate(commands: Any) -> None:
    p = commands.add_parser(
        "evaluate", help="BLEU, chrF and exact match on sentence pairs",
        description="Translates the sources of --data and scores them "
        "against the targets (BLEU and chrF need sacrebleu: pip install "
        "'keras-seq2seq-attention[examples]').",
    )
    _add_model(p, True)
    add_data_arguments(p)
    add_decoding_arguments(p, full=False)
    p.add_argument("--max-examples", type=_int, metavar="N", default=None,
                   help="score the first N pairs only (at least 1)")


def _add_export(commands: Any) -> None:
    p = commands.add_parser(
        "export", help="write a SavedModel, a LiteRT or an ONNX model",
        description="Translator.export: a SavedModel that plain TensorFlow "
        "serves (signatures serving_default, greedy, beam, nbest, sample, "
        "complete), or a LiteRT (.tflite) or ONNX (.onnx) model with greedy "
        "and beam search, its vocabularies (.vocab.json) and a Python "
        "client (translator_client.py) beside it (pip install "
        "'keras-seq2seq-attention[export]').",
    )
    _add_model(p, False)
    p.add_argument("--out", required=True, metavar="PATH",
                   help="the SavedModel directory, or the .tflite or .onnx "
                   "file, to write")
    p.add_argument("--format", choices=("tf_saved_model", "litert", "onnx"),
                   default="tf_saved_model",
                   help="default: tf_saved_model")
    p.add_argument("--quantize", choices=("float16", "int8"), default=None,
                   help="litert: float16 or dynamic-range int8 weights; "
                   "onnx: int8 (default: float32)")
    p.add_argument("--xla", choices=("auto", "none", "step", "decode"),
                   default=None,
                   help="tf_saved_model: compile the whole decoding (decode), "
                   "the decoding step (step) or nothing (none) with XLA "
                   "(default: auto, the whole decoding where TensorFlow has "
                   "XLA)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out")


def _add_serve(commands: Any) -> None:
    from keras_attention.web import server

    port = _defaults(server.serve)["port"].default
    p = commands.add_parser(
        "serve", help=HELP["serve"],
        description="Serves a page and a JSON API (POST /api/translate) on "
        "127.0.0.1 until Ctrl-C. A .keras file is exported to a temporary "
        "SavedModel first.",
    )
    _add_model(p, True)
    p.add_argument("--port", type=_int, metavar="N",
                   default=argparse.SUPPRESS,
                   help=f"0 picks a free port; default: {port}")


def _add_align(commands: Any) -> None:
    from keras_attention.alignment.symmetrization import METHODS
    from keras_attention.alignment.agreement import AGREEMENT
    from keras_attention.translator.translating import LINK_METHODS
    from keras_attention.translator.translator import Translator

    align = _defaults(Translator.align)
    p = commands.add_parser(
        "align", help=HELP["align"],
        description="Writes one line of 0-based source-target links "
        "('0-0 1-2') per sentence pair, from the model's attention.",
    )
    _add_model(p, False)
    add_data_arguments(p)
    p.add_argument("--method", choices=LINK_METHODS, default=argparse.SUPPRESS,
                   help=f"default: {align['method'].default}")
    p.add_argument("--threshold", type=float, metavar="F",
                   default=argparse.SUPPRESS,
                   help=f"with --method threshold; default: "
                   f"{align['threshold'].default}")
    p.add_argument("--reverse", metavar="MODEL.keras", default=None,
                   help="a Translator of the other direction, whose links "
                   "are symmetrized with these")
    p.add_argument("--symmetrize", choices=METHODS + (AGREEMENT,),
                   default=argparse.SUPPRESS,
                   help="with --reverse: a symmetrization of both "
                   "directions' links, or 'agreement': the word pairs where "
                   "both directions' weights agree; default: "
                   f"{align['symmetrize'].default}")
    p.add_argument("--agreement-threshold", type=float, metavar="F",
                   default=argparse.SUPPRESS,
                   help="with --symmetrize agreement, in (0, 1]: the least "
                   "geometric mean of the two directions' weights of a "
                   f"link; default: {align['agreement_threshold'].default}")
    p.add_argument("--diagonal-tension", type=float, metavar="T",
                   default=argparse.SUPPRESS,
                   help="fast_align's distortion prior, >= 0: each "
                   "direction's weights times exp(-T * |i/m - j/n|) before "
                   "the links (4 is fast_align's start); default: none")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="the file to write (default: stdout)")


def command_of(argv: Sequence[str]) -> Optional[str]:
    """The command `argv` names: its first word that is not an option (the
    options before the command take no value); `None` without one."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(
    full: Optional[Sequence[Optional[str]]] = None,
) -> argparse.ArgumentParser:
    """The parser of every sub-command; `args.command` names the one
    given.

    Args:
        full: The commands whose flags are built (default: all); the
            others that import the library to build theirs (`HELP`) are
            listed by their help line only, so that `translate` imports
            none of the model's modules.
    """
    parser = Parser(
        prog=PROG,
        description="Train, use and serve attentional seq2seq translators "
        "(keras_attention.translator.Translator).",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {_version()}")
    parser.add_argument("--verbose", action="store_true",
                        help="show the backend's logs and warnings, and the "
                        "traceback of an internal error")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND",
                                     parser_class=Parser)
    for add in (_add_train, _add_translate, _add_evaluate, _add_export,
                _add_serve, _add_align):
        name = add.__name__[len("_add_"):]
        if full is None or name in full or name not in HELP:
            add(commands)
        else:
            commands.add_parser(name, help=HELP[name])
    for sub in commands.choices.values():
        sub.epilog = _EPILOG
        sub.add_argument("--verbose", action="store_true",
                         default=argparse.SUPPRESS,
                         help="show the backend's logs and warnings")
    return parser


def _version() -> str:
    from keras_attention.version import __version__

    return __version__


def given(args: argparse.Namespace, prefix: str) -> Dict[str, Any]:
    """The flags given under a destination prefix, by argument name."""
    return {
        name[len(prefix) :]: value
        for name, value in vars(args).items()
        if name.startswith(prefix)
    }
