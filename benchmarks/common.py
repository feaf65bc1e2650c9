"""Timing and memory measurement shared by the benchmarks.

Every comparison is measured side by side in one process: the candidates
are called in turn, round after round (A B C, C B A, ...), after warm-up
calls that also trace the `tf.function`s, and each figure is the median
over the rounds. A ratio is the median of the per-round ratios, so a burst
of load from another process shifts both sides of the same round.

Peak memory is read from TensorFlow's own allocator statistics
(`tf.config.experimental.get_memory_info`, which also works for `CPU:0`):
the statistics are reset, the step is run once, and the figure is the peak
minus what was allocated before the step (inputs and weights). It counts
every tensor TensorFlow allocates during the step (forward activations kept
for the backward pass, gradients, temporaries), not Python objects and not
the scratch buffers that oneDNN allocates for itself.
"""

import os
import platform
import statistics
import time

import tensorflow as tf


def memory_device():
    """The device whose allocator is measured: the first GPU, else the CPU."""
    gpus = tf.config.list_logical_devices("GPU")
    return "GPU:0" if gpus else "CPU:0"


def sync(result):
    """Waits for `result` (a nest of tensors): results of a `tf.function`
    are ready when returned in eager mode; reading one scalar forces
    completion on asynchronous devices as well."""
    flat = tf.nest.flatten(result)
    if flat:
        flat[0].numpy()


def peak_memory(fn, *args, device=None):
    """Peak bytes allocated by one call of `fn(*args)` above the baseline."""
    device = device or memory_device()
    tf.config.experimental.reset_memory_stats(device)
    before = tf.config.experimental.get_memory_info(device)["current"]
    result = fn(*args)
    sync(result)
    peak = tf.config.experimental.get_memory_info(device)["peak"]
    del result
    return max(0, peak - before)


def interleaved(candidates, warmup=1, repeats=5, min_seconds=0.0,
                max_repeats=50):
    """Times candidates side by side.

    Args:
        candidates: dict name -> zero-argument callable.
        warmup: calls of each candidate before timing (the first traces).
        repeats: least number of timed rounds; each round calls every
            candidate once, in alternating order (forward, then reversed).
        min_seconds: rounds are added (up to `max_repeats`) until the timed
            rounds took at least this long in all, so that cheap cases get
            more rounds and a steadier median.
        max_repeats: most timed rounds.

    Returns:
        dict name -> list of seconds, one per round.
    """
    for _ in range(warmup):
        for fn in candidates.values():
            sync(fn())
    times = {name: [] for name in candidates}
    elapsed = 0.0
    rounds = 0
    while rounds < repeats or (
        elapsed < min_seconds and rounds < max_repeats
    ):
        # Alternate the order (A B C, C B A, ...): no candidate always runs
        # right after the same other one.
        order = list(candidates.items())
        if rounds % 2:
            order.reverse()
        for name, fn in order:
            start = time.perf_counter()
            sync(fn())
            spent = time.perf_counter() - start
            times[name].append(spent)
            elapsed += spent
        rounds += 1
    return times


def median(values):
    return statistics.median(values)


def paired_ratio(numerator, denominator):
    """Median of the per-round ratios of two lists of times."""
    return statistics.median(a / b for a, b in zip(numerator, denominator))


def machine_info():
    """The machine the figures were measured on."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_gib = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    memory_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    import keras

    return {
        "cpu": model,
        "cpu_count": os.cpu_count(),
        "memory_gib": memory_gib,
        "gpus": [d.name for d in tf.config.list_logical_devices("GPU")],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "backend": keras.backend.backend(),
        "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
    }
