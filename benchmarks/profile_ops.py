"""Op-by-op timing with `tf.profiler`, shared by both sides of a profile.

`profile(call, steps)` runs `call` untraced and then traced with
`tf.profiler`, and sums the executor's op events by op type. It imports
only TensorFlow, so the same code profiles our models
(`benchmarks.profile_step`) and TFA's (`benchmarks.profile_tfa`, under
TensorFlow 2.15 in the TFA venv). The caller runs TensorFlow on one
inter-op thread, so that the op times add up to the step.
"""

import collections
import glob
import os
import tempfile
import time

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from benchmarks.common import sync


def op_type(name: str) -> str:
    """`model/dense/MatMul:MatMul` -> `MatMul` (the event names the op and
    its type after the colon)."""
    return name.rsplit(":", 1)[-1] if ":" in name else name


def matmul_site(name: str) -> str:
    """A matmul's op type and the layer it belongs to, forward or gradient:
    `gradient_tape/functional_1/dense_1/MatMul/MatMul_1:_MklMatMul` ->
    `_MklMatMul dense_1 (gradient)`."""
    path, kind = name.rsplit(":", 1)
    parts = path.split("/")
    grad = parts[0] == "gradient_tape"
    layers = [p for p in parts[1 + grad:-1]
              if not p.startswith(("while", "functional", "MatMul"))]
    return f"{kind} {layers[0] if layers else '?'}" + (
        " (gradient)" if grad else "")


def op_events(logdir: str, by_site: bool = False) -> tuple:
    """`(times, counts)`: microseconds and number of executed ops per op
    type, over the executor's op events of the trace in `logdir`.
    `by_site` splits matmuls by layer, forward and gradient."""
    (path,) = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"),
                        recursive=True)
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    totals = collections.Counter()
    counts = collections.Counter()

    def key(name):
        if by_site and "MatMul" in name:
            return matmul_site(name)
        return op_type(name)

    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        names = {k: m.name for k, m in plane.event_metadata.items()}
        for line in plane.lines:
            # The executor's inter-op threads; an op event is `name:Type`
            # (the rest are the executor's own regions).
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if ":" in name and "::" not in name:
                    totals[key(name)] += event.duration_ps / 1e6
                    counts[key(name)] += 1
    return totals, counts


def profile(call, steps: int, by_site: bool = False,
            warmup: int = 5) -> dict:
    """`call` timed `steps` times untraced, then `steps` times traced:
    `{"untraced_s", "traced_s"}` (seconds a call) and `"totals"`,
    `"counts"` (`op_events` over the traced calls)."""
    for _ in range(warmup):
        sync(call())
    start = time.perf_counter()
    for _ in range(steps):
        sync(call())
    untraced = (time.perf_counter() - start) / steps
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        start = time.perf_counter()
        for _ in range(steps):
            sync(call())
        traced = (time.perf_counter() - start) / steps
        tf.profiler.experimental.stop()
        totals, counts = op_events(logdir, by_site)
    return {"untraced_s": untraced, "traced_s": traced, "totals": totals,
            "counts": counts}
