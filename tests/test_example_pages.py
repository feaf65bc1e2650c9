"""Each example's web page speaks of its own task, and the first use of the
pretrained G2P model says that it exports."""

import os

import pytest

pytestmark = pytest.mark.tf_only


@pytest.mark.parametrize("example, page", [("g2p", "G2P_PAGE"),
                                           ("nmt", "NMT_PAGE")])
def test_serve_passes_the_examples_page(monkeypatch, example, page):
    import importlib

    from keras_attention import web

    calls = []
    monkeypatch.setattr(web, "serve_model",
                        lambda *args, **kwargs: calls.append(kwargs))
    importlib.import_module(f"examples.{example}.serve").serve("run", 0)
    assert calls[0]["page_options"] is getattr(web, page)
    assert "vendredi" not in web.G2P_PAGE.placeholder


def test_first_use_of_the_pretrained_model_says_so(monkeypatch, tmp_path,
                                                   capsys):
    from examples.g2p import pretrained
    from examples.g2p import train as train_lib

    monkeypatch.setattr(pretrained, "cache_directory",
                        lambda: str(tmp_path / "cache" / "export"))

    def fake_export(run, out):
        os.makedirs(out)
        open(os.path.join(out, "saved_model.pb"), "w").close()

    monkeypatch.setattr(train_lib, "export_run", fake_export)
    path = pretrained.saved_model()
    # On stderr: stdout holds the command's answers.
    assert "exporting it to" in capsys.readouterr().err
    assert pretrained.saved_model() == path
    assert capsys.readouterr().err == ""
