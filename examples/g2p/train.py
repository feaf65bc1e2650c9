"""Training, loading and export of a G2P run.

The run directory has the layout of `keras_attention.training.run_dir`:
`run.json` (the three sections of `config.SECTIONS`), the held-out splits
(`validation.tsv`, `test.tsv`: `WORD<TAB>PHONES` a pronunciation,
`data.lexicon_rows`), checkpoints, backup, logs, `model.weights.h5`,
`history.json`, `export/`. There are no vocabulary files: the letters and
the phones are fixed (`text.py`) and run.json's `"tokenizers"` section
holds them, so `Translator.from_run` reloads a run by itself. The fitting itself
is `keras_attention.training.runs.fit`, and the SavedModel is
`keras_attention.serving.TranslatorModule` with the G2P
processors: a word in, its phones and the attention out.
"""

import types
import zlib

from keras_attention.training import distillation
from keras_attention.training import runs as training_runs
from keras_attention.training import settings as settings_lib
from keras_attention.training.splits import save_held_out
from examples.g2p import config as config_lib
from examples.g2p import data as data_lib
from examples.g2p import text as text_lib
from keras_attention.training import run_dir as run_lib
from keras_attention.translator import Translator
from keras_attention.translator import runs


def load_lexicon(data_config):
    """The configured lexicon, cut to `max_words` words (by word hash)."""
    if data_config.lexicon == "cmudict":
        lexicon = data_lib.load_cmudict()
    else:
        lexicon = data_lib.read_lexicon(data_config.lexicon)
    if data_config.max_words is not None:
        keep = sorted(
            lexicon.entries, key=lambda w: zlib.crc32(w.encode("utf-8"))
        )[: data_config.max_words]
        lexicon = data_lib.Lexicon(
            {w: lexicon.entries[w] for w in sorted(keep)},
            lexicon.skipped,
            lexicon.reasons,
            lexicon.lines,
        )
    if not len(lexicon):
        raise ValueError(
            f"No usable words in lexicon={data_config.lexicon!r}: "
            f"{lexicon.skipped} entries skipped "
            f"({data_lib.skip_report(lexicon)})"
        )
    return lexicon


def load_splits(data_config):
    """`{split name: Lexicon}` of the configured data."""
    return data_lib.split_lexicon(
        load_lexicon(data_config),
        data_config.validation_fraction,
        data_config.test_fraction,
    )


def as_corpus(lexicon):
    """One `(word, "PH ON ES")` pair per pronunciation, for the pipeline
    (`keras_attention.training.dataset.make_dataset` reads `pairs`)."""
    return types.SimpleNamespace(pairs=data_lib.lexicon_rows(lexicon))


def tokenizers_section():
    """run.json's `"tokenizers"` section: the fixed vocabularies, framed as
    `text.framed` frames them."""
    return runs.tokenizers_section(
        *text_lib.make_tokenizers(),
        max_tokens=text_lib.MAX_TOKENS,
        source_end_token=text_lib.SOURCE_END_TOKEN,
    )


def make_processors():
    """`(source, target)` framed tokenizers (`text.framed`): a word's
    letters, `[END]` added; the phones."""
    return text_lib.framed(*text_lib.make_tokenizers())


def train(run_dir, data_config, model_config, train_config, log=print,
          overwrite=False):
    """Trains a G2P model into `run_dir`; returns `(seq2seq, history)`.
    A finished run in `run_dir` is refused unless `overwrite`; an
    interrupted one resumes."""
    strategy, run_dir = training_runs.start(run_dir, train_config, overwrite)
    splits = load_splits(data_config)
    log(
        "data: "
        + ", ".join(f"{n} {len(s)} words" for n, s in splits.items())
        + f" ({splits['train'].skipped} entries skipped"
        + (f": {data_lib.skip_report(splits['train'])})"
           if splits["train"].skipped else ")")
    )
    source, target = make_processors()
    model_config = training_runs.with_vocabularies(
        model_config, source, target, text_lib.SOURCE_VOCABULARY
    )
    config = settings_lib.to_dicts(
        (data_config, model_config, train_config), config_lib.SECTIONS
    )
    config[runs.TOKENIZERS] = tokenizers_section()
    run_lib.save_run_config(run_dir, config)
    save_held_out(run_dir, splits, data_lib.lexicon_rows)
    corpora = {name: as_corpus(lex) for name, lex in splits.items()}
    teachers = None
    if train_config.teachers:
        teachers = distillation.check_teachers(
            [load_translator(r) for r in train_config.teachers],
            *(t.vocabulary for t in text_lib.make_tokenizers()),
        )
    return training_runs.fit(
        strategy, run_dir, corpora, source, target, model_config,
        train_config, log=log, teachers=teachers,
    )


def load_configs(run_dir):
    """The `(data, model, train)` configs of a run's run.json.

    Raises:
        ValueError: if the directory has no run.json.
    """
    return settings_lib.from_dicts(
        run_lib.load_run_config(run_dir), config_lib.SECTIONS
    )


def load_translator(run_dir, weights=None):
    """The `Translator` of a trained G2P run (`Translator.from_run`); a run
    written before run.json named its tokenizers gets the fixed ones."""
    config = run_lib.load_run_config(run_dir)
    if runs.TOKENIZERS in config:
        return Translator.from_run(run_dir, weights)
    seq2seq = run_lib.load_seq2seq(
        run_dir, load_configs(run_dir)[1].model_arguments(), weights
    )
    return Translator(
        seq2seq, *text_lib.make_tokenizers(), max_tokens=text_lib.MAX_TOKENS,
        source_end_token=text_lib.SOURCE_END_TOKEN,
    )


def load_trained(run_dir, weights=None):
    """`(seq2seq, source, target, configs)` of a trained G2P run, the
    tokenizers framed."""
    translator = load_translator(run_dir, weights)
    return (
        translator.seq2seq, *translator.framed_tokenizers,
        load_configs(run_dir),
    )


def export_run(run_dir, out=None, ensemble=(), **options):
    """Exports a trained run as a SavedModel (`Translator.export`: words
    in; phones, tokens, attention out), to `RUN/export` by default.

    `ensemble`: more run directories, decoded together with this one by
    averaging the models' probabilities (G2P vocabularies are fixed, so any
    runs combine). `options` go to `TranslatorModule` (`coverage_penalty`,
    `convention`, `replace_unknown`, `xla`). Unlike
    `keras_attention.translator.export_run`, it also reads G2P runs written
    before run.json named their tokenizers (`load_translator`)."""
    return load_translator(run_dir).export(
        out or run_lib.run_path(run_dir, run_lib.EXPORT),
        ensemble=[load_translator(r) for r in ensemble],
        **options,
    )
