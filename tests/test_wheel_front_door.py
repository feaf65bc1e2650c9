"""The front door from the installed wheel, as a new user meets it.

Run by `make wheel-test` (tools/test_wheel.sh) in a fresh environment with
only the wheel installed, from a folder outside the source tree:

- the tutorial's script (`examples/translator_quickstart.py`, shown in
  docs/translator.md) runs; a fresh process loads its `.keras` file after
  only `import keras_attention` and gives the script's translations, and
  another serves its export with plain TensorFlow, giving the same;
- the console script `keras-seq2seq-attention` trains on a small TSV,
  translates, exports, translates with the export and serves it.

The main test run leaves this file to `make wheel-test` (Makefile).
"""

import ast
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

ROOT = os.environ.get(
    "KERAS_ATTENTION_SOURCE_ROOT",
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
)
SCRIPT = os.path.join(ROOT, "examples", "translator_quickstart.py")
BIN = os.path.dirname(sys.executable)
# The sentences the script translates first (its first printed line).
SENTENCES = ["le petit chat noir", "un chien"]


def run(args, cwd, timeout=600, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, (args, done.stderr[-3000:])
    return done.stdout


def test_tutorial_script_docs_and_fresh_processes(tmp_path):
    docs = os.path.join(ROOT, "docs", "translator.md")
    with open(SCRIPT) as f:
        code = f.read()
    body = code[code.index('"""', 3) + 3:].strip()
    assert len([line for line in body.splitlines() if line.strip()]) <= 20
    with open(docs) as f:
        assert body in f.read(), "docs/translator.md shows another script"
    shutil.copy(SCRIPT, tmp_path / "quickstart.py")
    out = run([sys.executable, "quickstart.py"], tmp_path).splitlines()
    greedy = ast.literal_eval(out[0])
    assert len(greedy) == 2 and all(isinstance(t, str) for t in greedy)
    model = tmp_path / "runs" / "translator" / "model.keras"
    load = (
        "import json, sys, keras, keras_attention\n"
        "m = keras.models.load_model(sys.argv[1])\n"
        "print(json.dumps(m.translate(json.loads(sys.argv[2]))))\n"
    )
    loaded = run([sys.executable, "-c", load, str(model),
                  json.dumps(SENTENCES)], tmp_path)
    assert json.loads(loaded.splitlines()[-1]) == greedy
    serve = (
        "import json, sys, tensorflow as tf, tensorflow_text\n"
        "m = tf.saved_model.load(sys.argv[1])\n"
        "out = m.signatures['serving_default'](tf.constant("
        "json.loads(sys.argv[2])))['translation']\n"
        "print(json.dumps([t.decode() for t in out.numpy()]))\n"
    )
    served = run([sys.executable, "-c", serve,
                  str(tmp_path / "runs" / "translator" / "export"),
                  json.dumps(SENTENCES)], tmp_path)
    assert json.loads(served.splitlines()[-1]) == greedy


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_console_script_trains_translates_exports_serves(tmp_path):
    cli = os.path.join(BIN, "keras-seq2seq-attention")
    assert os.path.exists(cli), "the wheel installs no console script"
    pairs = [("le chat", "the cat"), ("un chien", "a dog"),
             ("le chien noir", "the black dog"), ("un chat blanc",
                                                  "a white cat")] * 10
    (tmp_path / "pairs.tsv").write_text(
        "\ufeff" + "".join(f"{s}\t{t}\r\n" for s, t in pairs),
        encoding="utf-8")
    run([cli, "train", "--data", "pairs.tsv", "--out", "m.keras",
         "--tokenizer", "whitespace", "--units", "8", "--embedding-dim",
         "8", "--epochs", "2"], tmp_path)
    keras_out = run([cli, "translate", "--model", "m.keras", "le chat",
                     "un chien"], tmp_path)
    assert len(keras_out.splitlines()) == 2
    run([cli, "export", "--model", "m.keras", "--out", "export"], tmp_path)
    export_out = run([cli, "translate", "--model", "export", "le chat",
                      "un chien"], tmp_path)
    assert export_out == keras_out
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    server = subprocess.Popen(
        [cli, "serve", "--model", "export", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        reply = None
        while time.monotonic() < deadline and server.poll() is None:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/translate",
                data=json.dumps({"text": "le chat"}).encode(),
                headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=30) as r:
                    reply = json.loads(r.read())
                break
            except OSError:
                time.sleep(1)
        assert reply is not None, "the server never answered"
        assert json.dumps(reply)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def test_console_script_exports_litert_and_onnx_for_the_client(tmp_path):
    """`export --format litert|onnx` from the installed wheel (with its
    `[export]` extra), `translate` on each file, and the client copied
    beside the model, run from a folder of its own: the `.keras`
    model's translations."""
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("onnxruntime")
    cli = os.path.join(BIN, "keras-seq2seq-attention")
    pairs = [("le chat", "the cat"), ("un chien", "a dog"),
             ("le chien noir", "the black dog")] * 10
    (tmp_path / "pairs.tsv").write_text(
        "".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    run([cli, "train", "--data", "pairs.tsv", "--out", "m.keras",
         "--tokenizer", "whitespace", "--units", "8", "--embedding-dim",
         "8", "--epochs", "2"], tmp_path)
    texts = ["le chat", "un chien noir"]
    keras_out = run([cli, "translate", "--model", "m.keras", *texts],
                    tmp_path)
    for name in ("m.tflite", "m.onnx"):
        fmt = "litert" if name.endswith(".tflite") else "onnx"
        run([cli, "export", "--model", "m.keras", "--out", name,
             "--format", fmt], tmp_path)
        assert run([cli, "translate", "--model", name, *texts],
                   tmp_path) == keras_out
    device = tmp_path / "device"
    device.mkdir()
    for name in ("m.tflite", "m.vocab.json", "translator_client.py"):
        shutil.copy(tmp_path / name, device)
    assert run([sys.executable, "translator_client.py", "m.tflite", *texts],
               device) == keras_out
