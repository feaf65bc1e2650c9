"""The additive score's memory bound and the benchmark machinery."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from keras import ops

import keras_attention
from keras_attention.ops.scores import additive_block_shape
from keras_attention.ops.scores import additive_score


def numpy_additive(qp, kp, v):
    hidden = np.tanh(qp[:, :, None, :] + kp[:, None, :, :])
    return hidden @ v


def numpy_additive_grads(qp, kp, v, upstream):
    """Gradients of sum(upstream * e) from the chain rule, in numpy."""
    hidden = np.tanh(qp[:, :, None, :] + kp[:, None, :, :])
    pre = upstream[..., None] * v * (1.0 - hidden**2)
    grad_v = np.einsum("bts,btsu->u", upstream, hidden)
    return pre.sum(axis=2), pre.sum(axis=1), grad_v


def random_inputs(rng, batch, tq, source, units):
    qp = rng.normal(size=(batch, tq, units)).astype("float32")
    kp = rng.normal(size=(batch, source, units)).astype("float32")
    v = rng.normal(size=(units,)).astype("float32")
    g = rng.normal(size=(batch, tq, source)).astype("float32")
    return qp, kp, v, g


def scores_and_grads(qp, kp, v, g, bound):
    import tensorflow as tf

    tensors = [tf.constant(x) for x in (qp, kp, v)]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        scores = additive_score(*tensors, max_block_elements=bound)
        loss = tf.reduce_sum(scores * g)
    grads = tape.gradient(loss, tensors)
    return [ops.convert_to_numpy(x) for x in [scores] + grads]


@pytest.mark.tf_only
@settings(max_examples=20, deadline=None)
@given(
    batch=st.integers(1, 3),
    tq=st.integers(1, 6),
    source=st.integers(1, 6),
    units=st.integers(1, 5),
    bound=st.one_of(st.none(), st.integers(1, 300)),
    seed=st.integers(0, 2**16),
)
def test_blocked_score_and_gradients_match_numpy(
    batch, tq, source, units, bound, seed
):
    rng = np.random.default_rng(seed)
    qp, kp, v, g = random_inputs(rng, batch, tq, source, units)
    scores, dq, dk, dv = scores_and_grads(qp, kp, v, g, bound)
    np.testing.assert_allclose(
        scores, numpy_additive(qp, kp, v), rtol=1e-5, atol=1e-5
    )
    ref_q, ref_k, ref_v = numpy_additive_grads(qp, kp, v, g)
    np.testing.assert_allclose(dq, ref_q, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dk, ref_k, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dv, ref_v, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "batch, tq, source, units, bound, expected",
    [
        (4, 10, 6, 5, 60, (1, 2)),  # two rows of 30 elements
        (4, 10, 6, 5, 29, (1, 1)),  # one row even above the bound
        (4, 10, 6, 5, 700, (2, 10)),  # two examples of 300
        (4, 10, 6, 5, 10**6, (4, 10)),  # everything
    ],
)
def test_block_shape(batch, tq, source, units, bound, expected):
    examples, rows = additive_block_shape(batch, tq, source, units, bound)
    assert (examples, rows) == expected
    assert examples * rows * source * units <= max(bound, source * units)


def _all_tensor_shapes(graph, seen=None):
    """Shapes of every tensor of a traced graph and its nested functions
    (loop bodies, custom gradients)."""
    seen = set() if seen is None else seen
    shapes = []
    for op in graph.get_operations():
        shapes.extend((op.type, out.shape) for out in op.outputs)
    for fn in getattr(graph, "_functions", {}).values():
        inner = getattr(fn, "graph", None)
        if inner is not None and id(inner) not in seen:
            seen.add(id(inner))
            shapes.extend(_all_tensor_shapes(inner, seen))
    return shapes


@pytest.mark.tf_only
@pytest.mark.parametrize("dynamic", [False, True])
def test_blocked_graph_never_holds_the_whole_tanh_term(dynamic):
    import tensorflow as tf

    batch, tq, source, units, bound = 3, 20, 30, 8, 500
    qp, kp, v, g = random_inputs(np.random.default_rng(0), batch, tq,
                                 source, units)

    def step(q, k, v_):
        with tf.GradientTape() as tape:
            tape.watch([q, k, v_])
            scores = additive_score(q, k, v_, max_block_elements=bound)
            loss = tf.reduce_sum(scores * scores)
        return tape.gradient(loss, [q, k, v_])

    if dynamic:
        spec = [
            tf.TensorSpec((None, None, units)),
            tf.TensorSpec((None, None, units)),
            tf.TensorSpec((units,)),
        ]
        traced = tf.function(step, input_signature=spec)
        concrete = traced.get_concrete_function()
    else:
        traced = tf.function(step)
        concrete = traced.get_concrete_function(qp, kp, v)
    shapes = _all_tensor_shapes(concrete.graph)
    # Blocks of the tanh term: the rank-4 outputs of the elementwise ops
    # that compute it (forward and backward). None above the bound.
    elementwise = {"Tanh", "AddV2", "Add", "Mul", "Square", "Sub"}
    blocks = [
        s for op, s in shapes if op in elementwise and s.rank == 4
    ]
    assert blocks, "no block of the tanh term found in the graph"
    for shape in blocks:
        if shape.is_fully_defined():
            assert shape.num_elements() <= bound, shape
    if not dynamic:
        whole = batch * tq * source * units
        largest = max(
            s.num_elements() for _, s in shapes if s.is_fully_defined()
        )
        # Nothing is near the 4800-element whole term; the largest tensors
        # are the (padded) scores and their gradient, batch * Tq * S = 1800.
        assert largest <= batch * tq * source
        assert whole > 2 * largest
    # And the traced function computes the right gradients.
    dq, dk, dv = [ops.convert_to_numpy(x) for x in traced(qp, kp, v)]
    scores = numpy_additive(qp, kp, v)
    ref = numpy_additive_grads(qp, kp, v, 2 * scores)
    for got, want in zip((dq, dk, dv), ref):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.tf_only
def test_blocked_peak_memory_is_far_below_the_whole_term():
    import tensorflow as tf

    from benchmarks.common import peak_memory

    # TensorFlow's CPU allocator statistics (oneDNN's allocator) only see
    # allocations of 256 KiB and more: blocks of 2**16 float32 are counted.
    batch, tq, source, units, bound = 4, 64, 256, 64, 2**16
    whole_bytes = 4 * batch * tq * source * units  # 16 MiB
    block_bytes = 4 * bound  # 256 KiB
    tensors = [
        tf.constant(x)
        for x in random_inputs(
            np.random.default_rng(1), batch, tq, source, units
        )
    ]

    def make(max_block_elements):
        @tf.function
        def step(q, k, v, g):
            with tf.GradientTape() as tape:
                tape.watch([q, k, v])
                scores = additive_score(
                    q, k, v, max_block_elements=max_block_elements
                )
                loss = tf.reduce_sum(scores * g)
            return tape.gradient(loss, [q, k, v])

        step(*tensors)  # trace
        return step

    whole = peak_memory(make(None), *tensors, device="CPU:0")
    # The executor's scheduling varies from call to call: the least of three.
    step = make(bound)
    blocked = min(
        peak_memory(step, *tensors, device="CPU:0") for _ in range(3)
    )
    assert whole >= whole_bytes
    # One block (h) and its temporaries (h^2, g h^2) at a time, plus the
    # 256 KiB scores and their gradient: a few blocks (measured 3 to 4), not
    # the 64 of the whole term (nor the 20 of groups run ten at a time).
    assert block_bytes <= blocked <= 12 * block_bytes


def test_layer_blocking_does_not_change_results():
    rng = np.random.default_rng(2)
    query = rng.normal(size=(3, 7, 5)).astype("float32")
    value = rng.normal(size=(3, 9, 4)).astype("float32")
    mask = rng.random((3, 9)) > 0.3
    whole = keras_attention.AdditiveAttention(6, max_block_elements=None)
    blocked = keras_attention.AdditiveAttention(6, max_block_elements=70)
    whole.build(query.shape, value.shape)
    blocked.build(query.shape, value.shape)
    blocked.set_weights(whole.get_weights())
    for a, b in zip(
        whole(query, value, value_mask=mask),
        blocked(query, value, value_mask=mask),
    ):
        np.testing.assert_allclose(
            ops.convert_to_numpy(a), ops.convert_to_numpy(b), atol=1e-6
        )


def test_max_block_elements_validation():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_block_elements"):
            keras_attention.AdditiveAttention(4, max_block_elements=bad)
    layer = keras_attention.AdditiveAttention(4, max_block_elements=123)
    assert layer.get_config()["max_block_elements"] == 123


# ----------------------------------------------------------------------
# Benchmark machinery.


def test_interleaved_alternates_and_reports_each_round():
    import tensorflow as tf

    from benchmarks import common

    calls = []

    def make(name):
        def fn():
            calls.append(name)
            return tf.constant(0.0)

        return fn

    times = common.interleaved(
        {"a": make("a"), "b": make("b")}, warmup=1, repeats=3
    )
    # Warm-up, then rounds in alternating order.
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3}
    assert common.paired_ratio([2.0, 4.0, 9.0], [1.0, 2.0, 1.0]) == 2.0


def test_flop_counts_and_batch_fitting():
    from benchmarks import layers

    # Q K^T and A V: 2 * 2 * B*T*S*d forward; backward twice that.
    assert layers.layer_flops("dot", 2, 3, 5, 7, backward=False) == 840
    assert layers.layer_flops("dot", 2, 3, 5, 7) == 3 * 840
    assert layers.layer_flops(
        "multiplicative", 2, 3, 5, 7, backward=False
    ) == 840 + 2 * 2 * 5 * 7 * 7
    big = layers.estimated_keras_bytes("additive", 64, 256, 256, 256)
    batch = layers.fit_batch("additive", 64, 256, 256, 256, big // 8)
    assert batch == 8
    assert layers.estimated_keras_bytes("additive", batch, 256, 256, 256) <= (
        big // 8
    )


@pytest.mark.slow
@pytest.mark.tf_only
def test_quick_machinery_on_tiny_shapes(tmp_path):
    from benchmarks import run

    config = run.make_config(quick=True)
    config["layers"].update(lengths=(4,), dims=(8,), batch=2, repeats=2)
    config["efficiency"].update(lengths=(4,), dims=(8,), batch=2, repeats=2)
    config["scaling"].update(
        sources=(4, 8), target=3, dim=8, batch=2, repeats=2
    )
    logs = []
    results = run.run(
        config=config,
        out=str(tmp_path),
        sections=("layers", "efficiency", "scaling"),
        log=logs.append,
    )
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["mode"] == "quick"
    assert [r["kind"] for r in saved["layers"]] == [
        "dot",
        "multiplicative",
        "additive",
    ]
    for row in results["layers"]:
        assert row["time_ratio"] > 0
        assert all(t > 0 for t in row["time_s"].values())
    assert [r["source"] for r in saved["scaling"]] == [4, 8]
    assert saved["machine"]["cpu_count"] >= 1
    table = (tmp_path / "results.md").read_text()
    assert "| DotAttention | keras Attention | 2 | 4 | 8 |" in table
    assert "## Targets" in table
    assert keras.backend.backend() == saved["machine"]["backend"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: keras_attention.MultiplicativeAttention(),
        lambda: keras_attention.AdditiveAttention(6, max_block_elements=40),
    ],
    ids=["multiplicative", "additive"],
)
def test_attend_uses_the_keys_projected_once(make):
    """Step-wise decoding: `attend` never touches the key kernel again."""
    rng = np.random.default_rng(3)
    query = rng.normal(size=(2, 5)).astype("float32")  # one decoder step
    value = rng.normal(size=(2, 8, 4)).astype("float32")
    layer = make()
    layer.build(query.shape, value.shape)
    expected = [ops.convert_to_numpy(x) for x in layer(query, value)]
    projected = layer.project_key(ops.convert_to_tensor(value))
    kernel = layer.kernel if hasattr(layer, "kernel") else layer.key_kernel
    # A key kernel of NaNs: any use of it after projection would show.
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))
    got = layer.attend(query, value, projected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(ops.convert_to_numpy(a), b, atol=1e-6)


BACKEND_SCRIPT = r"""
import numpy as np
import keras
from keras import ops
from keras_attention.ops.scores import additive_score

backend = keras.backend.backend()
rng = np.random.default_rng(0)
qp = rng.normal(size=(3, 7, 4)).astype("float32")
kp = rng.normal(size=(3, 5, 4)).astype("float32")
v = rng.normal(size=(4,)).astype("float32")
g = rng.normal(size=(3, 7, 5)).astype("float32")
h = np.tanh(qp[:, :, None] + kp[:, None])
pre = g[..., None] * v * (1 - h**2)
want = [h @ v, pre.sum(2), pre.sum(1), np.einsum("bts,btsu->u", g, h)]
for bound in (None, 30, 7):
    if backend == "jax":
        import jax

        def loss(q, k, vv):
            return (additive_score(q, k, vv, bound) * g).sum()

        scores = additive_score(qp, kp, v, bound)
        grads = jax.grad(loss, argnums=(0, 1, 2))(qp, kp, v)
    else:
        import torch

        ts = [torch.tensor(x, requires_grad=True) for x in (qp, kp, v)]
        scores = additive_score(*ts, max_block_elements=bound)
        (scores * torch.tensor(g)).sum().backward()
        grads = [t.grad for t in ts]
        scores = scores.detach()
    for got, ref in zip([scores] + list(grads), want):
        np.testing.assert_allclose(
            np.asarray(ops.convert_to_numpy(got)), ref, rtol=1e-4, atol=1e-4
        )
print("ok", backend)
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_blocked_score_on_other_backends(backend):
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", BACKEND_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"ok {backend}" in done.stdout


def test_decode_peers_runs_with_one_inter_op_thread(tmp_path):
    """`benchmarks.decode_peers` on tiny sizes (no TFA venv: our columns
    only) with `--inter-op-threads 1`, in a process of its own (TensorFlow
    fixes its thread pools once a process runs its first op): the decoders
    run, the plain and the XLA export decode, and the setting is applied."""
    out = tmp_path / "decode"
    subprocess.run(
        [sys.executable, "-m", "benchmarks.decode_peers", "--quick",
         "--rounds", "1", "--batches", "1", "--inter-op-threads", "1",
         "--tfa-python", str(tmp_path / "no-tfa"), "--out", str(out)],
        check=True, capture_output=True, timeout=600,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    result = json.loads((out / "decode_peers.json").read_text())
    assert result["inter_op_threads"] == 1
    assert result["machine"]["inter_op_threads"] == 1
    assert [row["decoder"] for row in result["rows"]] == ["greedy", "beam 3"]
    for row in result["rows"]:
        assert set(row["sentences_per_s"]) == {"ours", "xla"}
        assert all(v > 0 for v in row["sentences_per_s"].values())


def test_vocab_ops_table_on_tiny_shapes(capsys):
    """`benchmarks.vocab_ops` times every op at every row count, and the
    beam rows only where the rows make whole sentences."""
    pytest.importorskip("tensorflow")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("TensorFlow ops")
    from benchmarks import vocab_ops

    assert vocab_ops.main(["--rows", "3", "6", "--vocab", "40",
                           "--beam-width", "3", "--repeats", "1"]) == 0
    table = capsys.readouterr().out
    cells = [[c.strip() for c in line.strip("| ").split(" | ")]
             for line in table.splitlines() if line.startswith("| ")]
    rows = {c[0]: c[1:] for c in cells}
    assert rows["op over (rows, vocab)"] == ["rows 3, us", "rows 6, us"]
    for name in ("ArgMax", "Softmax", "beam top-3, selection.top_k (chunked)"):
        assert all(float(v) > 0 for v in rows[name]), rows[name]
    assert vocab_ops.main(["--rows", "4", "--vocab", "40", "--beam-width",
                           "3", "--repeats", "1"]) == 0
    assert "| beam top-3, selection.top_k (chunked) | - |" in (
        capsys.readouterr().out)
    with pytest.raises(SystemExit):
        vocab_ops.main(["--beam-width", "0"])
