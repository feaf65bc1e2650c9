"""The decoding loops do per-call work once, before the loop.

Each decoder is traced in a `tf.function` around a step function that is
itself a `tf.function` (one call op in the loop body), so the ops of the
`while` body outside that call are the decoder's own per-step work. Their
number is held below a bound per decoder and option set (a regression
that moves per-call work, a vocabulary mask, an `arange`, an argument
check, back into the body adds ops there), and the ops that only per-call
work makes (`Range`, shape checks and assertions) are absent. No timing:
the counts are those of the traced graph, the same on every machine.
"""

import collections

import numpy as np
import pytest

pytestmark = pytest.mark.tf_only

tf = pytest.importorskip("tensorflow")

import keras_attention as ka  # noqa: E402

BATCH, SOURCE, VOCAB, UNITS = 3, 5, 11, 4
END, START = 2, 1
# The ops per-call work makes and per-step work never needs.
PER_CALL_OPS = {"Range", "Assert", "EnsureShape", "CheckNumerics",
                "Print", "PrintV2"}


def _model():
    rng = np.random.default_rng(0)
    embedding = tf.constant(rng.normal(size=(VOCAB, UNITS)), tf.float32)
    kernel = tf.constant(rng.normal(size=(2 * UNITS, VOCAB)), tf.float32)

    @tf.function(autograph=False)
    def step(tokens, state):
        h = tf.tanh(tf.gather(embedding, tokens) + state["h"])
        scores = tf.einsum("bu,bsu->bs", h, state["memory"])
        weights = tf.nn.softmax(scores)
        context = tf.einsum("bs,bsu->bu", weights, state["memory"])
        logits = tf.concat([h, context], 1) @ kernel
        return (tf.nn.log_softmax(logits),
                {"h": h, "memory": state["memory"]}, weights)

    memory = tf.constant(rng.normal(size=(BATCH, SOURCE, UNITS)), tf.float32)
    state = {"h": tf.zeros((BATCH, UNITS)), "memory": memory}
    return step, state


def _body_ops(decode):
    """Op type -> count in the last `while` body of `decode()`'s graph,
    not counting the ops inside the step's function (its call is one
    `StatefulPartitionedCall`/`PartitionedCall`)."""
    graph = tf.function(decode, autograph=False).get_concrete_function().graph
    functions = {f.signature.name: f
                 for f in graph.as_graph_def().library.function}
    loops = [op for op in graph.get_operations()
             if op.type in ("While", "StatelessWhile")]
    assert len(loops) == 1, [op.type for op in loops]
    body = functions[loops[0].get_attr("body").name]
    return collections.Counter(node.op for node in body.node_def)


def _decoders():
    limit = tf.constant([4, 6, 5])
    prefix = tf.constant([[5, 6], [7, -1], [-1, -1]])
    common = {"end_token": END, "max_length": limit}
    return {
        # name: (decoder, options, most ops of its own per step: the
        # count on 2026-12-03 and a margin of 3 to 4; the decoders before
        # the per-call work left the loop ran 26, 52, 102, 149, 102, 79)
        "greedy": (ka.greedy_decode, {}, 27),
        "greedy, forbidden, prefix": (
            ka.greedy_decode,
            {"forbidden_tokens": (0, START), "prefix": prefix}, 40),
        # From logits: `best_allowed` on the picked token only.
        "greedy, from logits": (
            ka.greedy_decode, {"from_logits": True}, 34),
        # 42 on 2026-12-05: the largest logit and probability read at
        # the forbidden columns (two gathers, two small maxima) instead of
        # two maxima over the vocabulary.
        "greedy, from logits, forbidden, prefix": (
            ka.greedy_decode,
            {"from_logits": True, "forbidden_tokens": (0, START),
             "prefix": prefix}, 45),
        "beam": (ka.beam_search_decode, {"beam_width": 3}, 53),
        "beam, coverage, forbidden, prefix, tfa": (
            ka.beam_search_decode,
            {"beam_width": 3, "coverage_penalty": 0.2, "convention": "tfa",
             "forbidden_tokens": (0,), "prefix": prefix}, 82),
        "nbest": (ka.decoding.beam_search_nbest,
                  {"n_best": 2, "beam_width": 3}, 53),
        "sample": (ka.decoding.sample_decode,
                   {"temperature": 0.7, "top_k": 4, "seed": 1}, 63),
    }, common


@pytest.mark.parametrize("name", list(_decoders()[0]))
def test_loop_body_holds_per_step_work_only(name):
    decoders, common = _decoders()
    decoder, options, bound = decoders[name]
    step, state = _model()

    def decode():
        start = tf.fill([BATCH], START)
        return decoder(step, start, state, **common, **options)["tokens"]

    ops = _body_ops(decode)
    calls = ops["StatefulPartitionedCall"] + ops["PartitionedCall"]
    assert calls == 1, ops  # the step, one function call per step
    own = sum(n for op, n in ops.items()
              if op not in ("Const", "Identity", "NoOp"))
    assert own <= bound, (own, sorted(ops.items()))
    assert not PER_CALL_OPS & set(ops), sorted(ops.items())


def test_the_count_sees_per_call_work_in_the_body():
    """The bound is not vacuous: a step that makes a vocabulary mask at
    every call (`Range`, `Equal`, `SelectV2` over the vocabulary) adds
    those ops to the body."""
    step, state = _model()

    def decode(per_call):
        def masked(tokens, state):
            log_probs, state, weights = step(tokens, state)
            if per_call:
                vocab = tf.range(tf.shape(log_probs)[1])
                log_probs = tf.where(vocab == 0, -1e9, log_probs)
            return log_probs, state, weights

        return lambda: ka.greedy_decode(
            masked, tf.fill([BATCH], START), state, END, 5)["tokens"]

    plain, masked = _body_ops(decode(False)), _body_ops(decode(True))
    assert "Range" in masked and "Range" not in plain
    assert sum(masked.values()) > sum(plain.values())


def test_greedy_from_logits_normalizes_the_picked_token_only():
    """`greedy_decode(from_logits=True)` reads the `(rows, vocab)` scores
    with one `ArgMax` (after the forbidden tokens' mask, one addition) and
    one `Softmax`; the largest logit and probability are read at the
    picked and the forbidden tokens (a `Max` over those few columns each),
    not over the vocabulary. No `LogSoftmax` runs over them, as it would
    in the step (`checked_step`) on the general path."""
    step, state = _model()
    prefix = tf.constant([[5, 6], [7, -1], [-1, -1]])

    def decode(from_logits, forbidden=(0, START)):
        return lambda: ka.greedy_decode(
            step, tf.fill([BATCH], START), state, END, 5,
            forbidden_tokens=forbidden, prefix=prefix,
            from_logits=from_logits)["tokens"]

    fast = _body_ops(decode(True))
    assert "LogSoftmax" not in fast and "TopKV2" not in fast, sorted(
        fast.items())
    assert (fast["ArgMax"], fast["Softmax"], fast["Max"]) == (1, 1, 2), (
        sorted(fast.items()))
    plain = _body_ops(decode(True, forbidden=()))
    assert (plain["ArgMax"], plain["Softmax"]) == (1, 1), sorted(plain.items())
    assert "Max" not in plain, sorted(plain.items())
    assert "Softmax" not in _body_ops(decode(False))
