"""Fast training defaults: mixed precision and XLA, chosen per machine.

`--mixed-precision` (`TrainConfig.mixed_precision`):

- `"auto"` (the default): a mixed policy where the hardware has fast
  low-precision matmuls, float32 elsewhere. GPUs (training runs on them
  when there are any): compute capability 8.0 or more (Ampere, Hopper:
  bfloat16 tensor cores) -> `mixed_bfloat16`; 7.x (Volta, Turing: float16
  tensor cores) -> `mixed_float16` (Keras adds loss scaling); older ->
  float32. CPU only: AVX512_BF16 or AMX-BF16 (`/proc/cpuinfo`, Linux) ->
  `mixed_bfloat16` (oneDNN runs its matmuls in bfloat16); otherwise
  float32.
- `"off"`: float32. `"float16"`, `"bfloat16"`: that mixed policy.

Variables (the optimizer's master weights) stay float32 under every
policy; the logits, the attention softmax and the decoder's log-softmax
are computed in float32 (`model.py`, `keras_attention`).

`--jit-compile` (`TrainConfig.jit_compile`), XLA for the train step:

- `"auto"` (the default): on a GPU, Keras' own `"auto"` (XLA on for
  TensorFlow; not measured here: no GPU). Off on CPU, as measured on a
  quiet 2-core AVX-512 CPU (docs/benchmarks.md): at one batch shape XLA
  speeds up a float32 train step (+21 % sequence mode, +40 % step-wise)
  but slows a `mixed_bfloat16` one (XLA's CPU bfloat16 code is slower than
  oneDNN's). Under XLA `train` pads every batch to its length bucket's
  width (`keras_attention.training.dataset.make_dataset(fixed_shapes=True)`), so the step compiles
  once per bucket instead of once per batch shape (131-144 s a fra-eng
  epoch before, 27k pairs); even so XLA's CPU code for the example's model
  (bidirectional, masked LSTMs) took 72, 75 and 82 s for the first three
  epochs against 23, 20 and 41 s without (`benchmarks/fast_defaults.sh`).
- `"on"`, `"off"`: always, never.
"""

from typing import Iterable
from typing import Iterator
from typing import Optional
from typing import Tuple
from typing import Union

import contextlib
import os

import keras

from keras_attention.training.settings import JIT_COMPILE
from keras_attention.training.settings import MIXED_PRECISION

# /proc/cpuinfo flags of CPUs with bfloat16 matmul instructions.
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset:
    """The CPU feature flags of `path` (empty where there is no such
    file, e.g. off Linux)."""
    if not os.path.exists(path):
        return frozenset()
    flags = set()
    with open(path) as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.partition(":")[2].split())
    return frozenset(flags)


def gpu_compute_capabilities() -> list:
    """`(major, minor)` compute capability of each visible TensorFlow GPU
    (`(0, 0)` where TensorFlow does not say)."""
    import tensorflow as tf

    capabilities = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capabilities.append(tuple(details.get("compute_capability", (0, 0))))
    return capabilities


def auto_mixed_precision(
    flags: Optional[Iterable[str]] = None,
    gpus: Optional[Iterable[Tuple[int, int]]] = None,
) -> tuple:
    """`(value, reason)`: the `mixed_precision` value `"auto"` stands for.

    Args:
        flags: CPU flags (default: `cpu_flags()`).
        gpus: GPU compute capabilities (default:
            `gpu_compute_capabilities()`).
    """
    gpus = gpu_compute_capabilities() if gpus is None else list(gpus)
    if gpus:
        slowest = min(gpus)
        if slowest >= (8, 0):
            return "bfloat16", f"GPU compute capability {slowest}"
        if slowest >= (7, 0):
            return "float16", f"GPU compute capability {slowest}"
        return "off", f"GPU compute capability {slowest} < (7, 0)"
    flags = cpu_flags() if flags is None else frozenset(flags)
    found = sorted(flags & set(BFLOAT16_CPU_FLAGS))
    if found:
        return "bfloat16", "CPU with " + ", ".join(found)
    return "off", "no GPU, no bfloat16 CPU instructions"


def mixed_precision_policy(
    value: Union[str, bool, None],
    flags: Optional[Iterable[str]] = None,
    gpus: Optional[Iterable[Tuple[int, int]]] = None,
) -> Optional[str]:
    """The Keras dtype policy of a `--mixed-precision` value.

    `"off"`, `None`, `False` -> `None` (float32); `True` or `"float16"` ->
    `"mixed_float16"`; `"bfloat16"` -> `"mixed_bfloat16"`; `"auto"` ->
    the policy of `auto_mixed_precision(flags, gpus)`.

    Raises:
        ValueError: for any other value.
    """
    if value == "auto":
        value = auto_mixed_precision(flags, gpus)[0]
    if value is None or value is False or value == "off":
        return None
    if value is True:
        value = "float16"
    if value not in MIXED_PRECISION[2:]:
        raise ValueError(
            f"`mixed_precision` must be one of {MIXED_PRECISION}. "
            f"Received: mixed_precision={value!r}"
        )
    return f"mixed_{value}"


@contextlib.contextmanager
def dtype_policy(policy: Optional[str]) -> Iterator[None]:
    """Makes `policy` (a name; `None`: float32) Keras' global dtype policy
    inside the block, and restores the previous one after it: layers keep
    the policy they were built with, the rest of the process (an export or
    a second model built next) is unaffected."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy or "float32")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def jit_compile_setting(
    value: Union[str, bool], gpus: Optional[Iterable[Tuple[int, int]]] = None
) -> Union[str, bool]:
    """The `jit_compile` argument of `model.compile` for `--jit-compile`.

    Args:
        value: `"auto"`, `"on"`/`True` or `"off"`/`False`.
        gpus: GPU compute capabilities (default:
            `gpu_compute_capabilities()`).

    Returns:
        `True`, `False` or `"auto"` (with GPUs: Keras decides).

    Raises:
        ValueError: for an unknown value.
    """
    if value is True or value == "on":
        return True
    if value is False or value == "off":
        return False
    if value != "auto":
        raise ValueError(
            f"`jit_compile` must be one of {JIT_COMPILE}. "
            f"Received: jit_compile={value!r}"
        )
    gpus = gpu_compute_capabilities() if gpus is None else list(gpus)
    return "auto" if gpus else False
