"""The JAX benchmarks at tiny sizes: the GPU training script and the JAX
worker of the peers table.

- `benchmarks/gpu_nmt.py --tiny` runs on the JAX backend with TensorFlow
  unimportable (the GPU machine it is for has JAX with CUDA and no
  TensorFlow) and prints one line of positive figures;
- `benchmarks/peers_jax.py` answers the peers protocol (setup, time,
  quit) with its jitted training steps and decoders;
- the peers table shows the JAX rows beside the TensorFlow ones, with
  their ratio to TFA, and leaves them out when JAX did not run.
"""

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs a module as `__main__` with TensorFlow (and what needs it)
# unimportable, as on a machine without it.
WITHOUT_TENSORFLOW = r"""
import runpy
import sys


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tensorflow_text", "tf_keras"):
            raise ImportError(f"TensorFlow is blocked here: {name}")


sys.meta_path.insert(0, Blocker())
module, sys.argv = sys.argv[1], sys.argv[1:]
runpy.run_module(module, run_name="__main__")
assert not any(m.split(".")[0] == "tensorflow" for m in sys.modules)
"""


def _jax_env():
    pytest.importorskip("jax")
    return dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=ROOT,
                TF_CPP_MIN_LOG_LEVEL="3")


@pytest.mark.slow
def test_gpu_script_runs_tiny_on_jax_without_tensorflow(tmp_path):
    out = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, "benchmarks.gpu_nmt",
         "--tiny", "--out", str(out)],
        cwd=ROOT, env=_jax_env(), capture_output=True, text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = done.stdout.strip().splitlines()[-1]
    match = re.fullmatch(
        r"gpu_nmt target_tokens_per_s=(\S+) words_per_s=(\S+) "
        r"vs_titanx_words=(\S+) step_ms=(\S+) first_step_s=(\S+) "
        r"backend=jax model=luong layers=2 units=16 batch=4 "
        r"dtype_policy=float32 device=(.+)",
        line,
    )
    assert match, line
    tokens, words, ratio, step_ms, first = map(float, match.groups()[:5])
    assert min(tokens, words, ratio, step_ms, first) > 0
    # 4 sentences of 5 source and 6 target tokens a step.
    assert words == pytest.approx(tokens * 11 / 6, rel=1e-3)
    assert tokens == pytest.approx(4 * 6 / (step_ms / 1000), rel=1e-2)
    assert match.group(6).startswith("cpu")
    saved = json.loads(out.read_text())
    assert saved["target_tokens_per_s"] == tokens
    assert saved["steps"] == 3 and saved["params"] > 0


TINY_PEERS = {
    "vocab": 50, "embedding_dim": 8, "units": 8, "batch": 4,
    "source_length": 5, "target_length": 5, "decode_length": 6,
    "beam_width": 2, "decode_batches": [2], "tfa_attentions": ["luong"],
    "warmup": 1,
}


@pytest.mark.slow
def test_jax_peers_worker_times_its_candidates():
    names = ["ours-stepwise-luong-train-jax", "ours-sequence-luong-train-jax",
             "ours-greedy_jax-b2", "ours-beam_jax-b2"]
    requests = [{"cmd": "setup", "sizes": TINY_PEERS}]
    requests += [{"cmd": "time", "name": name} for name in names]
    requests += [{"cmd": "quit"}]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.peers_jax"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        cwd=ROOT, env=_jax_env(), capture_output=True, text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    setup, *timed = [json.loads(x) for x in done.stdout.splitlines()]
    assert sorted(setup["names"]) == sorted(names)
    assert setup["jax_device"] and setup["jax"] and setup["keras"]
    assert len(timed) == len(names)
    assert all(answer["seconds"] > 0 for answer in timed)


@pytest.mark.tf_only
def test_peers_table_has_the_jax_rows():
    from benchmarks import peers

    sizes = dict(peers.SIZES[True], decode_batches=[1])
    names = ["tfa-luong-train", "tfa-bahdanau-train", "tutorial-train",
             "tfa-greedy-b1", "tfa-beam-b1"]
    names += [f"ours-{k}-{s}-train" for k in ("stepwise", "sequence")
              for s in ("luong", "bahdanau")]
    names += [f"ours-{n}-b1" for n in peers.DECODERS + tuple(
        peers.BEAM_OPTIONS)]
    times = {n: [1.0, 1.0, 1.0] for n in names}
    info = {"tfa": "0.23.0", "tensorflow": "2.15.1"}
    without = peers.summarise(sizes, times, 1e11, info)
    assert not [r for r in without["decoding"] if "JAX" in r["decoder"]]
    # JAX: training twice as fast as TFA, greedy 4x, beam as fast.
    times["ours-stepwise-luong-train-jax"] = [0.5, 0.5, 0.5]
    times["ours-greedy_jax-b1"] = [0.25, 0.25, 0.25]
    times["ours-beam_jax-b1"] = [1.0, 1.0, 1.0]
    jax_info = {"jax": "0.10.2", "keras": "3.15.1", "jax_device": "cpu"}
    result = peers.summarise(sizes, times, 1e11, info, jax_info=jax_info)
    training = {r["model"]: r for r in result["training"]}
    row = training["ours, stepwise, Luong scaled, " + peers.FAST_LABELS["jax"]]
    assert row["vs_tfa"] == 2.0
    assert row["tokens_per_s"] == 2 * training[
        "ours, stepwise, Luong scaled"]["tokens_per_s"]
    decoding = {r["decoder"]: r for r in result["decoding"]}
    assert decoding["greedy (ours on JAX, in jax.jit)"]["ratio"] == 4.0
    assert decoding["beam 3 (ours on JAX, in jax.jit)"][
        "ours_sentences_per_s"] == 1.0
    table = peers.markdown(result)
    assert "| greedy (ours on JAX, in jax.jit) | 1 | 4.0 | 1.0 | 4.00 |" in (
        table)
    assert "JAX rows: JAX 0.10.2, Keras 3.15.1, on cpu" in table
