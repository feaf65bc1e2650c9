"""Sequence reversal with Luong attention, in one file.

A keras-io style walk-through of keras_attention: make a toy data set,
build an encoder-decoder whose decoder attends to the encoder with
`AttentionWrapper` and `AttentionRNN`, train it with `model.fit`, decode
new inputs greedily with `keras_attention.greedy_decode` and draw the
attention of one of them with `keras_attention.plot_attention`.

The task is to write a string of letters backwards (`"abcd"` -> `"dcba"`):
the output's first letter is the input's last one, so the attention of a
trained model is the anti-diagonal.

    python examples/quickstart.py                 # about a minute on 2 CPU cores
    python examples/quickstart.py --tiny          # seconds, a smoke run

It writes `attention.png` and `summary.json` (losses, exact match and a
few decoded strings) into `--out` (default `runs/quickstart`). Plotting
needs matplotlib: `pip install "keras-seq2seq-attention[viz]"`.
"""

import argparse
import json
import pathlib

import keras
import numpy as np
from keras import ops

import keras_attention

# Token ids: 0 pads, 1 starts and 2 ends a target; letters follow.
PAD, START, END = 0, 1, 2
LETTERS = "abcdefghij"
VOCAB = 3 + len(LETTERS)


def encode(text):
    return [3 + LETTERS.index(char) for char in text]


def decode_ids(ids):
    return "".join(LETTERS[i - 3] for i in ids if i >= 3)


def make_data(num_examples, max_length, seed):
    """Random strings and their reversals as padded id arrays."""
    rng = np.random.default_rng(seed)
    texts = [
        "".join(rng.choice(list(LETTERS), rng.integers(3, max_length + 1)))
        for _ in range(num_examples)
    ]
    width = max_length + 1
    source = np.zeros((num_examples, max_length), "int32")
    target_in = np.zeros((num_examples, width), "int32")
    target_out = np.zeros((num_examples, width), "int32")
    for row, text in enumerate(texts):
        ids, reversed_ids = encode(text), encode(text[::-1])
        source[row, : len(ids)] = ids
        target_in[row, : len(ids) + 1] = [START] + reversed_ids
        target_out[row, : len(ids) + 1] = reversed_ids + [END]
    return texts, source, target_in, target_out


def build_model(units, embedding_dim):
    """The training model and the layers that decoding reuses."""
    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    # Encoder: the padding mask of `mask_zero` reaches the attention.
    x = keras.layers.Embedding(VOCAB, embedding_dim, mask_zero=True)(source)
    memory, h, c = keras.layers.LSTM(
        units, return_sequences=True, return_state=True
    )(x)
    # Decoder: an LSTM cell with Luong ("general") attention and input
    # feeding, run over the whole target by AttentionRNN.
    target_embedding = keras.layers.Embedding(
        VOCAB, embedding_dim, mask_zero=True
    )
    decoder = keras_attention.AttentionRNN(
        keras_attention.AttentionWrapper(
            keras.layers.LSTMCell(units),
            keras_attention.MultiplicativeAttention(),
            attention_layer_size=units,
        )
    )
    outputs, _ = decoder(
        target_embedding(target_in), memory, initial_state=[h, c]
    )
    output_dense = keras.layers.Dense(VOCAB)
    model = keras.Model([source, target_in], output_dense(outputs))
    encoder = keras.Model(source, [memory, h, c])
    return model, encoder, target_embedding, decoder.wrapper, output_dense


def greedy(encoder, target_embedding, wrapper, output_dense, source):
    """Greedy decoding, one step of the trained decoder at a time."""
    memory, h, c = encoder(source)
    state = wrapper.get_initial_state(
        memory, ops.not_equal(source, PAD), cell_state=[h, c]
    )

    def step_fn(tokens, state):
        output, state, weights = wrapper.step(target_embedding(tokens), state)
        return ops.log_softmax(output_dense(output), axis=-1), state, weights

    return keras_attention.greedy_decode(
        step_fn, START, state, END, max_length=source.shape[1] + 1
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/quickstart")
    parser.add_argument("--tiny", action="store_true",
                        help="tiny data and model: a smoke run in seconds")
    parser.add_argument("--examples", type=int, default=8000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.tiny:
        args.examples, args.epochs, args.units = 256, 3, 16
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(args.seed)

    max_length = 5 if args.tiny else 8
    _, source, target_in, target_out = make_data(
        args.examples, max_length, args.seed
    )
    model, encoder, target_embedding, wrapper, output_dense = build_model(
        args.units, embedding_dim=max(8, args.units // 2)
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(
        [source, target_in], target_out, batch_size=64, epochs=args.epochs,
        verbose=0 if args.tiny else 2,
    )

    # Decode strings the model has not seen.
    texts, test_source, _, _ = make_data(64, max_length, args.seed + 1)
    result = greedy(encoder, target_embedding, wrapper, output_dense,
                    test_source)
    tokens = ops.convert_to_numpy(result["tokens"])
    lengths = ops.convert_to_numpy(result["lengths"])
    outputs = [decode_ids(row[: n - 1]) for row, n in zip(tokens, lengths)]
    exact = float(np.mean([o == t[::-1] for o, t in zip(outputs, texts)]))
    for text, output in list(zip(texts, outputs))[:5]:
        print(f"{text:>10} -> {output}")
    print(f"exact match on 64 new strings: {exact:.1%}")

    # The attention of the first string: rows are output letters (and the
    # end token), columns the input letters.
    attention = ops.convert_to_numpy(result["attention"])[0]
    keras_attention.plot_attention(
        attention[: lengths[0], : len(texts[0])],
        list(texts[0]), list(outputs[0]) + ["[END]"],
        title="reversal", path=out / "attention.png",
    )
    summary = {
        "loss": [float(v) for v in history.history["loss"]],
        "exact_match": exact,
        "decoded": dict(zip(texts[:5], outputs[:5])),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"wrote {out / 'attention.png'} and {out / 'summary.json'}")
    return summary


if __name__ == "__main__":
    main()
