"""A local web page for an exported seq2seq model.

`serve(path)` starts an HTTP server on `127.0.0.1` (the standard library's
`http.server` with a bounded pool of worker threads, `pool.py`; nothing to
install) for the string SavedModel at
`path` (see `translator.SavedModelTranslator` for the signatures it
calls). The page lets a person type a text and see its translations
(greedy, beam search and the n-best alternatives), the attention heatmap
of the chosen one and the word links drawn between the two sentences.
TensorFlow is needed only to load and call the SavedModel.

    python -m examples.nmt serve --model runs/demo      # then open the URL

Routes:

- `GET /`: the page;
- `GET /api/info`: the model directory and the request limits;
- `POST /api/translate`: a JSON object `{"text": str, "beam_width": int,
  "n_best": int}` (the last two optional) -> the JSON of
  `SavedModelTranslator.translate`.

Every error is a JSON object `{"error": message}` with a 4xx status: an
empty, too long or binary text, a body that is not UTF-8 JSON (or nested
too deep, or with too long a number), a body over `MAX_REQUEST_BYTES`
(413), a `POST` whose `Content-Type` is not `application/json` (415: a
page of another site cannot send one without the browser asking first), a
wrong field type, an unknown path (404), a wrong method (405). A request
that finds all workers busy and the queue full gets a 503 with a
`Retry-After` header. The decode length is bounded by the SavedModel (its maximum
output length) and the beam width and n-best size by `MAX_BEAM_WIDTH`.
"""

import json
import os
import re
import sys
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from typing import Callable
from typing import Optional

from keras_attention.web.page import PageOptions
from keras_attention.web.page import render_page
from keras_attention.web.pool import QUEUE_SIZE
from keras_attention.web.pool import WORKERS
from keras_attention.web.pool import PooledHTTPServer
from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from keras_attention.web.request_checks import DEFAULT_N_BEST
from keras_attention.web.request_checks import MAX_BEAM_WIDTH
from keras_attention.web.request_checks import MAX_REQUEST_BYTES
from keras_attention.web.request_checks import MAX_TEXT_CHARS
from keras_attention.web.request_checks import RequestError
from keras_attention.web.request_checks import parse_translate_request

HOST = "127.0.0.1"
# Seconds a connection may take to send its request.
REQUEST_TIMEOUT = 10
# The media type a `POST` must declare.
JSON_TYPE = "application/json"


def model_name(path: str) -> str:
    """The name a model directory shows as the page's heading.

    The directory's name (its parent's for a run's `export`), without a
    trailing `-` and hexadecimal digest such as the one of a cache
    directory (`g2p-pretrained-3f9c0a1b2c3d4e5f` -> `g2p-pretrained`).
    """
    path = os.path.normpath(os.path.abspath(path))
    name = os.path.basename(path)
    if name == "export":
        name = os.path.basename(os.path.dirname(path)) or name
    # 12 or more hex digits, one of them a letter: a date is kept.
    return re.sub(r"[-_.](?=[0-9]*[a-f])[0-9a-f]{12,}$", "", name) or name


class _Handler(BaseHTTPRequestHandler):
    """The routes of the page; `server.app` holds the translator."""

    server_version = "keras-attention-web"
    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.app["log"]:
            self.server.app["log"](
                f"{self.address_string()} {format % args}"
            )

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: Optional[dict] = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(
        self, status: int, value: Any, headers: Optional[dict] = None
    ) -> None:
        body = json.dumps(value, ensure_ascii=False, allow_nan=False)
        self._send(
            status, body.encode("utf-8"), "application/json; charset=utf-8",
            headers,
        )

    def send_error(
        self,
        code: int,
        message: Optional[str] = None,
        explain: Optional[str] = None,
    ) -> None:
        """Errors of the standard library (a malformed request line, an
        unsupported method) as JSON, like the page's own."""
        self.close_connection = True
        if getattr(self, "command", None) is None:
            self.command = "GET"
        # Answer with a status line and headers even to a line that is not
        # HTTP (which the standard library takes for HTTP/0.9).
        self.request_version = "HTTP/1.0"
        phrase = HTTPStatus(code).phrase if code in HTTPStatus else "Error"
        self._json(code, {"error": message or phrase})

    def _route(self) -> str:
        return urllib.parse.urlsplit(self.path).path

    def _method_not_allowed(self) -> None:
        route = self._route()
        allowed = {"/": "GET, HEAD", "/index.html": "GET, HEAD",
                   "/api/info": "GET, HEAD", "/api/translate": "POST"}
        if route not in allowed:
            self._not_found(route)
            return
        self.close_connection = True
        self._json(
            405,
            {"error": f"{self.command} is not allowed on {route}; use "
             f"{allowed[route]}"},
            {"Allow": allowed[route]},
        )

    def _not_found(self, route: str) -> None:
        self.close_connection = True
        self._json(
            404, {"error": f"No such page: {route[:200]!r}. The page is at /"}
        )

    def do_GET(self) -> None:
        route = self._route()
        if route in ("/", "/index.html"):
            page = self.server.app["page"]
            self._send(200, page, "text/html; charset=utf-8")
        elif route == "/api/info":
            self._json(200, self.server.app["info"])
        elif route == "/api/translate":
            self._method_not_allowed()
        else:
            self._not_found(route)

    do_HEAD = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise RequestError(411, "Send the body with a Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            raise RequestError(411, "The request needs a Content-Length")
        try:
            length = int(length)
        except ValueError:
            raise RequestError(
                400, f"Bad Content-Length. Received: {length[:40]!r}"
            ) from None
        if length < 0:
            raise RequestError(400, f"Bad Content-Length. Received: {length}")
        if length > MAX_REQUEST_BYTES:
            raise RequestError(
                413, f"The request body is over {MAX_REQUEST_BYTES} bytes. "
                f"Received: Content-Length {length}",
            )
        body = self.rfile.read(length)
        # Checked after the body is read, so that closing the connection
        # leaves no unread bytes (which would reset it before the reply).
        kind = self.headers.get("Content-Type", "")
        if kind.split(";")[0].strip().lower() != JSON_TYPE:
            raise RequestError(
                415, f"Send the body as JSON with 'Content-Type: {JSON_TYPE}'."
                f" Received: Content-Type {kind[:80]!r}",
            )
        return body

    def do_POST(self) -> None:
        route = self._route()
        if route != "/api/translate":
            self._method_not_allowed()
            return
        try:
            request = parse_translate_request(self._read_body())
        except RequestError as err:
            self.close_connection = True
            self._json(err.status, {"error": err.message})
            return
        start = time.perf_counter()
        try:
            result = dict(self.server.app["translate"](**request))
            result["seconds"] = round(time.perf_counter() - start, 3)
            result["text"] = request["text"]
            body = json.dumps(result, ensure_ascii=False, allow_nan=False)
        except Exception as err:  # noqa: BLE001, answered, never re-raised
            # A failure of the model is the server's, not the request's:
            # a 500 with a one-line message, the traceback in no answer.
            self.log_message("translation failed: %s", type(err).__name__)
            self.close_connection = True
            self._json(500, {"error": "The model failed on this input"})
            return
        self._send(
            200, body.encode("utf-8"), "application/json; charset=utf-8"
        )

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _method_not_allowed


def make_server(
    translate: Callable[..., dict],
    port: int = 0,
    info: Optional[dict] = None,
    log: Optional[Callable[[str], Any]] = None,
    page_options: Optional[PageOptions] = None,
    workers: int = WORKERS,
    queue_size: int = QUEUE_SIZE,
) -> PooledHTTPServer:
    """An HTTP server of the page on `127.0.0.1`, not yet started.

    Args:
        translate: A function `(text, beam_width, n_best) -> dict`, such
            as `SavedModelTranslator.translate`.
        port: The port; `0` picks a free one (`server.server_port`).
            Defaults to `0`.
        info: What `GET /api/info` shows besides the limits. Defaults to
            `{}`.
        log: A function of one string for each request, or `None` for
            none. Defaults to `None`.
        page_options: The page's words (`PageOptions`, e.g. `G2P_PAGE`).
            Defaults to `PageOptions()`.
        workers: Threads that answer requests. Defaults to `WORKERS`.
        queue_size: Connections that may wait for a worker; one more is
            answered 503 with `Retry-After`. Defaults to `QUEUE_SIZE`.

    Returns:
        A `PooledHTTPServer`: run it with `serve_forever()` (in a thread),
        stop it with `shutdown()` and `server_close()`.

    Raises:
        ValueError: if `port` is not an integer in `[0, 65535]`, or
            `workers` or `queue_size` not a positive integer.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not (
        0 <= port <= 65535
    ):
        raise ValueError(
            f"`port` must be an integer in [0, 65535]. Received: port={port!r}"
        )
    limits = {
        "max_request_bytes": MAX_REQUEST_BYTES,
        "max_text_chars": MAX_TEXT_CHARS,
        "max_beam_width": MAX_BEAM_WIDTH,
        "beam_width": DEFAULT_BEAM_WIDTH,
        "n_best": DEFAULT_N_BEST,
    }
    info = dict(info or {}, limits=limits)
    page = render_page(info, page_options).encode("utf-8")
    server = PooledHTTPServer((HOST, port), _Handler, workers, queue_size)
    server.app = {
        "translate": translate,
        "info": info,
        "page": page,
        "log": log,
    }
    return server


def start_in_thread(server: PooledHTTPServer) -> threading.Thread:
    """Runs `server.serve_forever()` in a daemon thread; returns it."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1},
        daemon=True,
    )
    thread.start()
    return thread


def serve(
    path: str,
    port: int = 8000,
    title: str = "",
    ready: Optional[Callable[[PooledHTTPServer], Any]] = None,
    page_options: Optional[PageOptions] = None,
) -> None:
    """Serves the page for the SavedModel at `path` until interrupted.

    Args:
        path: A SavedModel directory with the `serving_default`, `beam`
            and `nbest` signatures.
        port: The port on `127.0.0.1`; `0` picks a free one. Defaults to
            `8000`.
        title: The heading of the page. Defaults to the model's name
            (`model_name(path)`: the directory's, never a cache digest).
        ready: A function called with the server once it listens (its
            `shutdown()` stops `serve`). Defaults to `None`.
        page_options: The page's words (`NMT_PAGE`, `G2P_PAGE` or your
            own `PageOptions`); its `title`, when set, comes first.
            Defaults to `PageOptions()`.
    """
    from keras_attention.web.translator import SavedModelTranslator

    translator = SavedModelTranslator(path)
    # The first call of each signature is the slow one: made here, so that
    # the first request of the page is answered as fast as the next ones.
    print(f"loading {path}", flush=True)
    translator.translate("a", DEFAULT_BEAM_WIDTH, DEFAULT_N_BEST)
    name = model_name(path)
    title = (page_options and page_options.title) or title or name
    server = make_server(
        translator.translate, port,
        info={"model": name, "title": title},
        log=lambda line: print(line, file=sys.stderr),
        page_options=page_options,
    )
    print(
        f"serving {path} at http://{HOST}:{server.server_port}/ "
        "(Ctrl-C stops)", flush=True,
    )
    try:
        if ready is not None:
            ready(server)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def serve_model(
    model: str,
    export_run: Callable[[str, str], Any],
    port: int = 8000,
    export_dir: str = "export",
    page_options: Optional[PageOptions] = None,
) -> None:
    """Serves a SavedModel or a training run directory.

    Args:
        model: A SavedModel directory, or a run directory: its
            `export_dir` SavedModel when it has one, else the run is
            exported with `export_run` into a temporary directory (removed
            on exit).
        export_run: A function `(run_dir, out_dir)` that exports a run as
            a SavedModel with the signatures of `SavedModelTranslator`.
        port: The port on `127.0.0.1`. Defaults to `8000`.
        export_dir: The SavedModel directory inside a run. Defaults to
            `"export"`.
        page_options: The page's words, passed to `serve`. Defaults to
            `PageOptions()`.

    Raises:
        ValueError: if `model` is not a directory.
    """
    import tempfile

    if not os.path.isdir(model):
        raise ValueError(
            "`model` must be a SavedModel or a run directory. "
            f"Received: model={model!r}"
        )
    title = model_name(model)
    for path in (model, os.path.join(model, export_dir)):
        if os.path.exists(os.path.join(path, "saved_model.pb")):
            serve(path, port, title, page_options=page_options)
            return
    with tempfile.TemporaryDirectory(prefix="serve-") as tmp:
        out = os.path.join(tmp, export_dir)
        # The export traces every signature: tens of seconds with no other
        # sign of life, hence this line first.
        print(
            f"exporting {model} to a temporary folder {out} (about half a "
            "minute; removed on exit)",
            flush=True,
        )
        export_run(model, out)
        serve(out, port, title, page_options=page_options)
