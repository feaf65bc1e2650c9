"""Interrupted training loses nothing.

The real command (`python -m examples.nmt train ...`) runs in a subprocess on
a tiny corpus written to `tmp_path`, with long epochs (`--steps-per-epoch`),
and is killed with SIGKILL in the middle of its second epoch (a quarter of
its steps done, as its progress bar shows; the first epoch's checkpoint and
backup exist, the second's checkpoint does not). The same
command, run again, must resume from the backup of the last finished epoch
(`keras.callbacks.BackupAndRestore`): it starts at epoch 2, leaves the first
epoch's checkpoint untouched, finishes, and its model exports and
translates.

The resumed run is killed again in its next epoch, and the latest backup
file truncated, as if the kill had come while the backup itself was being
written: the third run falls back to the backup before it (the example keeps
two) instead of failing or starting over.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_attention import serving

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCHS = 3
STEPS_PER_EPOCH = 120
# Limits of one run of the command (import, data, compile, 3 short epochs)
# and of the wait for the first epoch; generous for a loaded 2-core machine.
RUN_TIMEOUT = 240


def _write_corpus(path, n=240):
    from examples.nmt import dates

    corpus = dates.generate_dates(n, seed=3)
    with open(path, "w", encoding="utf-8") as f:
        for source, target in corpus.pairs:
            f.write(f"{source}\t{target}\n")


def _command(corpus, run_dir):
    return [
        sys.executable, "-m", "examples.nmt", "train",
        "--data", str(corpus), "--data-format", "tsv", "--out", str(run_dir),
        "--epochs", str(EPOCHS), "--steps-per-epoch", str(STEPS_PER_EPOCH),
        "--batch-size", "8", "--units", "8", "--embedding-dim", "8",
        "--source-vocab-size", "150", "--target-vocab-size", "150",
        "--warmup-steps", "10", "--patience", "10",
        # The progress bar tells the test how far into an epoch the run is.
        "--verbose", "1",
    ]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _checkpoint(run_dir, epoch):
    return os.path.join(run_dir, "checkpoints", f"epoch_{epoch:02d}.weights.h5")


def _steps_done(log, epoch):
    """Steps of epoch `epoch` the Keras progress bar has shown so far."""
    marker = f"Epoch {epoch}/{EPOCHS}"
    if marker not in log:
        return 0
    counts = re.findall(rf"(\d+)/{STEPS_PER_EPOCH}\b", log.split(marker, 1)[1])
    return int(counts[-1]) if counts else 0


def _run_and_kill_in_epoch(command, run_dir, log_path, epoch):
    """Starts `command`, SIGKILLs it a quarter into epoch `epoch`.

    Returns the log of the killed run.
    """
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            command, cwd=REPO, env=_env(), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.time() + RUN_TIMEOUT
            while _steps_done(open(log_path).read(), epoch) < STEPS_PER_EPOCH // 4:
                assert proc.poll() is None, open(log_path).read()
                if time.time() > deadline:
                    # A hung run, not a speed check: the run is killed below.
                    pytest.fail(f"no progress in {RUN_TIMEOUT} s (hung run)")
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    with open(log_path) as f:
        out = f.read()
    # Killed mid-epoch: this epoch's checkpoint was never written, the
    # one before was, and so was the backup.
    assert _steps_done(out, epoch) < STEPS_PER_EPOCH
    assert not os.path.exists(_checkpoint(run_dir, epoch))
    assert os.path.exists(_checkpoint(run_dir, epoch - 1))
    with open(os.path.join(run_dir, "backup", "training_metadata.json")) as f:
        assert json.load(f)["epoch"] == epoch - 1
    assert not os.path.exists(os.path.join(run_dir, "model.weights.h5"))
    return out


def _run_to_end(command, log_path):
    with open(log_path, "w") as log:
        proc = subprocess.run(
            command, cwd=REPO, env=_env(), stdout=log, stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT,
        )
    with open(log_path) as f:
        out = f.read()
    assert proc.returncode == 0, out
    return out


def _epochs_started(log):
    return [int(n) for n in re.findall(rf"Epoch (\d+)/{EPOCHS}", log)]


def _export_and_translate(run_dir):
    from keras_attention.translator import export_run

    path = export_run(str(run_dir), max_output_tokens=8)
    translate = serving.load_saved_model(path)
    out = translate(tf.constant(["vendredi 20 octobre 1933", ""]))
    assert out["translation"].shape == (2,)
    assert np.all(np.isfinite(out["scores"].numpy()))


def test_sigkill_mid_epoch_then_same_command_resumes(tmp_path):
    from examples.nmt import run as run_lib

    corpus = tmp_path / "pairs.tsv"
    _write_corpus(corpus)
    run_dir = tmp_path / "run"
    command = _command(corpus, run_dir)

    # 1. Killed in the middle of epoch 2.
    first = _run_and_kill_in_epoch(command, str(run_dir), tmp_path / "1.log", epoch=2)
    assert _epochs_started(first)[:2] == [1, 2]
    checkpoint_1 = _checkpoint(str(run_dir), 1)
    stamp = os.stat(checkpoint_1).st_mtime_ns
    vocab_stamp = os.stat(run_dir / "source_vocab.txt").st_mtime_ns

    # 2. The same command resumes at epoch 2 (epoch 1 is neither rerun nor
    # rewritten, the vocabulary not relearned); killed again in epoch 3.
    second = _run_and_kill_in_epoch(command, str(run_dir), tmp_path / "2.log", epoch=3)
    assert _epochs_started(second)[:2] == [2, 3], second
    assert os.stat(checkpoint_1).st_mtime_ns == stamp
    assert os.stat(run_dir / "source_vocab.txt").st_mtime_ns == vocab_stamp

    # 3. As if the kill had come while the backup was being written: the
    # latest backup is truncated. The run falls back to the backup before
    # it (end of epoch 1) instead of failing or starting over.
    latest = run_dir / "backup" / "latest.weights.h5"
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    third = _run_to_end(command, tmp_path / "3.log")
    assert _epochs_started(third) == [2, 3], third
    assert os.stat(checkpoint_1).st_mtime_ns == stamp
    with open(run_dir / "history.json") as f:
        history = json.load(f)
    assert len(history["loss"]) == EPOCHS - 1
    assert np.all(np.isfinite(history["loss"]))
    # Every checkpoint loads; the backup is cleaned up after success.
    for epoch in range(1, EPOCHS + 1):
        run_lib.load_trained(str(run_dir), weights=_checkpoint(str(run_dir), epoch))
    assert not os.path.exists(run_dir / "backup")
    _export_and_translate(run_dir)
