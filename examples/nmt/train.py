"""Training of the NMT example: prepare the data, then `keras_attention.training.runs`.

`train` loads and splits the data and learns the WordPiece vocabularies
(`pipeline.prepare`, which returns them with the splits and, with guided
alignment, the reference links of each pair), writes run.json and the
held-out splits (`validation.tsv`, `test.tsv`: `corpus.corpus_rows`, which
`evaluate` reads back) and fits the model (`keras_attention.training.runs.fit`:
checkpoints, resumption, the run directory of
`keras_attention.training.run_dir`).

Guided alignment (`TrainConfig.guided_alignment`, docs/alignment.md): the
model is compiled with `keras_attention.alignment.GuidedAlignmentLoss` on
its `"alignment"` output beside the masked loss on `"logits"`.
"""

from keras_attention.training.splits import save_held_out
from keras_attention.training.runs import check_alignment_head
from keras_attention.training.runs import fit
from keras_attention.training.runs import start
from keras_attention.training.runs import with_vocabularies
from examples.nmt import pipeline
from examples.nmt import run as run_lib
from examples.nmt.corpus import corpus_rows


def train(run_dir, data_config, text_config, model_config, train_config,
          log=print, overwrite=False):
    """Trains a model into `run_dir`; returns `(seq2seq, history dict)`.

    The vocabulary sizes of `model_config` are set to those of the learned
    vocabularies (any value given is replaced). A finished run in `run_dir`
    is refused unless `overwrite`; an interrupted one resumes.
    """
    check_alignment_head(model_config, train_config)
    strategy, run_dir = start(run_dir, train_config, overwrite)
    prepared = pipeline.prepare(
        run_dir, data_config, text_config,
        links_path=train_config.guided_alignment, log=log,
    )
    source, target = prepared.source, prepared.target
    model_config = with_vocabularies(
        model_config, source, target, prepared.source_vocab
    )
    run_lib.save_run_config(
        run_dir, data_config, text_config, model_config, train_config,
        tokenizers=run_lib.tokenizers_section(run_dir, text_config),
    )
    save_held_out(run_dir, prepared.splits, corpus_rows)
    links = None
    if train_config.guided_alignment:
        links = {
            name: pipeline.guided_token_links(
                prepared.splits[name], prepared.links[name], source, target
            )
            for name in ("train", "validation")
        }
        linked = sum(bool(x) for x in links["train"])
        log(
            f"guided alignment: {linked}/{len(links['train'])} training "
            f"pairs with links from {train_config.guided_alignment}"
        )
    return fit(
        strategy, run_dir, prepared.splits, source, target, model_config,
        train_config, log=log, links=links,
    )
