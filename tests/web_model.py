"""Tiny exported models and the running page of the web tests.

`exported_model()` trains `tests.nmt_tiny` once per test process and
exports it; `g2p_run()` does the same for a tiny G2P run (the web and
test-set tests share them; the directories are removed at exit).
`running_server(path)` serves a SavedModel on an ephemeral loopback port.
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


@functools.lru_cache(maxsize=None)
def g2p_run():
    """The directory of a tiny trained and exported G2P run (once)."""
    from examples.g2p import config as g2p_config
    from examples.g2p import train as g2p_train
    from examples.nmt import config as nmt_config

    configs = (
        g2p_config.G2PDataConfig(validation_fraction=0.1, test_fraction=0.1),
        nmt_config.ModelConfig(),
        nmt_config.TrainConfig(),
    )
    settings = g2p_config.merge(
        g2p_config.G2P_SETTINGS, g2p_config.QUICK_DEMO_SETTINGS,
        {"train": {"verbose": 0, "batch_size": 32},
         "data": {"max_words": 200}},
    )
    configs = nmt_config.replace(configs, settings, g2p_config.SECTIONS)
    root = tempfile.mkdtemp(prefix="web-g2p-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    g2p_train.train(root, *configs, log=lambda *_: 0)
    g2p_train.export_run(root)
    return root


@contextlib.contextmanager
def running_server(path):
    """Yields the base URL of the page for the SavedModel at `path`."""
    from keras_attention.seq2seq import web
    from keras_attention.seq2seq.web.translator import SavedModelTranslator

    translator = SavedModelTranslator(path)
    server = web.make_server(translator.translate, 0, info={"title": "tiny"})
    thread = web.start_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
