"""Per-field and per-month alignment accuracy of a trained dates run.

Teacher-forced attention of `RUN` on fresh dates (a seed the run never saw),
grouped into words, scored against the true alignment of the generator:
one row per field (weekday, day, month, year) and one per month. Also
reports where the month words' attention goes (share on the source
`[END]`) and, with `--mask-end`, the same figures when the source `[END]`
is removed from the attended memory at inference only (an ablation: the
encoder still reads `[END]`; the model was not trained that way).

    python -m benchmarks.alignment.dates_months --run runs/demo

Needs TensorFlow (the example's tokenizers); about 20 s on 2 CPU cores.
"""

import argparse
import collections
import datetime
import random

import numpy as np

MONTHS = (
    "January February March April May June July August September October "
    "November December"
).split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


def field_of(word: str) -> str:
    if word in MONTHS:
        return "month"
    if word in WEEKDAYS:
        return "weekday"
    if word.isdigit():
        return "year" if len(word) == 4 else "day"
    return "other"


def fresh_dates(num: int, seed: int):
    from examples.nmt import dates as data_lib

    rng = random.Random(seed)
    first = datetime.date(1900, 1, 1).toordinal()
    last = datetime.date(2099, 12, 31).toordinal()
    out = []
    for _ in range(num):
        date = datetime.date.fromordinal(rng.randint(first, last))
        locale = rng.choice(data_lib.DATE_LANGUAGES)
        length = rng.choice(data_lib.DATE_FORMATS)
        out.append(data_lib.date_pair(date, locale, length) + (locale,))
    return out


def attention(seq2seq, src, tgt_in, mask_end):
    """Teacher-forced attention `(batch, T, S)` of the luong decoder."""
    from keras import ops

    if not mask_end:
        return np.asarray(
            seq2seq(
                {"source_ids": src, "target_in": tgt_in}, training=False
            )["attention"]
        )
    outputs = seq2seq.encoder_model(src, training=False)
    memory, states = outputs[0], list(outputs[1:])
    mask = np.asarray(src) != 0
    lengths = mask.sum(axis=1)
    # The source [END] is the last real token of each row.
    mask[np.arange(len(mask)), lengths - 1] = False
    y = seq2seq.target_embedding(tgt_in)
    initial = states if seq2seq.bridge else None
    for rnn in seq2seq.decoder_rnns:
        y = rnn(y, initial_state=initial, training=False)[0]
    keys = None
    if getattr(seq2seq.config, "attention_keys", "encoder") == "embedding":
        keys = seq2seq.source_embedding(src)
    _, weights = seq2seq.attention(
        y, memory, key=keys, value_mask=ops.convert_to_tensor(mask),
        training=False,
    )
    return np.asarray(weights)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--run", required=True)
    p.add_argument("--num", type=int, default=1400)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--mask-end", action="store_true")
    args = p.parse_args(argv)

    import tensorflow as tf

    from examples.nmt import run as train_lib
    from keras_attention import alignment as al

    seq2seq, source, target, _ = train_lib.load_trained(args.run)
    triples = fresh_dates(args.num, args.seed)
    hits = collections.Counter()
    counts = collections.Counter()
    end_mass = collections.defaultdict(list)
    for i in range(0, len(triples), 256):
        chunk = triples[i : i + 256]
        src = source.tokenize([x[0] for x in chunk])
        tgt = target.tokenize([x[1] for x in chunk])
        src_d = tf.cast(src.to_tensor(), tf.int32)
        tgt_d = tf.cast(tgt.to_tensor(), tf.int32)
        w = attention(seq2seq, src_d, tgt_d[:, :-1], args.mask_end)
        for j, (_, tgt_text, truth, locale) in enumerate(chunk):
            s_ids = src[j].numpy()
            t_ids = tgt[j].numpy()
            s_tok = [x.decode("utf-8") for x in
                     source.token_strings(s_ids).numpy()]
            t_tok = [x.decode("utf-8") for x in
                     target.token_strings(t_ids).numpy()][1:]
            weights = w[j, : len(t_tok), : len(s_tok)]
            matrix = al.word_attention(weights, s_tok, t_tok)
            words = tgt_text.replace(",", " ,").split()
            if matrix.shape[0] != len(truth):
                continue
            groups = al.word_groups(t_tok)
            for k, (row, gold) in enumerate(zip(matrix, truth)):
                if not gold:
                    continue
                word = words[k] if len(words) == len(truth) else "?"
                field = field_of(word)
                hit = int(np.argmax(row)) in set(gold)
                by_language = f"{field}/{locale}"
                keys = (field, word if field == "month" else None, by_language)
                for key in keys:
                    if key:
                        counts[key] += 1
                        hits[key] += hit
                if field == "month":
                    end_mass[word].append(
                        float(weights[groups[k]][:, len(s_tok) - 1].mean())
                    )
    label = "masked [END] at inference" if args.mask_end else "as trained"
    print(f"run {args.run}, {args.num} fresh dates (seed {args.seed}), "
          f"{label}")
    print(f"{'field/month':<12}{'accuracy':>10}{'words':>7}"
          f"{'weight on [END]':>17}")
    for key in ("weekday", "day", "month", "year") + tuple(MONTHS):
        if counts[key]:
            mass = (f"{np.mean(end_mass[key]):17.2f}"
                    if key in end_mass else "")
            print(f"{key:<12}{100 * hits[key] / counts[key]:9.1f}%"
                  f"{counts[key]:7d}{mass}")
    worst = sorted(
        (hits[k] / counts[k], k) for k in counts if "/" in k
    )[:6]
    print("lowest field/language:", ", ".join(
        f"{k} {100 * a:.1f}%" for a, k in worst))


if __name__ == "__main__":
    main()
