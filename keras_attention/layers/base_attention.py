"""Shared machinery of the attention layers: validation, masking, dropout."""

from typing import Any
from typing import Optional
from typing import Tuple

import keras
from keras import ops

from keras_attention.layers._dropout import AttentionDropout
from keras_attention.layers._shapes import AttentionInputChecks
from keras_attention.layers._shapes import attention_output_shapes
from keras_attention.ops.masking import masked_softmax
from keras_attention.ops.masking import score_mask
from keras_attention.ops.masking import zero_masked_positions
from keras_attention.ops.single_query import weighted_sum
from keras_attention.typing import Shape
from keras_attention.typing import Tensor

__all__ = ["BaseAttention"]


class BaseAttention(
    AttentionInputChecks, AttentionDropout, keras.layers.Layer
):
    """Base class of the attention layers of `keras_attention`.

    It owns everything the scores share: input validation (its checks in
    `AttentionInputChecks`), masks (Keras masks, explicit masks and the
    causal mask), the masked softmax, dropout on the weights (in
    `AttentionDropout`), `compute_mask`, output shapes and `get_config`. A
    subclass implements `build`, `project_key` and `score`.

    The call convention is the same for all layers:

        context, weights = layer(query, value, key=None, query_mask=None,
                                 value_mask=None, training=None,
                                 use_causal_mask=False)

    Masked source positions never influence the result: their values and
    keys are replaced by zeros before any product, so even a NaN or inf
    stored there gives a finite context and finite gradients.

    A memory with no source position (`S == 0`) gives zero weights of
    shape `(batch_size, Tq, 0)` and a zero context, on every backend.
    Step-wise decoding (`AttentionWrapper`, the decoders) calls
    `prepare_memory` once per source sentence and `attend` at every step.
    Layers whose weights depend on the previous step's alignment derive
    from `StatefulAttention`, which adds the alignment state.

    Args:
        dropout: Float between 0 and 1. Fraction of the attention weights to
            drop during training. Defaults to `0.0`.
        seed: Python integer, the seed of the dropout. Defaults to `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: Query tensor of shape `(batch_size, Tq, Dq)` (a sequence of
            decoder states) or `(batch_size, Dq)` (one decoder step).
        value: Value tensor of shape `(batch_size, S, Dv)` (encoder states).
        key: Optional key tensor of shape `(batch_size, S, Dk)`. Defaults to
            `value`.
        query_mask: Optional boolean (or integer 0/1) mask of shape
            `(batch_size, Tq)` (or `(batch_size,)` for a rank-2 query).
            `False` rows get zero weights and a zero context. Filled in from
            the Keras mask of `query` when not given.
        value_mask: Optional boolean (or integer 0/1) mask of shape
            `(batch_size, S)`. `False` source positions get exactly zero
            weight. Filled in from the Keras mask of `value` when not given.
        training: Python boolean, whether dropout is applied.
        use_causal_mask: Python boolean. If `True`, query position `i` only
            attends to source positions `j <= i` (self-attention over a
            decoder sequence). Defaults to `False`.

    Returns:
        A tuple `(context, weights)`: the context of shape
        `(batch_size, Tq, Dv)` (or `(batch_size, Dv)`) in the compute dtype,
        and the attention weights of shape `(batch_size, Tq, S)` (or
        `(batch_size, S)`), the softmax over the source positions.

    Raises:
        ValueError: on wrong ranks, batch sizes, mask shapes, floating
            masks or non-floating inputs.
    """

    def __init__(
        self, dropout: float = 0.0, seed: int | None = None, **kwargs
    ):
        super().__init__(**kwargs)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(
                f"`dropout` must be in [0, 1). Received: dropout={dropout}"
            )
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True
        if dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(seed=seed)

    # To be implemented by the scores.
    def project_key(self, key: Tensor) -> Tensor:
        """Processes the keys once per memory (e.g. `k W1` for additive).

        Step-wise decoders call this once per source sentence (through
        `prepare_memory`) and then `attend` at every step, so the
        projection is not recomputed.
        """
        return key

    def score(self, query: Tensor, projected_key: Tensor) -> Tensor:
        """Unnormalised scores `(batch_size, Tq, S)` of rank-3 queries."""
        raise NotImplementedError

    # ------------------------------------------------------------------
    def build(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> None:
        self._validate_shapes(query_shape, value_shape, key_shape)

    @property
    def score_dtype(self) -> str:
        """The dtype the scores are computed in.

        The compute dtype, except under a float16 policy, where the scores
        of large inputs would overflow (65504) and are computed in float32.
        bfloat16 has float32's range.
        """
        if self.compute_dtype == "float16":
            return "float32"
        return self.compute_dtype

    def _memory(
        self, value: Tensor, key: Optional[Tensor], value_mask: Optional[Tensor]
    ):
        """Values, projected keys and mask, masked positions zeroed."""
        value_mask = self._check_value_mask(value_mask, value)
        value = zero_masked_positions(value, value_mask)
        key = value if key is None else zero_masked_positions(key, value_mask)
        keys = self.project_key(ops.cast(key, self.score_dtype))
        return ops.cast(value, self.compute_dtype), keys, value_mask

    def prepare_memory(
        self,
        value: Tensor,
        key: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
    ) -> dict[str, Any]:
        """What `attend` needs of one memory, computed once per sentence.

        Step-wise decoders call this once per source sentence and then
        `attend(query, memory["memory"], memory["keys"],
        value_mask=memory["memory_mask"])` at every step. Values and keys
        at masked positions are replaced by zeros here, once, so that
        nothing stored there reaches a step's result. An unbuilt layer is
        built here when the keys fix its query size (`DotAttention`,
        `LuongMonotonicAttention`); any other unbuilt layer raises a
        `ValueError`: build it first, `layer.build(query_shape,
        value_shape)`.

        Args:
            value: `(batch_size, S, Dv)` memory (encoder states).
            key: Optional `(batch_size, S, Dk)` keys. Defaults to `value`.
            value_mask: Optional boolean (or integer 0/1)
                `(batch_size, S)`, `True` = attend. Defaults to all `True`,
                so the structure is the same with and without a mask.

        Returns:
            A dict with `"memory"` (the values in the compute dtype),
            `"keys"` (`project_key` of the keys in the score dtype) and
            `"memory_mask"` (boolean `(batch_size, S)`). Every tensor has
            the batch size as leading dimension, so decoders can tile or
            gather it.

        Raises:
            ValueError: on a `value_mask` of the wrong shape or a floating
                dtype, or on an unbuilt layer whose query size the keys do
                not fix.
        """
        self._build_for_memory(value, key)
        memory, keys, value_mask = self._memory(value, key, value_mask)
        if value_mask is None:
            dims = ops.shape(value)
            value_mask = ops.ones((dims[0], dims[1]), dtype="bool")
        return {"memory": memory, "keys": keys, "memory_mask": value_mask}

    def _build_for_memory(self, value: Tensor, key: Optional[Tensor]):
        """Builds an unbuilt layer whose query size the keys determine."""
        if self.built:
            return
        key_shape = tuple((value if key is None else key).shape)
        query_size = self.query_size_from_key_size(key_shape[-1])
        if query_size is None:
            raise ValueError(
                f"{self.__class__.__name__} is not built, and its weights "
                "depend on the query size, which the memory does not give: "
                "call `layer.build(query_shape, value_shape)` (or the layer "
                "on a first query) before `prepare_memory`. Received: an "
                f"unbuilt layer and key.shape={key_shape}"
            )
        self.build((key_shape[0], query_size), tuple(value.shape), key_shape)

    def query_size_from_key_size(self, key_size: int) -> Optional[int]:
        """The query size keys of `key_size` fix, or `None` (any size)."""
        return None

    # ------------------------------------------------------------------
    def call(
        self,
        query: Tensor,
        value: Tensor,
        key: Optional[Tensor] = None,
        query_mask: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
        training: bool | None = None,
        use_causal_mask: bool = False,
    ) -> Tuple[Tensor, Tensor]:
        self._validate_tensors(query, value, key)
        value, keys, value_mask = self._memory(value, key, value_mask)
        return self.attend(
            query,
            value,
            keys,
            query_mask=query_mask,
            value_mask=value_mask,
            training=training,
            use_causal_mask=use_causal_mask,
        )

    def attend(
        self,
        query: Tensor,
        value: Tensor,
        projected_key: Tensor,
        query_mask: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
        training: bool | None = None,
        use_causal_mask: bool = False,
        dropout_mask: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Tensor]:
        """Attention with keys already processed by `project_key`.

        This is the step-wise entry point: call `prepare_memory` once per
        memory, then `attend` at every decoder step. Arguments and returns
        are as in `call`, with `projected_key` in place of `key`. Values and
        keys at masked positions are used as given: `call` and
        `prepare_memory` replace them by zeros.

        Args:
            dropout_mask: Optional boolean keep mask of the weights' shape
                for `attention_dropout`, e.g. drawn for all steps before a
                loop with `draw_dropout_mask(shape)`. Defaults to a mask drawn
                here, in training.
        """
        query_mask, value_mask = self._check_step_masks(
            query, value, query_mask, value_mask
        )
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        score_dtype = self.score_dtype
        scores = self.score(
            ops.cast(query, score_dtype), ops.cast(projected_key, score_dtype)
        )
        weights = masked_softmax(
            scores, score_mask(scores, value_mask, use_causal_mask)
        )
        if single_step:
            weights = ops.squeeze(weights, 1)
        return self._context(
            weights, value, query_mask, training, dropout_mask
        )

    def _context(
        self,
        weights: Tensor,
        value: Tensor,
        query_mask: Optional[Tensor],
        training: Optional[bool],
        dropout_mask: Optional[Tensor],
    ) -> Tuple[Tensor, Tensor]:
        """`(context, weights)` from the weights of `attend`.

        Rows of masked queries get zero weights, hence a zero context; the
        dropout acts on the weights of the context only.
        """
        if query_mask is not None:
            weights = ops.where(ops.expand_dims(query_mask, -1), weights, 0.0)
        weights = ops.cast(weights, self.compute_dtype)
        attended = self.attention_dropout(weights, training, dropout_mask)
        value = ops.cast(value, self.compute_dtype)
        if len(weights.shape) == 2:
            context = weighted_sum(attended, value)
        else:
            context = ops.matmul(attended, value)
        return context, weights

    # ------------------------------------------------------------------
    @property
    def stateful(self) -> bool:
        """Whether the layer carries an alignment state from step to step.

        `False` here; `True` for the `StatefulAttention` layers.
        """
        return False

    def compute_mask(
        self, query: Tensor, previous_mask: Optional[Tensor] = None
    ) -> Optional[list]:
        # `previous_mask` is the mask of `query`: it is the mask of the
        # context; the weights carry no mask.
        if previous_mask is None:
            return None
        return [previous_mask, None]

    def compute_output_shape(
        self,
        query_shape: Shape,
        value_shape: Shape,
        key_shape: Optional[Shape] = None,
    ) -> Tuple[Shape, Shape]:
        return attention_output_shapes(
            *self._validate_shapes(query_shape, value_shape, key_shape)
        )

    def compute_output_spec(
        self,
        query: Tensor,
        value: Tensor,
        key: Optional[Tensor] = None,
        query_mask: Optional[Tensor] = None,
        value_mask: Optional[Tensor] = None,
        training: Optional[bool] = None,
        use_causal_mask: bool = False,
    ) -> tuple:
        self._validate_tensors(query, value, key)
        context_shape, weights_shape = self.compute_output_shape(
            query.shape, value.shape, None if key is None else key.shape
        )
        return (
            keras.KerasTensor(context_shape, dtype=self.compute_dtype),
            keras.KerasTensor(weights_shape, dtype=self.compute_dtype),
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"dropout": self.dropout, "seed": self.seed})
        return config
