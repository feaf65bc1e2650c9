"""A local web page for an exported seq2seq model (standard-library HTTP
server on 127.0.0.1; TensorFlow only to load and call the SavedModel).

- `serve(path)`, `serve_model(model, export_run)`: serve a SavedModel or a
  run directory (`server.py`);
- `make_server(translate, ...)`, `start_in_thread(server)`: the server of
  any translate function, for tests and embedding;
- `PageOptions`, `NMT_PAGE`, `G2P_PAGE`: the page's words (`page.py`, the
  page); `pool.py` the bounded pool of worker threads; `request_checks.py`
  the request checks and limits; `translator.py` the SavedModel calls and
  the JSON answers; `loadtest.py` a load test of the server.
"""

from keras_attention.web.page import G2P_PAGE
from keras_attention.web.page import NMT_PAGE
from keras_attention.web.page import PageOptions
from keras_attention.web.request_checks import MAX_BEAM_WIDTH
from keras_attention.web.request_checks import MAX_REQUEST_BYTES
from keras_attention.web.request_checks import MAX_TEXT_CHARS
from keras_attention.web.request_checks import RequestError
from keras_attention.web.server import make_server
from keras_attention.web.server import serve
from keras_attention.web.server import serve_model
from keras_attention.web.server import start_in_thread

__all__ = [
    "G2P_PAGE",
    "MAX_BEAM_WIDTH",
    "MAX_REQUEST_BYTES",
    "MAX_TEXT_CHARS",
    "NMT_PAGE",
    "PageOptions",
    "RequestError",
    "make_server",
    "serve",
    "serve_model",
    "start_in_thread",
]
