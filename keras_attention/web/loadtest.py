"""A load test of the web server, on 127.0.0.1 only.

    python -m keras_attention.web.loadtest --requests 600 --concurrency 50

starts a server of `make_server` around an echo function (no model: it
sleeps `--delay` seconds and answers the text it was given) on a free
loopback port, sends `--requests` requests from `--concurrency` client
threads in bursts (each round, every client connects at the same moment
and sends one request), and prints what came back: how many requests were
answered (200 or 503), how many were lost (no answer: a reset, a timeout),
how many answers belonged to another request, and the p50 and p99
latencies. Every loop is bounded in count and in time (`--time-limit`).
`run_load` is the same from Python; the tests call it with small counts.
"""

import argparse
import http.client
import json
import math
import threading
import time
from typing import Any
from typing import Callable
from typing import Optional
from typing import Sequence

from keras_attention.web.pool import QUEUE_SIZE
from keras_attention.web.pool import WORKERS

HOST = "127.0.0.1"


def echo_translate(delay: float) -> Callable[..., dict]:
    """A translate function that sleeps `delay` seconds and echoes."""

    def translate(text: str, beam_width: int, n_best: int) -> dict:
        time.sleep(delay)
        hyp = {"translation": text, "score": 0.0, "log_prob": 0.0,
               "target_tokens": [], "target_words": [], "attention": [],
               "links": []}
        return {"source_tokens": [], "source_words": [], "greedy": hyp,
                "beam": hyp, "nbest": [hyp] * n_best}

    return translate


def _percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The nearest-rank `q`-th percentile, or `None` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _one_request(port: int, text: str, timeout: float) -> dict:
    """One `POST /api/translate`: its status and whether the answer is the
    request's own."""
    body = json.dumps({"text": text, "beam_width": 2, "n_best": 1})
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    start = time.perf_counter()
    try:
        conn.request("POST", "/api/translate", body,
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        data = json.loads(response.read())
    finally:
        conn.close()
    seconds = time.perf_counter() - start
    status = response.status
    if status == 200:
        own = (data.get("text") == text
               and data["greedy"]["translation"] == text)
    elif status == 503:
        own = bool(response.getheader("Retry-After")) and "error" in data
    else:
        own = True
    return {"status": status, "seconds": seconds, "own": own}


def drive(
    port: int,
    requests: int,
    concurrency: int,
    time_limit: float = 60.0,
    timeout: float = 30.0,
) -> dict:
    """Sends `requests` requests from `concurrency` threads to a server on
    `127.0.0.1:port`, in bursts of `concurrency`.

    Returns:
        A dict: `requests`, `concurrency`, `sent`, `answered`, `ok` (200),
        `busy` (503), `other` (`{status: count}`), `lost` (no answer),
        `mixed` (a 200 with another request's text, or a 503 without
        `Retry-After`), `p50_ms`, `p99_ms` (of the answered requests),
        `seconds`.
    """
    deadline = time.monotonic() + time_limit
    rounds = math.ceil(requests / concurrency)
    barrier = threading.Barrier(concurrency)
    results, lost, lock = [], [], threading.Lock()

    def client(index: int) -> None:
        for round_ in range(rounds):
            try:
                barrier.wait(timeout=max(0.0, deadline - time.monotonic()))
            except threading.BrokenBarrierError:
                barrier.abort()
            number = round_ * concurrency + index
            if number >= requests or time.monotonic() >= deadline:
                continue
            try:
                result = _one_request(port, f"request {number}", timeout)
            except (OSError, http.client.HTTPException, ValueError) as err:
                with lock:
                    lost.append(type(err).__name__)
                continue
            with lock:
                results.append(result)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()) + timeout)
    seconds = time.perf_counter() - start
    statuses = [r["status"] for r in results]
    other = {}
    for status in statuses:
        if status not in (200, 503):
            other[status] = other.get(status, 0) + 1
    latencies = [r["seconds"] * 1000 for r in results]
    p50, p99 = _percentile(latencies, 50), _percentile(latencies, 99)
    return {
        "requests": requests,
        "concurrency": concurrency,
        "sent": len(results) + len(lost),
        "answered": len(results),
        "ok": statuses.count(200),
        "busy": statuses.count(503),
        "other": other,
        "lost": len(lost),
        "lost_errors": sorted(set(lost)),
        "mixed": sum(not r["own"] for r in results),
        "p50_ms": None if p50 is None else round(p50, 1),
        "p99_ms": None if p99 is None else round(p99, 1),
        "seconds": round(seconds, 2),
    }


def run_load(
    requests: int = 600,
    concurrency: int = 50,
    delay: float = 0.01,
    workers: int = WORKERS,
    queue_size: int = QUEUE_SIZE,
    time_limit: float = 60.0,
    make: Optional[Callable[..., Any]] = None,
) -> dict:
    """Starts a server around `echo_translate(delay)` and drives it.

    Args:
        requests: How many requests in all.
        concurrency: How many client threads (the size of each burst).
        delay: Seconds each translation sleeps.
        workers: The server's worker threads.
        queue_size: The server's queue of waiting connections.
        time_limit: Seconds after which no new request is sent.
        make: The server factory, `make_server` unless given (another
            server can be measured with the same clients).

    Returns:
        The dict of `drive`, with `delay`, `workers` and `queue_size`.
    """
    from keras_attention.web.server import make_server
    from keras_attention.web.server import start_in_thread

    if make is None:
        server = make_server(echo_translate(delay), 0, workers=workers,
                             queue_size=queue_size)
    else:
        server = make(echo_translate(delay), 0)
    thread = start_in_thread(server)
    try:
        figures = drive(server.server_port, requests, concurrency,
                        time_limit=time_limit)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    return dict(figures, delay=delay, workers=workers, queue_size=queue_size)


def report(figures: dict) -> str:
    """The figures of `run_load` as a Markdown table row and its header."""
    columns = ("requests", "concurrency", "workers", "queue_size", "delay",
               "answered", "ok", "busy", "lost", "mixed", "p50_ms", "p99_ms",
               "seconds")
    header = "| " + " | ".join(columns) + " |"
    rule = "|" + "---|" * len(columns)
    row = "| " + " | ".join(str(figures[c]) for c in columns) + " |"
    return "\n".join((header, rule, row))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; returns 0 when no request was lost or mixed."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_attention.web.loadtest",
        description="Load test of the web server on 127.0.0.1 with an "
        "echo model.",
    )
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.01,
                        help="seconds each translation sleeps")
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--queue-size", type=int, default=QUEUE_SIZE)
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds after which no request is sent")
    args = parser.parse_args(argv)
    if not (1 <= args.requests <= 100_000 and 1 <= args.concurrency <= 1000):
        parser.error("--requests must be in [1, 100000] and --concurrency "
                     "in [1, 1000]")
    figures = run_load(args.requests, args.concurrency, args.delay,
                       args.workers, args.queue_size, args.time_limit)
    print(report(figures))
    if figures["other"] or figures["lost_errors"]:
        print(f"other statuses: {figures['other']}; lost: "
              f"{figures['lost_errors']}")
    lost = figures["lost"] or figures["mixed"] or (
        figures["sent"] != figures["requests"]
    )
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
