"""The forward pass of `Seq2Seq` over its layers.

The encoder (`_encode`: the memory, the final states that bridge to the
decoder, the source embeddings), the attended source positions
(`memory_mask`), and the teacher-forced decoder with the alignment head
(`_teacher_forced`: the outputs of the functional model). `ForwardPass` is
a mixin of `Seq2Seq`, not a model of its own; the decoding methods of
`generation.py` reuse its encoder and memory.
"""

from typing import Any
from typing import Optional

from keras import ops

from keras_attention.seq2seq import layers as layers_lib
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.typing import Tensor


class ForwardPass:
    """The forward pass with the layers of a `Seq2Seq` (mixin)."""

    def _encode(self, source_ids: Tensor, training: Optional[bool] = None):
        """`(memory, final states, source embeddings)`."""
        x = self.source_embedding(source_ids)
        x = self.dropout_layer(x, training=training)
        embedded = x
        states = None
        for i, rnn in enumerate(self.encoder_rnns):
            out = rnn(x, training=training)
            x, states = out[0], list(out[1:])
            if i < len(self.encoder_rnns) - 1:
                x = self.dropout_layer(x, training=training)
        if self.bidirectional:
            n = len(states) // 2
            states = [
                ops.concatenate([f, b], axis=-1)
                for f, b in zip(states[:n], states[n:])
            ]
        return x, states, embedded

    def _cell_state(self, states: Tensor):
        if states is None:
            return None
        if self.decoder_layers == 1:
            return list(states)
        return [list(states) for _ in range(self.decoder_layers)]

    def _keys_values(self, memory: Tensor, embedded: Any):
        keys = embedded if self.attention_keys == "embedding" else memory
        values = embedded if self.attention_values == "embedding" else memory
        return keys, values

    def memory_mask(self, source_ids: Tensor) -> Tensor:
        """The attended source positions `(batch, S)` bool: not padding,
        not `[END]` unless `attend_source_end`, none of
        `unattended_source_ids`."""
        mask = ops.not_equal(source_ids, 0)
        if not self.attend_source_end:
            mask = ops.logical_and(mask, ops.not_equal(source_ids, END_ID))
        if self.unattended_source_ids:
            ids = ops.convert_to_tensor(
                list(self.unattended_source_ids), source_ids.dtype
            )
            hit = ops.any(
                ops.equal(ops.expand_dims(source_ids, -1), ids), axis=-1
            )
            mask = ops.logical_and(mask, ops.logical_not(hit))
        return mask

    def _decode(
        self,
        target_in: Tensor,
        memory: Tensor,
        source_mask: Tensor,
        states: Tensor,
        keys: Tensor,
        values: Tensor,
    ):
        drop = self.dropout_layer
        y = drop(self.target_embedding(target_in))
        if self.model == "stepwise":
            outputs, weights = self.decoder_rnn(
                y,
                memory,
                initial_state=self._cell_state(states),
                inputs_mask=ops.not_equal(target_in, 0),
                memory_mask=source_mask,
            )
            outputs = drop(outputs)
            return self._logits(outputs), weights, outputs
        for i, rnn in enumerate(self.decoder_rnns):
            y = rnn(y, initial_state=states)[0]
            if i < len(self.decoder_rnns) - 1:
                y = drop(y)
        context, weights = self.attention(
            y, values, key=keys, value_mask=source_mask
        )
        h_tilde = drop(self.attentional_output(context, y))
        return self._logits(h_tilde), weights, y

    def _logits(self, hidden: Tensor) -> Tensor:
        """The vocabulary projection of `hidden`, as float32 logits
        (`Seq2Seq`'s `projection_dtype` may compute it in bfloat16)."""
        return ops.cast(self.output_projection(hidden), "float32")

    def _teacher_forced(self, source_ids: Tensor, target_in: Tensor):
        memory, states, embedded = self._encode(source_ids)
        source_mask = self.memory_mask(source_ids)
        keys, values = self._keys_values(memory, embedded)
        bridge = None
        if self.bridge:
            bridge = states
            if self.bridge_dropout_layer is not None:
                bridge = self.bridge_dropout_layer(states)
        logits, weights, decoded = self._decode(
            target_in, memory, source_mask, bridge, keys, values
        )
        # The losses mask padding themselves: no Keras mask on outputs.
        drop_mask = layers_lib.DropMask
        outputs = {
            "logits": drop_mask(name="drop_mask")(logits),
            "attention": drop_mask(name="drop_mask_weights")(weights),
        }
        aligned = weights
        if self.alignment_head != "off":
            aligned, nll = layers_lib.head_outputs(
                self.head_layers,
                self.alignment_head,
                layers_lib.next_tokens(target_in, END_ID),
                decoded,
                keys,
                embedded,
                source_mask,
                lambda ids: self.dropout_layer(self.target_embedding(ids)),
            )
            if nll is not None:
                outputs["lexical"] = nll
        outputs["alignment"] = drop_mask(name="drop_mask_alignment")(aligned)
        return outputs
