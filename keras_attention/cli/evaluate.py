"""`evaluate`: BLEU and chrF (sacrebleu) and exact match of the model's
translations of `--data`'s sources against its targets."""

from typing import Any

from keras_attention.cli.errors import CliError
from keras_attention.cli.io import read_pairs
from keras_attention.cli.models import load_decoder
from keras_attention.cli.translate import BATCH
from keras_attention.cli.translate import decoding_options


def _sacrebleu() -> Any:
    try:
        import sacrebleu
    except ImportError:
        raise CliError(
            "evaluate needs sacrebleu for BLEU and chrF: pip install "
            "'keras-seq2seq-attention[examples]' (or pip install sacrebleu)"
        ) from None
    return sacrebleu


def run(args: Any) -> int:
    """Runs `evaluate`."""
    if args.max_examples is not None and args.max_examples < 1:
        raise CliError(
            f"--max-examples must be at least 1; got {args.max_examples}"
        )
    sacrebleu = _sacrebleu()
    strategy, options = decoding_options(args)
    sources, targets = read_pairs(args.data, args.data_format, args.target_file)
    if args.max_examples is not None:
        sources = sources[: args.max_examples]
        targets = targets[: args.max_examples]
    decoder = load_decoder(args.model, strategy, options)
    hypotheses = []
    for start in range(0, len(sources), BATCH):
        batch = sources[start : start + BATCH]
        hypotheses.extend(h[0][0] for h in decoder.decode(batch))
    bleu = sacrebleu.corpus_bleu(hypotheses, [targets])
    chrf = sacrebleu.corpus_chrf(hypotheses, [targets])
    exact = sum(h.strip() == t.strip() for h, t in zip(hypotheses, targets))
    print(f"examples: {len(targets)}")
    print(f"BLEU: {bleu.score:.2f}")
    print(f"chrF: {chrf.score:.2f}")
    print(f"exact match: {exact / len(targets):.4f} ({exact}/{len(targets)})")
    return 0
