"""The decoding methods of `Seq2Seq`: `encode`, `step`, `generate`, `align`.

`encode` and `step` are the step protocol of `keras_attention.decoding`
(`step_fn(tokens, state) -> (log_probs, new_state, attention)`): they run
the trained layers one target token at a time, so every decoder of
`keras_attention.decoding` (greedy, beam, n-best, sampling, ensembles)
drives the model, eagerly, in a `tf.function` or a SavedModel, on every
backend. `Generation` is a mixin of `Seq2Seq`, not a model of its own.
"""

from typing import Any
from keras_attention.typing import Tensor

from keras import ops

from keras_attention import decoding
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.seq2seq.tokens import START_ID


class Generation:
    """Decoding with the layers of a `Seq2Seq` (mixin)."""

    def encode(self, source_ids: Tensor) -> dict:
        """The initial decoding state of source ids `(batch, S)`: a dict
        with `memory`, `keys` (the attention's projected memory) and
        `memory_mask`, and the decoder RNN states."""
        memory, states, embedded = self._encode(source_ids, training=False)
        memory = ops.copy(memory)
        source_mask = self.memory_mask(source_ids)
        if not self.bridge:
            states = [ops.zeros_like(s) for s in states]
        if self.model == "stepwise":
            return self.wrapper.get_initial_state(
                memory,
                memory_mask=source_mask,
                cell_state=self._cell_state(states),
            )
        key, value = self._keys_values(memory, embedded)
        state = self.attention.prepare_memory(
            value, key=key, value_mask=source_mask
        )
        state["rnn"] = [list(states) for _ in self.decoder_rnns]
        return state

    def step(self, tokens: Tensor, state: Any) -> tuple:
        """One decoder step: `(log_probs, new_state, attention)`.

        Args:
            tokens: int `(batch,)`, the previous target tokens.
            state: The dict of `encode` (or of the previous step).
        """
        # The lookup without the layer call: a step has no padding to mask.
        y = ops.cast(
            ops.take(self.target_embedding.embeddings, tokens, axis=0),
            self.target_embedding.compute_dtype,
        )
        if self.model == "stepwise":
            output, new_state, weights = self.wrapper.step(
                y, state, training=False
            )
        else:
            new_rnn = []
            for rnn, layer_state in zip(self.decoder_rnns, state["rnn"]):
                y, layer_new = rnn.cell(y, list(layer_state), training=False)
                new_rnn.append(list(layer_new))
            context, weights = self.attention.attend(
                y,
                state["memory"],
                state["keys"],
                value_mask=state["memory_mask"],
            )
            output = self.attentional_output(context, y)
            new_state = dict(state)
            new_state["rnn"] = new_rnn
        logits = ops.cast(self.output_projection(output), "float32")
        return (
            ops.log_softmax(logits, axis=-1),
            new_state,
            ops.cast(weights, "float32"),
        )

    def generate(
        self,
        source_ids: Tensor,
        max_length: int = 64,
        strategy: Any = "greedy",
        **options: Any,
    ) -> dict:
        """Decodes source ids `(batch, S)` with `keras_attention.decoding`.

        Args:
            source_ids: int `(batch, S)`, 0 = padding.
            max_length: Longest output in tokens. Defaults to `64`.
            strategy: `"greedy"`, `"beam"` (`beam_search_decode`),
                `"nbest"` (`beam_search_nbest`, give `n_best`) or
                `"sample"` (`sample_decode`). Defaults to `"greedy"`.
            **options: More arguments of that decoder (`beam_width`,
                `temperature`, `seed`, ...).

        Returns:
            The decoder's dict (`tokens`, `lengths`, `scores`, ...).
        """
        decoders = {
            "greedy": decoding.greedy_decode,
            "beam": decoding.beam_search_decode,
            "nbest": decoding.beam_search_nbest,
            "sample": decoding.sample_decode,
        }
        if strategy not in decoders:
            raise ValueError(
                f"`strategy` must be one of {sorted(decoders)}. Received: "
                f"strategy={strategy!r}"
            )
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        start = ops.full((ops.shape(source_ids)[0],), START_ID, "int32")
        return decoders[strategy](
            self.step,
            start,
            self.encode(source_ids),
            END_ID,
            max_length,
            **options,
        )

    def align(self, source_ids: Tensor, target_in: Tensor) -> Tensor:
        """The `(batch, T, S)` weights word alignment reads (the alignment
        head's, or the attention's), teacher-forced."""
        return self(
            {"source_ids": source_ids, "target_in": target_in},
            training=False,
        )["alignment"]
