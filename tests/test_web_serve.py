"""The local web page (`keras_attention.web`) on a tiny exported
model, through real HTTP requests on the loopback interface."""

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

from keras_attention import web
from keras_attention.web import server as web_server
from keras_attention.web.translator import hypothesis_json
from tests import tiny_runs
from tests import web_model

pytestmark = pytest.mark.tf_only


@pytest.fixture(scope="module")
def saved_model():
    return tiny_runs.nmt_export()


@pytest.fixture(scope="module")
def url(saved_model):
    with web_model.running_server(saved_model) as base:
        yield base


def request(base, method, path, body=None, headers=None):
    """`(status, headers, parsed JSON or text)` of one request."""
    host, port = base.rsplit("/", 1)[-1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        kind = response.getheader("Content-Type", "")
        value = json.loads(data) if "json" in kind else data.decode()
        return response.status, response, value
    finally:
        conn.close()


def translate(base, payload):
    body = payload if isinstance(payload, bytes) else json.dumps(payload)
    return request(
        base, "POST", "/api/translate", body,
        {"Content-Type": "application/json"},
    )


def test_page_and_info(url):
    status, response, page = request(url, "GET", "/")
    assert status == 200 and "text/html" in response.getheader("Content-Type")
    assert '<svg id="heatmap"' in page and '<svg id="links"' in page
    assert "<title>tiny" in page
    status, _, info = request(url, "GET", "/api/info?x=1")
    assert status == 200
    assert info["limits"]["max_text_chars"] == web.MAX_TEXT_CHARS
    assert info["limits"]["max_beam_width"] == web.MAX_BEAM_WIDTH


def test_translate_greedy_beam_nbest(url, saved_model):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    text = "vendredi 20 octobre 1933"
    status, _, out = translate(url, {"text": text, "beam_width": 3,
                                     "n_best": 3})
    assert status == 200, out
    # The decode time is reported, not judged (speed is benchmarks' job).
    assert out["text"] == text and isinstance(out["seconds"], (int, float))
    source = out["source_tokens"]
    assert source[-1] == "[END]" and "" not in source
    assert "".join(out["source_words"]) == text.replace(" ", "")
    # The page's greedy answer is the SavedModel's own.
    direct = tf.saved_model.load(saved_model).signatures["serving_default"](
        tf.constant([text])
    )
    assert out["greedy"]["translation"] == (
        direct["translation"].numpy()[0].decode()
    )
    hypotheses = [out["greedy"], out["beam"]] + out["nbest"]
    assert 1 <= len(out["nbest"]) <= 3
    # n-best at k = the beam width: its best is the beam search result.
    assert out["nbest"][0]["translation"] == out["beam"]["translation"]
    for hyp in hypotheses:
        weights = np.asarray(hyp["attention"])
        assert weights.shape == (len(hyp["target_tokens"]), len(source))
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-3)
        for s, t in hyp["links"]:
            assert 0 <= s < len(out["source_words"])
            assert 0 <= t < len(hyp["target_words"])
    scores = [h["score"] for h in out["nbest"]]
    assert scores == sorted(scores, reverse=True)


def test_serve_until_shutdown(saved_model, capsys):
    import threading

    servers = []
    thread = threading.Thread(
        target=web.serve, args=(saved_model, 0, "mine", servers.append),
        daemon=True,
    )
    thread.start()
    try:
        deadline = time.monotonic() + 300
        while not servers and thread.is_alive() and (
            time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert servers, "the server did not start"
        base = f"http://127.0.0.1:{servers[0].server_port}"
        status, _, info = request(base, "GET", "/api/info")
        assert status == 200 and info["title"] == "mine"
    finally:
        if servers:
            servers[0].shutdown()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert f"at {base}/" in capsys.readouterr().out


def test_g2p_page_links_letters_to_phones():
    run_dir = tiny_runs.g2p_run()[0]
    with web_model.running_server(os.path.join(run_dir, "export")) as base:
        status, _, out = translate(base, {"text": "Hello", "n_best": 2})
    assert status == 200, out
    assert out["source_words"] == list("hello")
    for hyp in [out["greedy"], out["beam"]] + out["nbest"]:
        assert hyp["target_words"] == hyp["target_tokens"]
        assert " ".join(hyp["target_tokens"]) == hyp["translation"]
        targets = [t for _, t in hyp["links"]]
        assert len(set(targets)) == len(targets)  # argmax: one per phone
        assert all(0 <= s < 5 for s, _ in hyp["links"])


def test_hypothesis_json_words_and_links():
    hyp = hypothesis_json(
        b"Friday 20", -0.5, float("-inf"),
        ["vend", "##redi", "20", "[END]"], ["Friday", "20"],
        [[0.5, 0.3, 0.1, 0.1], [0.0, 0.1, 0.8, 0.1]],
    )
    assert hyp["translation"] == "Friday 20"
    assert hyp["target_words"] == ["Friday", "20"]
    assert hyp["links"] == [[0, 0], [1, 1]]
    assert hyp["score"] == -0.5 and hyp["log_prob"] is None


BAD_BODIES = [
    ({"text": ""}, 400, "empty"),
    ({"text": "   \n "}, 400, "empty"),
    ({"text": "x" * (web.MAX_TEXT_CHARS + 1)}, 400, "over"),
    ({"text": "a\u0000b"}, 400, "control"),
    ({"text": "a\ud800b"}, 400, "surrogate"),
    ({"text": 3}, 400, "string"),
    ({}, 400, "string"),
    ({"text": "ok", "extra": 1}, 400, "Unknown fields"),
    ({"text": "ok", "beam_width": 0}, 400, "between"),
    ({"text": "ok", "beam_width": 100}, 400, "between"),
    ({"text": "ok", "n_best": "3"}, 400, "integer"),
    ({"text": "ok", "n_best": True}, 400, "integer"),
    (b"{", 400, "not JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (b'{"text": "\xff\xfe"}', 400, "UTF-8"),
    (bytes(range(256)), 400, "UTF-8"),
    (b"x" * (web.MAX_REQUEST_BYTES + 1), 413, "bytes"),
    # These two dropped the connection (RecursionError, and the ValueError
    # of int() beyond 4,300 digits, raised inside json.loads).
    (b"[" * 16000, 400, "nested"),
    (b'{"text": "a", "beam_width": ' + b"9" * 5000 + b"}", 400, "number"),
    (b'{"text": "a", "n_best": -' + b"1" * 5000 + b"}", 400, "number"),
    (b'{"text": ' + b"{" * 9 + b"}" * 9 + b"}", 400, "nested"),
]


@pytest.mark.parametrize("body,status,words", BAD_BODIES)
def test_bad_bodies_get_a_clear_4xx(url, body, status, words):
    got, response, out = translate(url, body)
    assert got == status and "json" in response.getheader("Content-Type")
    assert words in out["error"] and "Traceback" not in out["error"]


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("GET", "/api/translate", 405),
        ("PUT", "/api/translate", 405),
        ("DELETE", "/", 405),
        ("PATCH", "/api/info", 405),
        ("POST", "/", 405),
        ("GET", "/nope", 404),
        ("POST", "/nope", 404),
        ("GET", "/../etc/passwd", 404),
    ],
)
def test_wrong_method_or_path(url, method, path, status):
    got, response, out = request(url, method, path, body=b"{}")
    assert got == status and "error" in out
    if status == 405:
        assert response.getheader("Allow")


def test_missing_length_and_huge_length(url):
    host, port = url.rsplit("/", 1)[-1].split(":")
    for head, status in (
        ("POST /api/translate HTTP/1.1\r\nHost: x\r\n\r\n", 411),
        ("POST /api/translate HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n",
         413),
        ("POST /api/translate HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
        ("GARBAGE\r\n\r\n", 400),
        ("FOO / HTTP/1.1\r\n\r\n", 501),
    ):
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head.encode())
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        status_line, _, rest = data.partition(b"\r\n")
        assert int(status_line.split()[1]) == status, data
        body = json.loads(rest.partition(b"\r\n\r\n")[2])
        assert body["error"] and b"Traceback" not in data


def test_model_failure_is_a_500_without_traceback():
    def failing(**_):
        raise RuntimeError("secret internals")

    server = web.make_server(failing, 0)
    thread = web.start_in_thread(server)
    try:
        assert server.server_address[0] == "127.0.0.1"
        status, _, out = translate(
            f"http://127.0.0.1:{server.server_port}", {"text": "hello"}
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert status == 500
    assert "secret" not in out["error"] and "Traceback" not in out["error"]


@pytest.mark.parametrize("port", [-1, 70000, "80", True])
def test_bad_port(port):
    with pytest.raises(ValueError, match="port"):
        web.make_server(lambda **_: {}, port)


def test_serve_model_exports_a_run_without_export(tmp_path, monkeypatch):
    served, exported = [], []

    def export_run(run, out):
        exported.append((run, out))
        os.makedirs(out)
        open(os.path.join(out, "saved_model.pb"), "wb").close()

    monkeypatch.setattr(
        web_server, "serve", lambda path, port, title, **_: served.append(
            (path, os.path.exists(os.path.join(path, "saved_model.pb")),
             port, title)
        )
    )
    run = tmp_path / "my-run"
    run.mkdir()
    web.serve_model(str(run), export_run, port=0)
    ((path, existed, port, title),) = served
    assert exported == [(str(run), path)] and existed
    assert port == 0 and title == "my-run"
    assert not os.path.exists(path)  # the temporary export is removed
    # A run with an export is served from it, not exported again.
    export_run(None, str(run / "export"))
    web.serve_model(str(run), export_run, port=0)
    assert served[-1][0] == str(run / "export") and len(exported) == 2


def test_serve_model_needs_a_directory(tmp_path):
    with pytest.raises(ValueError, match="run directory"):
        web.serve_model(str(tmp_path / "missing"), lambda run, out: None)


@pytest.mark.parametrize("example", ["nmt", "g2p"])
def test_cli_serve_command(example, tmp_path, monkeypatch):
    """`python -m examples.EXAMPLE serve --model RUN --port N` serves the
    run's export, or exports the run with the example's own function."""
    import importlib

    cli = importlib.import_module(f"examples.{example}.cli")
    served, exported = [], []
    monkeypatch.setattr(
        web_server, "serve",
        lambda path, port, title, **_: served.append((path, port)),
    )
    export_module = {"nmt": "examples.nmt.serve",
                     "g2p": "examples.g2p.train"}[example]
    monkeypatch.setattr(
        importlib.import_module(export_module), "export_run",
        lambda run, out: exported.append((run, out)),
    )
    run = tmp_path / "run"
    (run / "export").mkdir(parents=True)
    (run / "export" / "saved_model.pb").write_bytes(b"")
    assert cli.main(["serve", "--model", str(run), "--port", "0"]) == 0
    assert served == [(str(run / "export"), 0)] and not exported
    assert cli.main(["serve", "--model", str(run / "export"), "--port", "9"]) == 0
    assert served[-1] == (str(run / "export"), 9)
    other = tmp_path / "other"
    other.mkdir()
    assert cli.main(["serve", "--model", str(other)]) == 0
    ((exported_run, out),) = exported
    assert exported_run == str(other) and served[-1] == (out, 8000)
    assert cli.main(["serve", "--model", str(tmp_path / "none")]) == 2


@pytest.fixture()
def echo_server():
    """A server of an echo function (no model), and its base URL."""
    from keras_attention.web import loadtest

    def start(**options):
        server = web.make_server(loadtest.echo_translate(0), 0, **options)
        thread = web.start_in_thread(server)
        started.append((server, thread))
        return f"http://127.0.0.1:{server.server_port}"

    started = []
    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("kind", [
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
    None, "application/jsonp", "text/json",
])
def test_post_needs_a_json_content_type(echo_server, kind):
    # A page of another site can POST text/plain, form and multipart
    # bodies without the browser asking the server first (a "simple"
    # request); application/json needs that permission, never given here.
    base = echo_server()
    headers = {} if kind is None else {"Content-Type": kind}
    status, response, out = request(
        base, "POST", "/api/translate", json.dumps({"text": "hi"}), headers
    )
    assert status == 415 and "json" in response.getheader("Content-Type")
    assert "application/json" in out["error"]


@pytest.mark.parametrize("kind", [
    "application/json", "application/json; charset=utf-8",
    "Application/JSON;charset=UTF-8",
])
def test_json_content_types_are_read(echo_server, kind):
    status, _, out = request(
        echo_server(), "POST", "/api/translate", json.dumps({"text": "hi"}),
        {"Content-Type": kind},
    )
    assert status == 200 and out["greedy"]["translation"] == "hi"


def test_page_copy_is_the_callers(echo_server):
    status, _, page = request(echo_server(page_options=web.G2P_PAGE), "GET", "/")
    assert status == 200
    assert 'placeholder="physics"' in page and ">Pronounce</button>" in page
    assert "vendredi" not in page and ">Translate<" not in page
    for word in web.G2P_PAGE.examples:
        assert f'class="example">{word}</button>' in page
    own = web.PageOptions(title="<Mine>", intro="Say __BUTTON__",
                          placeholder='a "b"', button="Go")
    _, _, page = request(
        echo_server(info={"title": "ignored"}, page_options=own), "GET", "/"
    )
    assert "<h1>&lt;Mine&gt;</h1>" in page and "<title>&lt;Mine&gt;" in page
    assert 'placeholder="a &quot;b&quot;"' in page and ">Go</button>" in page
    assert "Say __BUTTON__" in page  # one pass: no placeholder in values
    _, _, page = request(echo_server(page_options=web.NMT_PAGE), "GET", "/")
    assert 'placeholder="vendredi 20 octobre 1933"' in page


@pytest.mark.parametrize("path,name", [
    ("/x/keras-seq2seq-attention/g2p-pretrained-3f9c0a1b2c3d4e5f",
     "g2p-pretrained"),
    ("runs/demo/export", "demo"),
    ("runs/demo/", "demo"),
    ("runs/fra-20240101123045", "fra-20240101123045"),  # a date is kept
])
def test_model_name_is_never_a_cache_digest(path, name):
    assert web_server.model_name(path) == name


def test_pretrained_cache_directory_is_served_under_its_name(
    tmp_path, monkeypatch
):
    served = []
    monkeypatch.setattr(
        web_server, "serve",
        lambda path, port, title, **options: served.append((title, options)),
    )
    cache = tmp_path / "g2p-pretrained-3f9c0a1b2c3d4e5f"
    cache.mkdir()
    (cache / "saved_model.pb").write_bytes(b"")
    web.serve_model(str(cache), None, port=0, page_options=web.G2P_PAGE)
    assert served == [("g2p-pretrained", {"page_options": web.G2P_PAGE})]


def test_score_column_is_explained(echo_server):
    _, _, page = request(echo_server(), "GET", "/")
    note = re.search(r'<p id="score-note"[^>]*>(.*?)</p>', page, re.S)
    assert note, "no note under the table of hypotheses"
    text = " ".join(note.group(1).split())
    assert "sum of its tokens' log-probabilities" in text
    assert "length penalty" in text and "beam" in text


def test_serve_model_says_it_exports_before_exporting(tmp_path, monkeypatch,
                                                      capsys):
    said = []

    def export_run(run, out):
        said.append(capsys.readouterr().out)
        os.makedirs(out)

    monkeypatch.setattr(web_server, "serve", lambda *a, **k: None)
    web.serve_model(str(tmp_path), export_run, port=0)
    (line,) = said[0].splitlines()
    assert line.startswith(f"exporting {tmp_path} to a temporary folder")
    assert "half a minute" in line


# A document of just what the page's script touches: enough to run its
# `translate` with a stubbed `fetch` under Node.
_FAKE_DOM = r"""
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.attrs = {};
    this.listeners = {}; this.textContent = ""; this.value = "";
    this.hidden = false;
    this.classList = {add() {}, remove() {}}; }
  get firstChild() { return this.children[0] || null; }
  appendChild(c) { c.parent = this; this.children.push(c); return c; }
  replaceChildren() { this.children = []; }
  remove() { if (this.parent) this.parent.children =
    this.parent.children.filter(c => c !== this); }
  setAttribute(k, v) { this.attrs[k] = v; }
  addEventListener(k, f) { this.listeners[k] = f; }
  getComputedTextLength() { return 10; }
}
const nodes = {};
for (const id of ["text", "translate", "beam_width", "n_best", "status",
    "error", "hypotheses", "links", "heatmap", "score-note"]) {
  nodes[id] = new Node(id);
}
nodes.beam_width.value = "2"; nodes.n_best.value = "1";
globalThis.document = {
  getElementById: id => nodes[id],
  createElement: t => new Node(t),
  createElementNS: (ns, t) => new Node(t),
  querySelectorAll: () => [],
};
const hyp = {translation: "x y", score: -1.5, target_tokens: ["x", "y"],
  target_words: ["x", "y"], attention: [[1], [1]], links: [[0, 0]]};
const answers = [
  {ok: true, status: 200, json: async () => ({source_tokens: ["a"],
    source_words: ["a"], greedy: hyp, beam: hyp, nbest: [hyp],
    seconds: 0.1})},
  {ok: false, status: 400, json: async () => ({error: "`text` is empty"})},
];
globalThis.fetch = async () => answers.shift();
"""

_CHECK = r"""
(async () => {
  await translate();
  const before = nodes.hypotheses.children.length;
  const drawn = nodes.heatmap.children.length;
  await translate();
  console.log(JSON.stringify({before: before, drawn: drawn,
    after: nodes.hypotheses.children.length,
    heatmap: nodes.heatmap.children.length,
    links: nodes.links.children.length, error: nodes.error.textContent,
    note_hidden: nodes["score-note"].hidden}));
})();
"""


@pytest.mark.skipif(not shutil.which("node"), reason="needs Node.js")
def test_an_error_clears_the_previous_results(echo_server, tmp_path):
    _, _, page = request(echo_server(), "GET", "/")
    script = re.findall(r"<script>\n(.*?)</script>", page, re.S)[-1]
    path = tmp_path / "page.js"
    path.write_text(_FAKE_DOM + script + _CHECK)
    run = subprocess.run(["node", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    state = json.loads(run.stdout)
    assert state["before"] == 4 and state["drawn"] > 0  # head + 3 rows
    assert state["error"] == "`text` is empty"
    assert state["after"] == state["heatmap"] == state["links"] == 0
    assert state["note_hidden"]
