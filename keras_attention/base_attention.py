"""Shared machinery of the attention layers: validation, masking, softmax."""

import keras
import numpy as np
from keras import ops


def _shape_str(shape):
    """A shape as Python writes a tuple: `(2, None, 4)`, `(3,)`."""
    return str(tuple(None if d is None else int(d) for d in shape))


def _is_floating(dtype):
    return "float" in str(dtype)


def masked_softmax(scores, mask=None):
    """Softmax over the last axis that gives masked positions exactly zero.

    Runs in float32 (or float64 for float64 scores). Masked scores are
    replaced by the dtype's lowest finite value, so `exp(lowest - max)` is
    exactly zero next to any kept score; a row whose positions are all
    masked comes out uniform and is then set to zeros. No `0 * inf` appears
    in either pass: the final `where` sends no gradient to masked
    positions, and the softmax's own gradient is zero where its output is.

    Args:
        scores: `(..., S)` unnormalised scores.
        mask: Optional boolean tensor broadcastable to `scores`, `True` = keep.

    Returns:
        Weights in float32 (float64 for float64 scores), same shape as `scores`.
    """
    if scores.dtype != "float64":
        scores = ops.cast(scores, "float32")
    if mask is None:
        return ops.softmax(scores, axis=-1)
    mask = ops.broadcast_to(mask, ops.shape(scores))
    lowest = float(np.finfo(keras.backend.standardize_dtype(scores.dtype)).min)
    weights = ops.softmax(ops.where(mask, scores, lowest), axis=-1)
    return ops.where(mask, weights, 0.0)


class BaseAttention(keras.layers.Layer):
    """Base class of the attention layers of `keras_attention`.

    It owns everything the scores share: input validation, masks (Keras
    masks, explicit masks and the causal mask), the masked softmax, dropout
    on the weights, `compute_mask`, output shapes and `get_config`. A
    subclass implements `build`, `project_key` and `score`.

    The call convention is the same for all layers:

        context, weights = layer(query, value, key=None, query_mask=None,
                                 value_mask=None, training=None,
                                 use_causal_mask=False)

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
        query_mask: Optional boolean mask of shape `(batch_size, Tq)` (or
            `(batch_size,)` for a rank-2 query). `False` rows get zero
            weights and a zero context. Filled in from the Keras mask of
            `query` when not given.
        value_mask: Optional boolean mask of shape `(batch_size, S)`.
            `False` source positions get exactly zero weight. Filled in from
            the Keras mask of `value` when not given.
        training: Python boolean, whether dropout is applied.
        use_causal_mask: Python boolean. If `True`, query position `i` only
            attends to source positions `j <= i` (self-attention over a
            decoder sequence). Defaults to `False`.

    Returns:
        A tuple `(context, weights)`: the context of shape
        `(batch_size, Tq, Dv)` (or `(batch_size, Dv)`) in the compute dtype,
        and the attention weights of shape `(batch_size, Tq, S)` (or
        `(batch_size, S)`), the softmax over the source positions.
    """

    def __init__(self, dropout=0.0, seed=None, **kwargs):
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

    # ------------------------------------------------------------------
    # To be implemented by the scores.
    def project_key(self, key):
        """Processes the keys once per memory (e.g. `k W1` for additive).

        Step-wise decoders call this once per source sentence and then
        `attend` at every step, so the projection is not recomputed.
        """
        return key

    def score(self, query, projected_key):
        """Unnormalised scores `(batch_size, Tq, S)` of rank-3 queries."""
        raise NotImplementedError

    def _check_feature_sizes(self, query_shape, value_shape, key_shape):
        """Hook for score-specific feature size checks."""

    # ------------------------------------------------------------------
    def _validate_shapes(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if len(query_shape) not in (2, 3):
            raise ValueError(
                f"{self.__class__.__name__}: `query` must have rank 2 "
                "(batch_size, Dq) or rank 3 (batch_size, Tq, Dq). Received: "
                f"query.shape={_shape_str(query_shape)}"
            )
        for name, shape in (("value", value_shape), ("key", key_shape)):
            if len(shape) != 3:
                raise ValueError(
                    f"{self.__class__.__name__}: `{name}` must have rank 3 "
                    f"(batch_size, S, D{name[0]}). Received: "
                    f"{name}.shape={_shape_str(shape)}"
                )
        batches = {
            "query": query_shape[0],
            "value": value_shape[0],
            "key": key_shape[0],
        }
        known = {n: b for n, b in batches.items() if b is not None}
        if len(set(known.values())) > 1:
            received = ", ".join(
                f"{n}.shape={_shape_str(s)}"
                for n, s in (
                    ("query", query_shape),
                    ("value", value_shape),
                    ("key", key_shape),
                )
            )
            raise ValueError(
                f"{self.__class__.__name__}: `query`, `value` and `key` must "
                f"have the same batch size. Received: {received}"
            )
        if (
            value_shape[1] is not None
            and key_shape[1] is not None
            and value_shape[1] != key_shape[1]
        ):
            raise ValueError(
                f"{self.__class__.__name__}: `key` and `value` must have the "
                "same number of source positions S. Received: "
                f"key.shape={_shape_str(key_shape)}, "
                f"value.shape={_shape_str(value_shape)}"
            )
        for name, shape in (
            ("query", query_shape),
            ("value", value_shape),
            ("key", key_shape),
        ):
            if shape[-1] is None:
                raise ValueError(
                    f"{self.__class__.__name__}: the last (feature) dimension "
                    f"of `{name}` must be known. Received: "
                    f"{name}.shape={_shape_str(shape)}"
                )
        self._check_feature_sizes(query_shape, value_shape, key_shape)
        return query_shape, value_shape, key_shape

    def _validate_tensors(self, query, value, key):
        for name, tensor in (("query", query), ("value", value), ("key", key)):
            if tensor is None:
                continue
            dtype = keras.backend.standardize_dtype(tensor.dtype)
            if not _is_floating(dtype):
                raise ValueError(
                    f"{self.__class__.__name__}: `{name}` must be a floating "
                    f"point tensor. Received: {name}.dtype={dtype} with "
                    f"{name}.shape={_shape_str(tensor.shape)}"
                )
        return self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )

    def _validate_mask(self, name, mask, expected_shape):
        if mask is None:
            return None
        mask_shape = tuple(mask.shape)
        ok = len(mask_shape) == len(expected_shape) and all(
            m is None or e is None or m == e
            for m, e in zip(mask_shape, expected_shape)
        )
        if not ok:
            raise ValueError(
                f"{self.__class__.__name__}: `{name}` must have shape "
                f"{_shape_str(expected_shape)}. Received: "
                f"{name}.shape={_shape_str(mask_shape)}"
            )
        return ops.cast(mask, "bool")

    def build(self, query_shape, value_shape, key_shape=None):
        self._validate_shapes(query_shape, value_shape, key_shape)

    @property
    def score_dtype(self):
        """The dtype the scores are computed in.

        The compute dtype, except under a float16 policy, where the scores
        of large inputs would overflow (65504) and are computed in float32.
        bfloat16 has float32's range.
        """
        if self.compute_dtype == "float16":
            return "float32"
        return self.compute_dtype

    def _score_dtype(self):
        return self.score_dtype

    def prepare_memory(self, value, key=None, value_mask=None):
        """What `attend` needs of one memory, computed once per sentence.

        Step-wise decoders call this once per source sentence and then
        `attend(query, memory["memory"], memory["keys"],
        value_mask=memory["memory_mask"])` at every step.

        Args:
            value: `(batch_size, S, Dv)` memory (encoder states).
            key: Optional `(batch_size, S, Dk)` keys. Defaults to `value`.
            value_mask: Optional boolean `(batch_size, S)`, `True` = attend.
                Defaults to all `True`, so the structure is the same with
                and without a mask.

        Returns:
            A dict with `"memory"` (the values in the compute dtype),
            `"keys"` (`project_key` of the keys in the score dtype) and
            `"memory_mask"` (boolean `(batch_size, S)`). Every tensor has the
            batch size as leading dimension, so decoders can tile or gather
            it.
        """
        if key is None:
            key = value
        keys = self.project_key(ops.cast(key, self.score_dtype))
        dims = ops.shape(value)
        if value_mask is None:
            value_mask = ops.ones((dims[0], dims[1]), dtype="bool")
        else:
            value_mask = self._validate_mask(
                "value_mask", value_mask, (value.shape[0], value.shape[1])
            )
        return {
            "memory": ops.cast(value, self.compute_dtype),
            "keys": keys,
            "memory_mask": value_mask,
        }

    # ------------------------------------------------------------------
    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        training=None,
        use_causal_mask=False,
    ):
        self._validate_tensors(query, value, key)
        if key is None:
            key = value
        return self.attend(
            query,
            value,
            self.project_key(ops.cast(key, self._score_dtype())),
            query_mask=query_mask,
            value_mask=value_mask,
            training=training,
            use_causal_mask=use_causal_mask,
        )

    def attend(
        self,
        query,
        value,
        projected_key,
        query_mask=None,
        value_mask=None,
        training=None,
        use_causal_mask=False,
    ):
        """Attention with keys already processed by `project_key`.

        This is the step-wise entry point: call `project_key(key)` once per
        memory, then `attend` at every decoder step. Arguments and returns are
        as in `call`, with `projected_key` in place of `key`.
        """
        single_step = len(query.shape) == 2
        # (batch_size,) for one step, (batch_size, Tq) for a sequence.
        query_mask = self._validate_mask(
            "query_mask", query_mask, tuple(query.shape[:-1])
        )
        value_mask = self._validate_mask(
            "value_mask", value_mask, (value.shape[0], value.shape[1])
        )
        if single_step:
            query = ops.expand_dims(query, 1)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, 1)

        score_dtype = self._score_dtype()
        scores = self.score(
            ops.cast(query, score_dtype), ops.cast(projected_key, score_dtype)
        )
        mask = self._combined_mask(scores, value_mask, use_causal_mask)
        weights = masked_softmax(scores, mask)
        if query_mask is not None:
            # Rows of masked queries: zero weights, hence a zero context.
            weights = ops.where(ops.expand_dims(query_mask, -1), weights, 0.0)
        weights = ops.cast(weights, self.compute_dtype)
        attended = weights
        if training and self.dropout > 0:
            attended = keras.random.dropout(
                weights, self.dropout, seed=self.seed_generator
            )
        context = ops.matmul(attended, ops.cast(value, self.compute_dtype))
        if single_step:
            context = ops.squeeze(context, 1)
            weights = ops.squeeze(weights, 1)
        return context, weights

    def _combined_mask(self, scores, value_mask, use_causal_mask):
        mask = None
        if value_mask is not None:
            mask = ops.expand_dims(value_mask, 1)  # (batch, 1, S)
        if use_causal_mask:
            shape = ops.shape(scores)
            rows = ops.expand_dims(ops.arange(shape[1]), -1)
            cols = ops.expand_dims(ops.arange(shape[2]), 0)
            causal = ops.expand_dims(rows >= cols, 0)  # (1, Tq, S)
            mask = causal if mask is None else ops.logical_and(mask, causal)
        return mask

    def compute_mask(self, query, previous_mask=None):
        # `previous_mask` is the mask of `query`: it is the mask of the
        # context; the weights carry no mask.
        if previous_mask is None:
            return None
        return [previous_mask, None]

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape, value_shape, key_shape = self._validate_shapes(
            query_shape, value_shape, key_shape
        )
        known = [
            s[0] for s in (query_shape, value_shape, key_shape) if s[0] is not None
        ]
        batch = known[0] if known else None
        source = value_shape[1] if value_shape[1] is not None else key_shape[1]
        if len(query_shape) == 2:
            return ((batch, value_shape[-1]), (batch, source))
        return (
            (batch, query_shape[1], value_shape[-1]),
            (batch, query_shape[1], source),
        )

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        training=None,
        use_causal_mask=False,
    ):
        self._validate_tensors(query, value, key)
        context_shape, weights_shape = self.compute_output_shape(
            query.shape, value.shape, None if key is None else key.shape
        )
        return (
            keras.KerasTensor(context_shape, dtype=self.compute_dtype),
            keras.KerasTensor(weights_shape, dtype=self.compute_dtype),
        )

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "seed": self.seed})
        return config
