"""`translate`: one translation a line, of TEXT arguments, `--file` or
stdin (each line answered as it comes, the model loaded once; typed at a
terminal, a `ready:` line on stderr says when to type). A blank
text translates to an empty line, with a `warning:` line on stderr, so
that the output lines answer the input lines one for one."""

from typing import Any
from typing import Iterable
from typing import List
from typing import Tuple

import sys

from keras_attention.cli.errors import CliError
from keras_attention.cli.io import iter_stream
from keras_attention.cli.io import read_lines
from keras_attention.cli.decoder import Decoder
from keras_attention.cli.models import load_decoder

# Texts of a file decoded at once.
BATCH = 64


def decoding_options(args: Any) -> Tuple[str, dict]:
    """The strategy (`greedy`, `beam`, `nbest`, `sample`) and the options
    of the decoding flags, checked together.

    Raises:
        CliError: for flags that do not go together or out of range.
    """
    beam_width = args.beam_width
    n_best = getattr(args, "n_best", None)
    sample = getattr(args, "sample", False)
    temperature = getattr(args, "temperature", None)
    top_k = getattr(args, "top_k", None)
    seed = getattr(args, "seed", None)
    max_length = getattr(args, "max_length", None)
    for flag, value in (("--beam-width", beam_width), ("--n-best", n_best),
                        ("--top-k", top_k), ("--max-length", max_length)):
        if value is not None and value < 1:
            raise CliError(f"{flag} must be at least 1; got {value}")
    if seed is not None and seed < 0:
        raise CliError(f"--seed must be 0 or more; got {seed}")
    if sample:
        for flag, value in (("--beam-width", beam_width), ("--n-best", n_best)):
            if value is not None:
                raise CliError(
                    f"--sample draws one translation at random: it does not "
                    f"go with {flag} (beam search)"
                )
        if temperature is not None and not temperature > 0:
            raise CliError(f"--temperature must be > 0; got {temperature}")
        options = {"temperature": temperature, "top_k": top_k, "seed": seed}
        return "sample", dict(options, max_length=max_length)
    for flag, value in (("--temperature", temperature), ("--top-k", top_k),
                        ("--seed", seed)):
        if value is not None:
            raise CliError(f"{flag} goes with --sample")
    if n_best is not None:
        if beam_width is not None and n_best > beam_width:
            raise CliError(
                f"--n-best ({n_best}) must be at most --beam-width "
                f"({beam_width})"
            )
        width = n_best if beam_width is None else beam_width
        return "nbest", {"n_best": n_best, "beam_width": width,
                         "max_length": max_length}
    if beam_width is not None:
        return "beam", {"beam_width": beam_width, "max_length": max_length}
    return "greedy", {"max_length": max_length}


def _print(index: int, hypotheses: List[Tuple[str, float]], nbest: bool) -> None:
    if nbest:
        for translation, score in hypotheses:
            print(f"{index}\t{translation}\t{score:.4f}")
    else:
        print(hypotheses[0][0])


def _batches(texts: List[str]) -> Iterable[List[str]]:
    for start in range(0, len(texts), BATCH):
        yield texts[start : start + BATCH]


def translate_lines(decoder: Decoder, texts: List[str], nbest: bool) -> None:
    """Prints the translations of texts, a batch at a time."""
    index = 0
    for batch in _batches(texts):
        for hypotheses in decoder.decode(batch):
            _print(index, hypotheses, nbest)
            index += 1
        sys.stdout.flush()


def run(args: Any) -> int:
    """Runs `translate`."""
    strategy, options = decoding_options(args)
    if args.texts and args.file is not None:
        raise CliError("give texts as arguments or with --file, not both")
    texts = None
    if args.file is not None:
        # Every line, blank ones too: line i of the output answers line i.
        texts = [text.strip() for _, text in read_lines(args.file)]
        if not any(texts):
            raise CliError(f"--file {args.file}: no text in the file")
    elif args.texts:
        texts = [t.strip() for t in args.texts]
    decoder = load_decoder(args.model, strategy, options)
    nbest = strategy == "nbest"
    if texts is not None:
        translate_lines(decoder, texts, nbest)
        return 0
    if sys.stdin.isatty():
        # Typed at: the model is loaded, say so (stderr: stdout holds the
        # translations only).
        print(
            "ready: type a text and Enter for its translation, Ctrl-D to end",
            file=sys.stderr, flush=True,
        )
    lines = iter_stream(sys.stdin.buffer, keep_blank=True)
    for index, (_, text) in enumerate(lines):
        _print(index, decoder.decode([text])[0], nbest)
        sys.stdout.flush()
    return 0
