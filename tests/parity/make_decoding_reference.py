"""Writes decoding_reference.npz: TFA 0.23's beam search and greedy
decoding of the hand-set model of decoding_model.py.

Run with the TFA environment (Python 3.11, tensorflow-cpu 2.15.1,
tensorflow-addons 0.23.0), from the repository root:

    make .venv-tfa/.installed   # the TFA environment (see the Makefile)
    .venv-tfa/bin/python tests/parity/make_decoding_reference.py

The model is a cell whose state is TFA's `AttentionWrapperState` (so that
`coverage_penalty_weight` finds the alignments); its output is the logits
row of (sentence, previous token, step). `BeamSearchDecoder` (with
`length_penalty_weight`, `coverage_penalty_weight`, `tile_batch` on the
initial state) and `BasicDecoder` + `GreedyEmbeddingSampler` decode it.
"""

import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoding_model as m  # noqa: E402

LOGITS, ATTENTION = m.tables()


class TableCell(tf.keras.layers.AbstractRNNCell):
    """inputs: one-hot previous token; state: AttentionWrapperState."""

    @property
    def state_size(self):
        return tfa.seq2seq.AttentionWrapperState(
            cell_state=(1, 1), attention=1, alignments=m.SOURCE,
            alignment_history=(), attention_state=m.SOURCE,
        )

    @property
    def output_size(self):
        return m.VOCAB

    def call(self, inputs, state):
        # Float state (TFA takes the dtype of its scores from the first
        # state tensor), integer values.
        sentence, step = state.cell_state
        sentence_ids = tf.cast(sentence[:, 0], tf.int32)
        steps = tf.cast(step[:, 0], tf.int32)
        previous = tf.argmax(inputs, axis=-1, output_type=tf.int32)
        index = tf.stack(
            [sentence_ids, previous, tf.minimum(steps, m.STEPS - 1)],
            axis=1,
        )
        logits = tf.gather_nd(LOGITS, index)
        alignments = tf.gather_nd(ATTENTION, index)
        new_state = state._replace(
            cell_state=(sentence, step + 1), alignments=alignments,
            attention_state=alignments,
        )
        return logits, new_state


def initial_state(rows):
    sentence = tf.constant(np.arange(rows)[:, None], tf.float32)
    zeros = tf.zeros((rows, m.SOURCE))
    return tfa.seq2seq.AttentionWrapperState(
        cell_state=(sentence, tf.zeros((rows, 1))),
        attention=tf.zeros((rows, 1)), alignments=zeros,
        alignment_history=(), attention_state=zeros,
    )


def beam(alpha, beta, width):
    decoder = tfa.seq2seq.BeamSearchDecoder(
        TableCell(), beam_width=width, length_penalty_weight=alpha,
        coverage_penalty_weight=beta, maximum_iterations=m.MAX_LENGTH,
    )
    outputs, state, lengths = decoder(
        tf.eye(m.VOCAB),
        start_tokens=tf.fill([m.BATCH], m.START),
        end_token=m.END,
        initial_state=tfa.seq2seq.tile_batch(initial_state(m.BATCH), width),
    )
    scores = outputs.beam_search_decoder_output.scores[:, -1]  # (B, K)
    tokens = tf.transpose(outputs.predicted_ids, [0, 2, 1])  # (B, K, T)
    return {
        "tokens": tokens.numpy(),
        "lengths": lengths.numpy(),
        "scores": scores.numpy(),
        "log_probs": state.log_probs.numpy(),
    }


def greedy():
    sampler = tfa.seq2seq.GreedyEmbeddingSampler()
    decoder = tfa.seq2seq.BasicDecoder(
        TableCell(), sampler, maximum_iterations=m.MAX_LENGTH
    )
    outputs, _, lengths = decoder(
        tf.eye(m.VOCAB), start_tokens=tf.fill([m.BATCH], m.START),
        end_token=m.END, initial_state=initial_state(m.BATCH),
    )
    ids = outputs.sample_id.numpy()
    log_probs = tf.nn.log_softmax(outputs.rnn_output).numpy()
    picked = np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
    mask = np.arange(ids.shape[1])[None] < lengths.numpy()[:, None]
    return {
        "tokens": ids,
        "lengths": lengths.numpy(),
        "log_probs": (picked * mask).sum(1),
    }


def main():
    arrays = {}
    for i, case in enumerate(m.BEAM_CASES):
        for key, value in beam(*case).items():
            arrays[f"beam{i}_{key}"] = value
    for key, value in greedy().items():
        arrays[f"greedy_{key}"] = value
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "decoding_reference.npz")
    np.savez_compressed(path, **arrays)
    print(f"wrote {path}: tf {tf.__version__}, tfa {tfa.__version__}")
    for key in sorted(arrays):
        if key.endswith("lengths"):
            print(key, arrays[key].tolist())


if __name__ == "__main__":
    main()
