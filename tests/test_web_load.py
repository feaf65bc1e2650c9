"""The web server under load and hostile clients, with an echo function
instead of a model (no TensorFlow): every request is answered (200 or a
503 with `Retry-After`), none is lost, no answer belongs to another
request. All traffic goes to a server the test starts on 127.0.0.1, in
loops bounded in count and time."""

import http.client
import json
import socket
import time

import pytest

from keras_attention import web
from keras_attention.web import loadtest
from keras_attention.web import pool


def test_bursts_are_all_answered_by_the_default_pool():
    # 3 bursts of 40 clients: the standard library's server (listen
    # backlog 5) reset about half of these connections.
    figures = loadtest.run_load(
        requests=120, concurrency=40, delay=0.005, time_limit=60
    )
    assert figures["lost"] == 0, figures
    assert figures["answered"] == figures["ok"] == 120, figures
    assert figures["mixed"] == 0


def test_a_full_queue_answers_503_never_a_reset():
    # 300 requests from 50 clients at once on 2 workers and a queue of 4:
    # most find the queue full.
    figures = loadtest.run_load(
        requests=300, concurrency=50, delay=0.02, workers=2, queue_size=4,
        time_limit=90,
    )
    assert figures["sent"] == figures["answered"] == 300, figures
    assert figures["lost"] == 0 and not figures["other"], figures
    assert figures["ok"] + figures["busy"] == 300
    assert figures["ok"] > 0 and figures["busy"] > 0, figures
    # Each 200 carries its own request's text; each 503 a Retry-After.
    assert figures["mixed"] == 0
    assert figures["p50_ms"] <= figures["p99_ms"]


def test_busy_reply_is_json_with_retry_after():
    server = web.make_server(loadtest.echo_translate(0.5), 0, workers=1,
                             queue_size=1)
    thread = web.start_in_thread(server)
    port = server.server_port
    body = json.dumps({"text": "hello"})
    conns = []
    try:
        # One request decoding, one waiting: the third finds the queue full.
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/api/translate", body,
                         {"Content-Type": "application/json"})
            conns.append(conn)
            time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/api/translate", body,
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        out = json.loads(response.read())
        conn.close()
        assert response.status == 503
        assert response.getheader("Retry-After") == str(pool.RETRY_AFTER)
        assert "json" in response.getheader("Content-Type")
        assert "busy" in out["error"]
        for conn in conns:  # the queued ones are still answered
            response = conn.getresponse()
            assert response.status == 200
            assert json.loads(response.read())["text"] == "hello"
            conn.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_listen_backlog_holds_a_burst():
    server = web.make_server(loadtest.echo_translate(0), 0)
    try:
        assert server.request_queue_size >= 128
        assert server.workers == pool.WORKERS
        assert server.queue_size == pool.QUEUE_SIZE
    finally:
        server.server_close()


@pytest.mark.parametrize("name,value", [
    ("workers", 0), ("workers", 1.5), ("queue_size", -1), ("queue_size", True),
])
def test_bad_pool_sizes(name, value):
    with pytest.raises(ValueError, match=name):
        web.make_server(loadtest.echo_translate(0), 0, **{name: value})


def test_silent_clients_hold_workers_not_the_server():
    # Connections that send nothing occupy the workers until
    # REQUEST_TIMEOUT; the others get a 503 at once instead of waiting.
    server = web.make_server(loadtest.echo_translate(0), 0, workers=1,
                             queue_size=1)
    thread = web.start_in_thread(server)
    silent = []
    try:
        for _ in range(2):
            silent.append(socket.create_connection(
                ("127.0.0.1", server.server_port), timeout=30))
        # Until the server holds both (the worker and the one queue place):
        # a probe then gets its 503 (bounded: at most 10 s of probes).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if loadtest.drive(server.server_port, 1, 1, time_limit=5)["busy"]:
                break
            time.sleep(0.05)
        figures = loadtest.drive(server.server_port, 5, 5, time_limit=30)
        # Every client is answered, none waits out the silent ones: 503s
        # (how many varies on a busy machine: 2 to 5 of 5 were seen, the
        # rest answered 200 once a place freed).
        assert figures["answered"] == 5 and figures["lost"] == 0, figures
        assert figures["busy"] >= 1, figures
    finally:
        for sock in silent:
            sock.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_loadtest_command_prints_the_table(capsys):
    assert loadtest.main(["--requests", "20", "--concurrency", "5",
                          "--delay", "0"]) == 0
    out = capsys.readouterr().out
    header, _, row = out.strip().splitlines()[:3]
    cells = dict(zip(header.strip("|").split("|"), row.strip("|").split("|")))
    cells = {k.strip(): v.strip() for k, v in cells.items()}
    assert cells["requests"] == "20" and cells["answered"] == "20"
    assert cells["lost"] == "0" and cells["mixed"] == "0"
