"""An HTTP server with a bounded pool of workers, for `keras_attention.web`.

The standard library's `ThreadingHTTPServer` starts one thread per
connection and listens with a backlog of 5: a burst of 40 clients gets
connection resets, and a flood gets as many threads as it opens
connections. `PooledHTTPServer` instead

- listens with a backlog of `LISTEN_BACKLOG` connections, so a burst waits
  in the kernel instead of being reset;
- hands each accepted connection to one of `workers` threads through a
  queue of at most `queue_size` connections;
- answers a connection that finds the queue full with a `503` JSON reply
  and a `Retry-After` header (from a bounded number of short-lived
  threads, never more than `MAX_REJECTING` at once), never a reset.

Each connection carries one request (HTTP/1.0, closed after the answer),
so one worker answers it from its first byte to its last: a reply never
mixes with another request's.
"""

import json
import queue
import socket
import threading
from http.server import HTTPServer
from typing import Any
from typing import Optional

# Connections the kernel holds before `accept` (the `listen` backlog).
LISTEN_BACKLOG = 256
# Threads that answer requests.
WORKERS = 8
# Accepted connections waiting for a worker; one more gets a 503.
QUEUE_SIZE = 64
# Seconds a busy client is told to wait (`Retry-After`).
RETRY_AFTER = 1
# Connections answered with a 503 at once; beyond, closed at once.
MAX_REJECTING = 32
# Seconds a 503 waits for the client to read it and close.
REJECT_TIMEOUT = 2.0


def busy_reply(queued: int) -> bytes:
    """The whole `503` HTTP response to a connection the queue cannot take."""
    body = json.dumps({
        "error": f"The server is busy ({queued} requests waiting): retry in "
        f"{RETRY_AFTER} s",
    }).encode("utf-8")
    head = (
        "HTTP/1.0 503 Service Unavailable\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Retry-After: {RETRY_AFTER}\r\n"
        "Cache-Control: no-store\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class PooledHTTPServer(HTTPServer):
    """An `HTTPServer` whose requests `workers` threads answer.

    Args:
        server_address: `(host, port)`.
        handler: The `BaseHTTPRequestHandler` subclass.
        workers: The number of worker threads. Defaults to `WORKERS`.
        queue_size: The most connections waiting for a worker; one more
            is answered `503`. Defaults to `QUEUE_SIZE`.

    Raises:
        ValueError: if `workers` or `queue_size` is not a positive integer.
    """

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(
        self,
        server_address: tuple,
        handler: Any,
        workers: int = WORKERS,
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        for name, value in (("workers", workers), ("queue_size", queue_size)):
            if isinstance(value, bool) or not isinstance(value, int) or (
                value < 1
            ):
                raise ValueError(
                    f"`{name}` must be a positive integer. Received: "
                    f"{name}={value!r}"
                )
        self.workers = workers
        self.queue_size = queue_size
        # Unbounded as a `Queue`; only the accept loop puts connections and
        # it checks the size first, so the bound holds and `server_close`
        # can always put its stop marks.
        self._queue: "queue.Queue[Optional[tuple]]" = queue.Queue()
        self._rejecting = threading.BoundedSemaphore(MAX_REJECTING)
        super().__init__(server_address, handler)
        self._threads = [
            threading.Thread(target=self._work, daemon=True,
                             name=f"web-worker-{i}")
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def process_request(self, request: socket.socket, client_address: Any) -> None:
        """Queues the connection for a worker, or answers it `503`."""
        queued = self._queue.qsize()
        if queued < self.queue_size:
            self._queue.put((request, client_address))
            return
        if not self._rejecting.acquire(blocking=False):
            self.shutdown_request(request)
            return
        threading.Thread(
            target=self._reject, args=(request, queued), daemon=True
        ).start()

    def _reject(self, request: socket.socket, queued: int) -> None:
        try:
            request.settimeout(REJECT_TIMEOUT)
            request.sendall(busy_reply(queued))
            request.shutdown(socket.SHUT_WR)
            # Read what the client sent until it closes: closing a socket
            # with unread bytes sends a reset, which can destroy the reply
            # before the client reads it.
            for _ in range(64):
                if not request.recv(4096):
                    break
        except OSError:
            pass
        finally:
            request.close()
            self._rejecting.release()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            request, client_address = item
            try:
                self.finish_request(request, client_address)
            except Exception:  # noqa: BLE001, as socketserver does
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    def server_close(self) -> None:
        """Closes the socket, the waiting connections and the workers."""
        super().server_close()
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self.shutdown_request(item[0])
        for _ in self._threads:
            self._queue.put(None)
