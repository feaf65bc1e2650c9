"""The timing processes of `benchmarks.peers`: their protocol, both ends.

A worker is a process of its own (TFA 0.23 in its venv,
`benchmarks/peers_tfa.py`; our models on JAX, `benchmarks/peers_jax.py`)
that builds its candidates and times one call of one of them when asked.
It reads one JSON object a line on stdin and answers each with one JSON
line on stdout:

- `{"cmd": "setup", "sizes": {...}}`: builds the candidates, traces them
  (warm-up) and answers `{"names": [...], ...}` with the versions it runs.
- `{"cmd": "time", "name": NAME}`: runs one call of NAME (a training step
  or a decode) and answers `{"seconds": s}`.
- `{"cmd": "quit"}`.

`Worker` is the other end, in `benchmarks.peers`: it sends one command
and waits for its answer, so the processes never run at the same time and
rounds interleave across processes as `benchmarks.common.interleaved`
does within one. Plain Python: a worker imports this module whatever
framework it runs.
"""

import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def serve(setup, versions, sync, stdin=None, stdout=None):
    """Answers the commands of `Worker` until `quit` or the end of stdin.

    Args:
        setup: `sizes -> {name: zero-argument call}`, warmed up.
        versions: dict added to the answer of `setup` (what runs).
        sync: waits for the result of a call (reads it back to the host).
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    calls = {}
    for line in stdin:
        request = json.loads(line)
        if request["cmd"] == "setup":
            calls = setup(request["sizes"])
            answer = dict(versions, names=sorted(calls))
        elif request["cmd"] == "time":
            start = time.perf_counter()
            sync(calls[request["name"]]())
            answer = {"seconds": time.perf_counter() - start}
        elif request["cmd"] == "quit":
            break
        else:
            answer = {"error": f"unknown command {request['cmd']!r}"}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


class Worker:
    """A worker process (`python -m MODULE` in the repository's root), one
    command at a time over pipes; `env`: its environment."""

    def __init__(self, python, module, sizes, env=None):
        self.process = subprocess.Popen(
            [python, "-m", module],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.info = self.ask({"cmd": "setup", "sizes": sizes})

    def ask(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker {self.process.args[-1]} exited")
        return json.loads(line)

    def timer(self, name):
        return lambda: self.ask({"cmd": "time", "name": name})["seconds"]

    def close(self):
        try:
            self.ask({"cmd": "quit"})
        except (RuntimeError, BrokenPipeError):
            pass
        self.process.wait(timeout=60)
