"""The G2P model shipped in `examples/g2p/pretrained/`: it loads on a fresh
clone (no training, no data), pronounces common words, scores a lexicon,
and its export is cached by the weights' digest."""

import json
import os

import pytest

from examples.g2p import cli
from examples.g2p import pretrained

pytestmark = [pytest.mark.tf_only, pytest.mark.slow]

# Common words and their CMUdict pronunciations (no stress), each the only
# pronunciation CMUdict gives. The shipped model is trained on the
# training half of the standard split: a few of these are in it, and a
# model that had not learnt them would be broken.
COMMON = {
    "CAT": "K AE T",
    "DOG": "D AO G",
    "HOUSE": "HH AW S",
    "WATER": "W AO T ER",
    "NIGHT": "N AY T",
    "SPEAK": "S P IY K",
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(path)
    yield path
    if old is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = old


def test_shipped_run_is_complete_and_small():
    names = set(os.listdir(pretrained.DIRECTORY))
    assert {"run.json", pretrained.WEIGHTS} <= names
    size = sum(
        os.path.getsize(os.path.join(pretrained.DIRECTORY, n)) for n in names
    )
    assert size < 25 * 2**20
    with open(os.path.join(pretrained.DIRECTORY, "run.json")) as f:
        config = json.load(f)
    # No machine path in what is shipped.
    assert "/work/" not in json.dumps(config)


def test_translate_common_words(cache, capsys):
    assert cli.main(["translate", "--model", "pretrained", *COMMON]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    got = dict(line.split("\t")[:2] for line in lines)
    right = sum(got[word] == phones
                for word, phones in COMMON.items())
    assert right >= len(COMMON) - 1, got
    # Exported once, into the cache named after the weights.
    (exported,) = (cache / "keras-seq2seq-attention").iterdir()
    assert exported.name.startswith("g2p-pretrained-")
    assert (exported / "saved_model.pb").exists()


def test_evaluate_lexicon_with_the_shipped_model(cache, tmp_path, capsys):
    lexicon = tmp_path / "lexicon.tsv"
    lexicon.write_text(
        "".join(f"{w}\t{p}\n" for w, p in COMMON.items())
        + "CAT\tK AH T\n"  # a second reference for CAT
        + "malformed line\n"
    )
    out = tmp_path / "metrics.json"
    assert cli.main([
        "evaluate", "--run", "pretrained", "--lexicon", str(lexicon),
        "--beam-width", "2", "--json", str(out),
    ]) == 0
    metrics = json.loads(out.read_text())
    assert metrics["greedy"]["words"] == len(COMMON)
    assert metrics["greedy"]["skipped"] == 1
    assert metrics["greedy"]["wer"] <= 100 / len(COMMON) + 1e-9
    assert metrics["beam"]["wer"] <= 100 / len(COMMON) + 1e-9


def test_pretrained_is_a_name_not_a_path(tmp_path):
    assert pretrained.run_directory("runs/x") == "runs/x"
    assert pretrained.model_path(str(tmp_path)) == str(tmp_path)
    assert pretrained.run_directory("pretrained") == pretrained.DIRECTORY


def test_export_takes_the_pretrained_name(tmp_path, monkeypatch, capsys):
    """`export --run pretrained` (and `--ensemble pretrained`) export the
    shipped run, into `--out` only: its folder stays as shipped."""
    from examples.g2p import train as train_lib

    calls = []
    monkeypatch.setattr(
        train_lib, "export_run",
        lambda run, out, **options: calls.append((run, out, options)) or out,
    )
    out = str(tmp_path / "export")
    assert cli.main(["export", "--run", "pretrained", "--out", out,
                     "--ensemble", "pretrained", "runs/other"]) == 0
    (run, to, options), = calls
    assert run == pretrained.DIRECTORY and to == out
    assert options["ensemble"] == [pretrained.DIRECTORY, "runs/other"]
    assert cli.main(["export", "--run", "pretrained"]) == 2
    assert "needs `--out`" in capsys.readouterr().err
    assert len(calls) == 1


WORDS = [
    "cat", "dog", "house", "water", "night", "speak", "physics", "read",
    "through", "thought", "enough", "knight", "queue", "o'neill", "Zebra",
    "psychology", "rhythm", "xylophone", "beautiful", "tomorrow",
]


def test_translator_from_run_pronounces_as_the_example():
    """`Translator.from_run` on the shipped run directory gives the
    pronunciations of the example's own path: the `Seq2Seq` of run.json's
    model section and the example's fixed tokenizers in a
    `TranslatorModule`, decoded greedily."""
    import tensorflow as tf

    from examples.g2p import text as text_lib
    from examples.g2p import train as train_lib
    from keras_attention.training import run_dir as run_lib
    from keras_attention.serving import TranslatorModule
    from keras_attention.translator import Translator

    translator = Translator.from_run(pretrained.DIRECTORY)
    got = translator.translate(WORDS)
    seq2seq = run_lib.load_seq2seq(
        pretrained.DIRECTORY,
        train_lib.load_configs(pretrained.DIRECTORY)[1].model_arguments(),
    )
    module = TranslatorModule(
        seq2seq, *text_lib.framed(*text_lib.make_tokenizers()),
        max_output_tokens=text_lib.MAX_TOKENS,
    )
    out = module.translate(tf.constant(WORDS))
    expected = [t.decode("utf-8") for t in out["translation"].numpy()]
    assert got == expected
    assert got[WORDS.index("cat")] == "K AE T"
