"""The decoding flags of a recipe's `export` and `translate` commands.

Both export `keras_attention.serving.TranslatorModule`:

- `export_option_arguments`: `--ensemble`, `--coverage-penalty`,
  `--replace-unknown`, `--tfa-convention`, `--xla`, stored in the
  SavedModel;
  `export_options`: their values as the arguments of a recipe's
  `export_run`;
- `decoding_arguments`: `--n-best K`, `--sample` (`--temperature`,
  `--top-k`, `--top-p`, `--seed`) and `--prefix TEXT`, which choose the
  signature `translate_texts` calls (`nbest`, `sample`, `complete`; else
  `serving_default` or `beam`); `check_decoding_arguments` checks them
  with `--beam-width` (`check_beam_width`), before any model is loaded;
- `text_grid` and `save_heatmaps`: the attention of translated inputs.
"""

from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import List
from typing import Sequence
from typing import Tuple

import argparse
import math

from keras_attention.serving.limits import MAX_BEAM_WIDTH


def export_option_arguments(parser: argparse.ArgumentParser) -> None:
    """The decoding options stored in an exported SavedModel, and
    `--ensemble` (more runs decoded together)."""
    parser.add_argument(
        "--ensemble", nargs="+", metavar="RUN", default=None,
        help="more run directories with the same vocabularies: one "
        "SavedModel that averages the models' probabilities",
    )
    parser.add_argument(
        "--coverage-penalty", type=float, default=0.0, metavar="BETA",
        help="GNMT coverage penalty weight of beam search (default 0: off)",
    )
    parser.add_argument(
        "--replace-unknown", action="store_true",
        help="replace each [UNK] of a translation by the source word with "
        "the highest attention",
    )
    parser.add_argument(
        "--tfa-convention", action="store_true",
        help="length penalty as TFA's BeamSearchDecoder (the end token does "
        "not count in the length on the step that produces it)",
    )
    parser.add_argument(
        "--xla", choices=("step", "decode"), default=None,
        help="XLA-compile a part of every signature: the decoder's 'step', "
        "or the whole 'decode' from token ids (the encoder and the loop; "
        "the string ops stay TensorFlow); the server then needs XLA",
    )


def export_options(args: argparse.Namespace) -> Dict[str, Any]:
    """The `export_run` keyword arguments of `export_option_arguments`'
    flags: `ensemble`, `coverage_penalty`, `replace_unknown`,
    `convention`, `xla`."""
    return {
        "ensemble": args.ensemble or (),
        "coverage_penalty": args.coverage_penalty,
        "replace_unknown": args.replace_unknown,
        "convention": "tfa" if args.tfa_convention else "default",
        "xla": args.xla,
    }


def decoding_arguments(parser: argparse.ArgumentParser) -> None:
    """`--n-best`, `--sample` (and its settings) and `--prefix`, for the
    `translate` commands (`translate_texts`)."""
    group = parser.add_argument_group("decoding")
    modes = group.add_mutually_exclusive_group()
    modes.add_argument(
        "--n-best", type=int, default=None, metavar="K",
        help="print the K best translations of each input with their "
        "scores (beam search of width K, at most the SavedModel's "
        "maximum beam width)",
    )
    modes.add_argument(
        "--sample", action="store_true",
        help="draw the translations (see --temperature, --top-k, --top-p, "
        "--seed)",
    )
    modes.add_argument(
        "--prefix", metavar="TEXT",
        help="translations that start with this target text (beam search "
        "of --beam-width; greedy at 0 or 1)",
    )
    group.add_argument(
        "--temperature", type=float, default=None,
        help="with --sample: logits divided by T (default 1; 0: greedy)",
    )
    group.add_argument(
        "--top-k", type=int, default=None,
        help="with --sample: draw among the K most probable tokens "
        "(default: all)",
    )
    group.add_argument(
        "--top-p", type=float, default=None,
        help="with --sample: draw from the nucleus of probability P "
        "(default 1: all)",
    )
    group.add_argument(
        "--seed", type=int, default=None,
        help="with --sample: the same seed gives the same draws "
        "(default: a new draw each time)",
    )


def _out_of_range(flag: str, allowed: str, value: Any) -> ValueError:
    return ValueError(f"{flag} must be {allowed}. Received: {flag} {value}")


def check_beam_width(args: argparse.Namespace) -> None:
    """Checks `--beam-width`: from 0 (greedy only) to `MAX_BEAM_WIDTH`,
    the widest beam the SavedModel searches (it would search that one
    instead of a wider one asked for).

    Raises:
        ValueError: naming the flag and the range.
    """
    width = getattr(args, "beam_width", None)
    if width is not None and not 0 <= width <= MAX_BEAM_WIDTH:
        raise _out_of_range(
            "--beam-width", f"from 0 (greedy only) to {MAX_BEAM_WIDTH} (the "
            "widest beam of the SavedModel)", width,
        )


def check_decoding_arguments(args: argparse.Namespace) -> None:
    """Checks the flags of `decoding_arguments` and `--beam-width`
    together, before any model is loaded.

    `--beam-width` goes with greedy decoding and `--prefix`, not with
    `--n-best` (whose beam is K wide) or `--sample`; `--temperature`,
    `--top-k`, `--top-p` and `--seed` need `--sample`.

    Raises:
        ValueError: naming the flag and what it allows.
    """
    check_beam_width(args)
    width = getattr(args, "beam_width", 0)
    sampling = {
        "--temperature": args.temperature, "--top-k": args.top_k,
        "--top-p": args.top_p, "--seed": args.seed,
    }
    given = {k: v for k, v in sampling.items() if v is not None}
    if given and not args.sample:
        raise ValueError(
            f"{', '.join(given)} need --sample (they set how translations "
            "are drawn). Received: "
            + " ".join(f"{k} {v}" for k, v in given.items())
            + " without --sample"
        )
    if args.n_best is not None:
        if not 1 <= args.n_best <= MAX_BEAM_WIDTH:
            raise _out_of_range(
                "--n-best", f"from 1 to {MAX_BEAM_WIDTH} (the widest beam "
                "of the SavedModel)", args.n_best,
            )
        if width:
            raise ValueError(
                "--n-best K searches with a beam of width K: it does not "
                f"go with --beam-width. Received: --n-best {args.n_best} "
                f"--beam-width {width}"
            )
    if not args.sample:
        return
    if width:
        raise ValueError(
            "--sample draws the translations: it does not go with "
            f"--beam-width (beam search). Received: --beam-width {width}"
        )
    temperature, top_k, top_p = args.temperature, args.top_k, args.top_p
    if temperature is not None and not 0 <= temperature < math.inf:
        raise _out_of_range(
            "--temperature", "a finite number >= 0 (0: greedy)", temperature
        )
    if top_k is not None and top_k < 1:
        raise _out_of_range("--top-k", "at least 1 (default: all)", top_k)
    if top_p is not None and not 0 < top_p <= 1:
        raise _out_of_range("--top-p", "in (0, 1] (default 1: all)", top_p)
    if args.seed is not None and args.seed < 0:
        raise _out_of_range("--seed", "0 or more", args.seed)


def _decoder(
    args: argparse.Namespace, path: str
) -> Tuple[Callable[[Any], Any], int]:
    """`(translate_fn, hypotheses per input)` of the parsed flags."""
    import tensorflow as tf

    from keras_attention import serving as export_lib

    if args.n_best is not None:
        nbest = export_lib.load_signature(path, "nbest")
        k = tf.constant(args.n_best, tf.int32)

        def translate_fn(text: Any) -> Any:
            out = nbest(text=text, k=k)
            flat = {
                key: tf.reshape(v, tf.concat([[-1], tf.shape(v)[2:]], 0))
                for key, v in out.items() if key != "source_tokens"
            }
            flat["source_tokens"] = tf.repeat(
                out["source_tokens"], tf.shape(out["scores"])[1], axis=0
            )
            return flat

        return translate_fn, min(args.n_best, export_lib.MAX_BEAM_WIDTH)
    if args.sample:
        top_p = 1.0 if args.top_p is None else args.top_p
        sample = export_lib.load_signature(path, "sample")
        inputs = {
            "temperature": tf.constant(
                1.0 if args.temperature is None else args.temperature,
                tf.float32,
            ),
            "top_k": tf.constant(args.top_k or 0, tf.int32),
            "top_p": tf.constant(top_p, tf.float32),
            "seed": tf.constant(
                -1 if args.seed is None else args.seed, tf.int64
            ),
        }
        return (lambda text: sample(text=text, **inputs)), 1
    if args.prefix is not None:
        complete = export_lib.load_signature(path, "complete")
        width = tf.constant(max(args.beam_width, 1), tf.int32)

        def translate_fn(text: Any) -> Any:
            prefix = tf.fill(tf.shape(text), args.prefix)
            return complete(text=text, prefix=prefix, beam_width=width)

        return translate_fn, 1
    return export_lib.load_saved_model(path, beam_width=args.beam_width), 1


def translate_texts(
    args: argparse.Namespace, texts: Sequence[str]
) -> List[Tuple[str, List[Dict[str, Any]]]]:
    """Translates `texts` as the flags of a `translate` command say
    (`--model`, `--beam-width`, `--attention` and `decoding_arguments`) and
    prints them:
    `input TAB translation` a line, or with `--n-best K`, K lines
    `input TAB rank TAB score TAB translation` per input.

    Returns:
        `[(input, [hypothesis dicts of `serving.translate_all`, with
        `score`])]`.
    """
    from keras_attention import serving
    from keras_attention.translator.translating import warn_about_texts

    check_decoding_arguments(args)
    warn_about_texts(texts)
    translate_fn, per_text = _decoder(
        args, serving.resolve_saved_model(args.model)
    )
    scores = []

    def scored_fn(text: Any) -> Any:
        out = translate_fn(text)
        scores.extend(out["scores"].numpy().tolist())
        return out

    results = serving.translate_all(scored_fn, texts)
    grouped = []
    for i, text in enumerate(texts):
        hypotheses = results[i * per_text : (i + 1) * per_text]
        for rank, r in enumerate(hypotheses):
            r["score"] = scores[i * per_text + rank]
            if args.n_best is not None:
                print(f"{text}\t{rank + 1}\t{r['score']:.4f}\t"
                      f"{r['translation']}")
            else:
                print(f"{text}\t{r['translation']}")
            if args.attention:
                print(text_grid(r))
                print()
        grouped.append((text, hypotheses))
    return grouped


def text_grid(result: Dict[str, Any]) -> str:
    """The terminal grid of one result of `serving.translate_all`."""
    from keras_attention import visualization

    return visualization.attention_text_grid(
        result["attention"], result["source_tokens"], result["target_tokens"]
    )


def save_heatmaps(
    texts_and_results: Iterable[Tuple[str, Dict[str, Any]]], path: str
) -> str:
    """Saves the heatmaps of `(text, result)` pairs side by side in one PNG,
    on one colour scale (0 to 1). Returns `path`."""
    from keras_attention import visualization

    visualization.plot_attention_grid(
        [
            (
                r["attention"],
                r["source_tokens"],
                r["target_tokens"],
                f"{text}\n-> {r['translation']}",
            )
            for text, r in texts_and_results
        ],
        path=path,
    )
    return path
