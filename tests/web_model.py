"""The tiny exported NMT model and the running page of the web tests.

`exported_model()` trains `tests.nmt_tiny` once per test process and
exports it (both web test files use it; the directory is removed at
exit). `running_server(path)` serves it on an ephemeral loopback port.
"""

import atexit
import contextlib
import functools
import shutil
import tempfile


@functools.lru_cache(maxsize=None)
def exported_model():
    """The SavedModel directory of a tiny trained run (trained once)."""
    from examples.nmt import export as export_lib
    from tests import nmt_tiny

    root = tempfile.mkdtemp(prefix="web-model-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    nmt_tiny.train_tiny(root)
    return export_lib.export_run(root)


@contextlib.contextmanager
def running_server(path):
    """Yields the base URL of the page for the SavedModel at `path`."""
    from keras_attention.seq2seq import web
    from keras_attention.seq2seq.web_translator import SavedModelTranslator

    translator = SavedModelTranslator(path)
    server = web.make_server(translator.translate, 0, info={"title": "tiny"})
    thread = web.start_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
