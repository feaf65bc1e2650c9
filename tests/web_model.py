"""The running page of the web tests: `running_server(path)` serves a
SavedModel (e.g. `tests.tiny_runs.nmt_export()`) on an ephemeral loopback
port."""

import contextlib


@contextlib.contextmanager
def running_server(path):
    """Yields the base URL of the page for the SavedModel at `path`."""
    from keras_attention import web
    from keras_attention.web.translator import SavedModelTranslator

    translator = SavedModelTranslator(path)
    server = web.make_server(translator.translate, 0, info={"title": "tiny"})
    thread = web.start_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
