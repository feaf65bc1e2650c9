"""Distributed training of a run with `tf.distribute`.

Three strategies, chosen with `--strategy`:

- `"default"`: one device (the first GPU when there is one, else the CPU).
- `"mirrored"`: `tf.distribute.MirroredStrategy`, synchronous data
  parallelism over all local GPUs (over the logical CPU devices when there
  is no GPU, which is how the tests run it on a laptop).
- `"multi-worker"`: `tf.distribute.MultiWorkerMirroredStrategy`, the same
  over several machines, configured by the `TF_CONFIG` environment
  variable (`make_tf_config` writes one). Every worker runs the same
  command; worker 0 is the chief.

The global batch (`--batch-size`) is split over the replicas, so each
replica sees `batch_size / num_replicas` examples a step; gradients are
summed over the replicas after Keras has scaled each replica's loss by
`1 / num_replicas`, so a step is the step of one device on the whole global
batch.

Keras 3's `model.fit` does not work under `MultiWorkerMirroredStrategy`
(https://github.com/keras-team/keras/issues/20585, still present in Keras
3.15): `apply_multi_worker_fit_workaround` fixes it for one model, and only
when the strategy really spans several workers.
"""

from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Tuple

import json
import os
import socket
import types

import tensorflow as tf

from keras_attention.training.settings import STRATEGIES
from keras_attention.checks import check_positive_int


_multi_worker_strategy = None


# ----------------------------------------------------------------------
# Strategies.


def configure_logical_cpus(count: int) -> None:
    """Splits the CPU into `count` logical devices (for `"mirrored"` on CPU).

    Must run before TensorFlow initialises its devices, i.e. before the
    first op of the process.

    Raises:
        ValueError: if `count < 1`.
        RuntimeError: if TensorFlow has already initialised its devices.
    """
    check_positive_int("count", count)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    )


def _mirrored_devices() -> List[str]:
    """All local GPUs, else all logical CPU devices."""
    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        return [d.name for d in gpus]
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def get_strategy(name: str) -> tf.distribute.Strategy:
    """The `tf.distribute` strategy called `name` (one of `STRATEGIES`).

    `"multi-worker"` reads the cluster from `TF_CONFIG` and must be created
    before any other TensorFlow op of the process; later calls return the
    same strategy.

    Raises:
        ValueError: for an unknown name.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices=_mirrored_devices())
    if name == "multi-worker":
        # One per process: it configures the collective ops of the process
        # (a second one would reconfigure them under the first one's feet).
        global _multi_worker_strategy
        if _multi_worker_strategy is None:
            _multi_worker_strategy = tf.distribute.MultiWorkerMirroredStrategy()
        return _multi_worker_strategy
    raise ValueError(
        f"`strategy` must be one of {STRATEGIES}. Received: strategy={name!r}"
    )


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """Whether `strategy` is a `MultiWorkerMirroredStrategy` over 2+ workers."""
    return isinstance(
        strategy, tf.distribute.MultiWorkerMirroredStrategy
    ) and strategy.extended._in_multi_worker_mode()


def task(
    strategy: Optional[tf.distribute.Strategy] = None,
    tf_config: Optional[Dict[str, Any]] = None,
) -> Tuple[Optional[str], Optional[int]]:
    """`(task_type, task_id)` of this process.

    From the strategy's cluster resolver when it has one, else from
    `tf_config` (a dict, default: the `TF_CONFIG` environment variable);
    `(None, None)` outside a cluster.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is not None and resolver.task_type is not None:
        return resolver.task_type, resolver.task_id
    if tf_config is None:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    info = tf_config.get("task") or {}
    if "type" not in info:
        return None, None
    return info["type"], int(info.get("index", 0))


def is_chief(
    strategy: Optional[tf.distribute.Strategy] = None,
    tf_config: Optional[Dict[str, Any]] = None,
) -> bool:
    """Whether this process writes the run's files.

    True outside a cluster, for the `"chief"` task, and for worker 0 of a
    cluster that has no `"chief"` task.
    """
    task_type, task_id = task(strategy, tf_config)
    if task_type is None or task_type == "chief":
        return True
    if tf_config is None:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    has_chief = "chief" in (tf_config.get("cluster") or {})
    return task_type == "worker" and task_id == 0 and not has_chief


def worker_dir(
    path: str,
    strategy: Optional[tf.distribute.Strategy] = None,
    tf_config: Optional[Dict[str, Any]] = None,
) -> str:
    """Where this process writes the files of `path`.

    The chief writes to `path`; every other worker writes to its own
    `path/workers/<type>_<id>`, so that workers sharing a file system never
    write the same file (each keeps its own copy of the vocabularies,
    backups and checkpoints, which are the same as the chief's).
    """
    if is_chief(strategy, tf_config):
        return path
    task_type, task_id = task(strategy, tf_config)
    return os.path.join(path, "workers", f"{task_type}_{task_id}")


# ----------------------------------------------------------------------
# Cluster configuration.


def free_loopback_ports(count: int) -> List[int]:
    """`count` distinct TCP ports free on 127.0.0.1 (bound to port 0, then
    closed)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def make_tf_config(
    addresses: Iterable[str], index: int, task_type: str = "worker"
) -> Dict[str, Any]:
    """The `TF_CONFIG` dict of task `index` in a cluster of workers.

    Args:
        addresses: `"host:port"` of every worker, worker 0 (the chief) first.
        index: This task's position in `addresses`.
        task_type: Defaults to `"worker"`.

    Raises:
        ValueError: if `index` is not a position of `addresses`.
    """
    addresses = list(addresses)
    if not 0 <= index < len(addresses):
        raise ValueError(
            f"`index` must be in [0, {len(addresses)}). Received: index={index}"
        )
    return {
        "cluster": {task_type: addresses},
        "task": {"type": task_type, "index": index},
    }


# ----------------------------------------------------------------------
# keras-team/keras#20585.


def _first_local_value(
    strategy: tf.distribute.Strategy, value: Any
) -> Any:
    if isinstance(value, tf.distribute.DistributedValues):
        return strategy.experimental_local_results(value)[0]
    return value


def symbolic_build_on_local_batch(
    self: Any, iterator: Any = None, data_batch: Any = None
) -> None:
    """`TensorFlowTrainer._maybe_symbolic_build` on one local batch.

    Upstream reduces the first distributed batch with
    `strategy.reduce("MEAN", batch, axis=None)` only to read its shapes and
    dtypes; under `MultiWorkerMirroredStrategy` that reduce fails
    (`ValueError: Attempt to convert a value (PerReplica...)`). The batch
    of the first local replica has the same shapes and dtypes.
    """
    if self._distribute_strategy is None:
        return
    strategy = self.distribute_strategy
    if iterator is not None:
        for _, _, it in iterator:
            data_batch = tf.nest.map_structure(
                lambda v: _first_local_value(strategy, v), next(it)
            )
            break
    with strategy.scope():
        self._symbolic_build(data_batch=data_batch)


def _with_vector_scalars(
    step: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    """Wraps a train/test step so that its scalar outputs have shape `(1,)`.

    Under `MultiWorkerMirroredStrategy`, Keras reduces each per-replica
    step output with `strategy.reduce("MEAN", value, axis=0)`, which needs
    an axis 0: on a `(1,)` value it is the mean over the replicas, a
    scalar again, as Keras intends.
    """

    def wrapped(data: Any) -> Any:
        return tf.nest.map_structure(
            lambda v: tf.reshape(v, [1]) if v.shape.rank == 0 else v,
            step(data),
        )

    return wrapped


def apply_multi_worker_fit_workaround(
    model: Any, strategy: Optional[tf.distribute.Strategy] = None
) -> bool:
    """Makes `model.fit`/`evaluate` work under `MultiWorkerMirroredStrategy`.

    Keras 3 (3.15 included, keras-team/keras#20585) fails there twice:

    1. `fit` starts by reducing the first distributed batch across workers
       (`strategy.reduce("MEAN", batch)`) to build the model symbolically;
       the collective reduce of a `PerReplica` batch raises `ValueError:
       Attempt to convert a value (PerReplica...) to a Tensor`. Fix: this
       model's `_maybe_symbolic_build` is `symbolic_build_on_local_batch`,
       which takes the first local replica's
       batch instead (only its shapes and dtypes are used).
    2. The train and test functions reduce each scalar metric of the step
       with `strategy.reduce("MEAN", value, axis=0)` (`reduce_per_replica`,
       whatever `distribute_reduction_method` says): `ValueError: Invalid
       reduction dimension 0 for input with 0 dimensions`. Fix: this
       model's `train_step`/`test_step` return their scalars with shape
       `(1,)`, whose mean over axis 0 across the replicas is the scalar
       Keras wants. The logs are the same as on one device: the epoch logs
       (`EarlyStopping`, `ModelCheckpoint`, the history) come from the
       metric variables, summed over all replicas of all workers.

    Gradients are untouched: they are all-reduced over the workers as
    usual. A no-op (returns False) unless `strategy` spans 2+ workers.
    `tests/test_distribute.py` runs Keras without the workaround in a
    strict xfail, so that it starts failing when Keras fixes the bug.

    Args:
        model: A compiled `keras.Model` built under `strategy.scope()`.
        strategy: Defaults to `model.distribute_strategy`.

    Returns:
        Whether the workaround was applied.
    """
    strategy = strategy or model.distribute_strategy
    if not is_multi_worker(strategy):
        return False
    model._maybe_symbolic_build = types.MethodType(
        symbolic_build_on_local_batch, model
    )
    model.train_step = _with_vector_scalars(model.train_step)
    model.test_step = _with_vector_scalars(model.test_step)
    return True
