"""The decoding methods of `Seq2Seq`: `encode`, `step`, `generate`, `align`.

`encode` and `step` are the step protocol of `keras_attention.decoding`
(`step_fn(tokens, state) -> (log_probs, new_state, attention)`): they run
the trained layers one target token at a time, so every decoder of
`keras_attention.decoding` (greedy, beam, n-best, sampling, ensembles)
drives the model, eagerly, in a `tf.function` or a SavedModel, on every
backend. `generate` compiles the encoder and the decoding loop once per
strategy and options (`CompiledGenerate`), as KerasHub's
`make_generate_function` does. `Generation` is a mixin of `Seq2Seq`, not a
model of its own.
"""

from typing import Any
from typing import Callable
from typing import Optional
from keras_attention.typing import Tensor

import keras
from keras import ops

from keras_attention import decoding
from keras_attention.checks import check_bool
from keras_attention.checks import check_ids
from keras_attention.checks import check_int
from keras_attention.checks import check_same_batch
from keras_attention.checks import shape_str
from keras_attention.decoding.state import gather
from keras_attention.seq2seq.compiled import MAX_COMPILED
from keras_attention.seq2seq.compiled import CompiledGenerate
from keras_attention.seq2seq.compiled import is_traced
from keras_attention.seq2seq.compiled import static_key
from keras_attention.seq2seq.tokens import END_ID
from keras_attention.seq2seq.tokens import PAD_ID
from keras_attention.seq2seq.tokens import START_ID
from keras_attention.seq2seq.tokens import UNK_ID

# The tokens no generated hypothesis holds before its end (`generate`'s
# default `forbidden_tokens`): padding and `[START]` are never targets.
FORBIDDEN_TOKENS = (PAD_ID, START_ID)
# `(max_length_scale, max_length_margin)` of the exported SavedModel and of
# `Translator`: a sentence of S source tokens decodes at most `2 S + 10`.
SOURCE_LENGTH_LIMIT = (2, 10)
_DECODERS = {
    "greedy": decoding.greedy_decode,
    "beam": decoding.beam_search_decode,
    "nbest": decoding.beam_search_nbest,
    "sample": decoding.sample_decode,
}


def _decoder(strategy: Any) -> Callable[..., dict]:
    if strategy not in _DECODERS:
        raise ValueError(
            f"`strategy` must be one of {sorted(_DECODERS)}. Received: "
            f"strategy={strategy!r}"
        )
    return _DECODERS[strategy]


def in_vocabulary(ids: Tensor, vocab_size: int) -> Tensor:
    """`ids` with every id outside `[0, vocab_size)` read as `[UNK]`: what
    a traced function does with ids that could not be checked."""
    inside = ops.logical_and(
        ops.greater_equal(ids, 0), ops.less(ids, vocab_size)
    )
    return ops.where(inside, ids, UNK_ID)


class Generation:
    """Decoding with the layers of a `Seq2Seq` (mixin)."""

    def _check_source(self, owner: str, source_ids: Any) -> Tensor:
        """`source_ids` checked (`generate`'s and `align`'s `Raises:`) as
        int32 `(batch, S)`."""
        source_ids = check_ids(
            "source_ids", source_ids, self.source_vocab_size, owner
        )
        batch, length = source_ids.shape
        if length == 0 and batch != 0:
            raise ValueError(
                f"{owner}: `source_ids` must hold at least one token per "
                f"sentence, e.g. [END] (id {END_ID}) for an empty sentence. "
                f"Received: source_ids.shape={shape_str(source_ids.shape)}"
            )
        return source_ids

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
            tokens: int `(batch,)`, the previous target tokens, ids in
                `[0, target_vocab_size)`.
            state: The dict of `encode` (or of the previous step).
        """
        logits, new_state, weights = self.step_logits(tokens, state)
        return ops.log_softmax(logits, axis=-1), new_state, weights

    def step_logits(self, tokens: Tensor, state: Any) -> tuple:
        """`step` before the `log_softmax`: `(logits, new_state,
        attention)`, the logits float32 (for `greedy_decode(...,
        from_logits=True)`, which normalizes only the token it picks)."""
        # The lookup without the layer call: a step has no padding to mask,
        # and its ids are in the vocabulary (no negative-index mapping).
        y = ops.cast(
            gather(self.target_embedding.embeddings, tokens),
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
        return self._logits(output), new_state, ops.cast(weights, "float32")

    # Whether `generate` compiles its decoding function (`compile=None`);
    # set it to `False` on a model (or pass `compile=False`) to decode
    # eagerly, e.g. to step through the decoder in a debugger.
    compile_generate = True

    def generate(
        self,
        source_ids: Tensor,
        max_length: int = 64,
        strategy: Any = "greedy",
        compile: Optional[bool] = None,
        **options: Any,
    ) -> dict:
        """Decodes source ids `(batch, S)` with `keras_attention.decoding`.

        The decoding (the encoder and the whole decoding loop) is compiled
        once per strategy and options, as KerasHub's `generate`: a
        `tf.function` on TensorFlow (one trace for every batch size and
        source length), `jax.jit` on JAX (the model's variables are passed
        at every call, so new weights are used; JAX compiles once per
        input shape), and `torch.no_grad()` on PyTorch (no compilation).
        Options that are not Python values (a tensor `max_length` or
        `prefix`, ...) and calls inside a traced function decode eagerly,
        as does `compile=False` (or `model.compile_generate = False`).
        Invalid options raise the same `ValueError`s either way.

        With `strategy="sample"` and no `seed`, the compiled decoder draws
        from a generator of the model, seeded from Python's `random` (so by
        `keras.utils.set_random_seed`): every call draws new samples. An
        int `seed` gives the eager decoder's samples.

        Source ids are checked eagerly wherever their values are known
        (see `Raises:`). Inside a traced function (a `tf.function`, a JAX
        trace), where they are not, an id outside the source vocabulary is
        read as `[UNK]` (id 1), and an empty source (`S = 0`) is not
        checked. No hypothesis holds `[PAD]` or `[START]` before its end
        (the default `forbidden_tokens`, `FORBIDDEN_TOKENS`). An empty
        batch, `(0, S)`, gives outputs of batch size 0 (and `L` columns
        of the decoder's, with no decoding step of the model).

        Args:
            source_ids: int `(batch, S)`, 0 = padding, `S >= 1`: an empty
                sentence is `[END]` alone.
            max_length: Longest output in tokens. Defaults to `64`.
            strategy: `"greedy"`, `"beam"` (`beam_search_decode`),
                `"nbest"` (`beam_search_nbest`, give `n_best`) or
                `"sample"` (`sample_decode`). Defaults to `"greedy"`.
            compile: Whether to decode with the compiled function. Defaults
                to `None`: the model's `compile_generate` (`True`).
            **options: More arguments of that decoder (`beam_width`,
                `temperature`, `seed`, `forbidden_tokens` (a tuple of ints;
                defaults to `FORBIDDEN_TOKENS`), ...), and
                `max_length_scale`, `max_length_margin` (ints): each
                sentence then decodes at most `min(max_length,
                max_length_scale * source_tokens + max_length_margin)`
                tokens (`SOURCE_LENGTH_LIMIT` is the exported SavedModel's
                and `Translator`'s).

        Returns:
            The decoder's dict (`tokens`, `lengths`, `scores`, ...). On JAX
            the compiled outputs keep `L = max_length` columns (shapes are
            static under `jax.jit`): the eager outputs, padded with the
            end token and zero attention.

        Raises:
            ValueError: for `source_ids` that are not integers, not of rank
                2, with an id outside `[0, source_vocab_size)` (values
                known) or no token at all (`(batch, 0)`, batch known and
                not 0); for an unknown `strategy` and the decoder's invalid
                options. The message names the argument, the expected and
                the received value.
        """
        decoder = _decoder(strategy)
        if compile is None:
            compile = self.compile_generate
        compile = check_bool("compile", compile)
        source_ids = self._check_source("Seq2Seq.generate", source_ids)
        if source_ids.shape[0] == 0:
            compile = False  # Nothing to compile: no step of the model.
        if compile and not is_traced(source_ids):
            function = self.make_generate_function(
                max_length, strategy, **options
            )
            if function is not None and function.fits(
                source_ids, max_length, options
            ):
                return function(source_ids)
        return self._decode_ids(source_ids, decoder, max_length, options)

    def make_generate_function(
        self, max_length: int = 64, strategy: Any = "greedy", **options: Any
    ) -> Optional["CompiledGenerate"]:
        """The compiled decoding function of `generate` for these options.

        Built on the first request and kept on the model (the last
        `MAX_COMPILED` option sets); the same options give the same
        function back. `None` where an option is not a Python value
        (`generate` then decodes eagerly).

        Returns:
            A `CompiledGenerate`, `function(source_ids) -> dict`.
        """
        decoder = _decoder(strategy)
        key = static_key(strategy, max_length, options)
        if key is None:
            return None
        cache = vars(self).get("_generate_functions")
        if cache is None:
            cache = {}
            # Not tracked: neither a weight nor part of a saved model.
            object.__setattr__(self, "_generate_functions", cache)
        function = cache.get(key)
        if function is not None and function.is_current():
            return function
        options = dict(options)
        generator = None
        if strategy == "sample" and keras.backend.backend() != "torch":
            generator = options.get("seed")
            if generator is None:
                generator = self._generate_seed_generator()
                options["seed"] = generator
            elif not isinstance(generator, keras.random.SeedGenerator):
                generator = None

        def decode(source_ids: Tensor) -> dict:
            return self._decode_ids(source_ids, decoder, max_length, options)

        function = CompiledGenerate(self, decode, generator)
        cache.pop(key, None)
        while len(cache) >= MAX_COMPILED:
            cache.pop(next(iter(cache)))
        cache[key] = function
        return function

    def _generate_seed_generator(self) -> Any:
        """The random state of compiled sampling without a `seed` (made
        eagerly on first use, untracked: not a weight of the model)."""
        generator = vars(self).get("_generate_seeds")
        if generator is None:
            generator = keras.random.SeedGenerator(name="generate_seeds")
            object.__setattr__(self, "_generate_seeds", generator)
        return generator

    def _decode_ids(
        self, source_ids: Tensor, decoder: Any, max_length: Any, options: dict
    ) -> dict:
        options = dict(options)
        options.setdefault("forbidden_tokens", FORBIDDEN_TOKENS)
        scale = options.pop("max_length_scale", None)
        margin = options.pop("max_length_margin", None)
        if scale is not None or margin is not None:
            scale = check_int("max_length_scale", scale or 0, low=0)
            margin = check_int("max_length_margin", margin or 0, low=1)
            # Each row's own limit, from its source tokens (padding is 0).
            tokens = ops.sum(
                ops.cast(ops.not_equal(source_ids, 0), "int32"), axis=1
            )
            if isinstance(max_length, int) and not isinstance(max_length, bool):
                # The output width stays `max_length` (static under jax.jit).
                options.setdefault("static_max_length", max_length)
            max_length = ops.minimum(scale * tokens + margin, max_length)
        batch = ops.shape(source_ids)[0]
        start = ops.full((batch,), START_ID, "int32")
        if isinstance(batch, int) and batch == 0:
            # The RNNs cannot run on zero rows: the decoder runs (and
            # checks its options) over a step of the right shapes.
            step, state = self._empty_step(source_ids)
        else:
            source_ids = in_vocabulary(source_ids, self.source_vocab_size)
            step, state = self.step, self.encode(source_ids)
            if decoder is decoding.greedy_decode and "from_logits" not in options:
                # Greedy decoding normalizes only the token it picks.
                step, options["from_logits"] = self.step_logits, True
        return decoder(step, start, state, END_ID, max_length, **options)

    def _empty_step(self, source_ids: Tensor) -> tuple:
        """`(step_fn, state)` of a batch of zero sentences."""
        length = ops.shape(source_ids)[1]
        vocab_size = self.target_vocab_size

        def step(tokens: Tensor, state: Any) -> tuple:
            rows = ops.shape(tokens)[0]
            return (
                ops.zeros((rows, vocab_size), "float32"),
                state,
                ops.zeros((rows, length), "float32"),
            )

        return step, {"source_ids": source_ids}

    def align(self, source_ids: Tensor, target_in: Tensor) -> Tensor:
        """The `(batch, T, S)` weights word alignment reads (the alignment
        head's, or the attention's), teacher-forced.

        The ids are checked as `generate`'s `source_ids` (`target_in`
        against the target vocabulary, any `T`); inside a traced function
        ids outside a vocabulary are read as `[UNK]`. An empty batch gives
        `(0, T, S)` zeros.

        Raises:
            ValueError: for ids that are not integers of rank 2, an id
                outside its vocabulary (values known), an empty source
                (`(batch, 0)`, batch not 0), or `source_ids` and
                `target_in` of different batch sizes.
        """
        owner = "Seq2Seq.align"
        target_in = check_ids(
            "target_in", target_in, self.target_vocab_size, owner,
            layout="(batch_size, T)",
        )
        source_ids = check_ids(
            "source_ids", source_ids, self.source_vocab_size, owner
        )
        check_same_batch(
            owner, source_ids=source_ids.shape, target_in=target_in.shape
        )
        source_ids = self._check_source(owner, source_ids)
        if source_ids.shape[0] == 0:
            return ops.zeros(
                (0, ops.shape(target_in)[1], ops.shape(source_ids)[1]),
                "float32",
            )
        return self(
            {
                "source_ids": in_vocabulary(
                    source_ids, self.source_vocab_size
                ),
                "target_in": in_vocabulary(
                    target_in, self.target_vocab_size
                ),
            },
            training=False,
        )["alignment"]
