"""The command line of a recipe: train, export, translate, evaluate, demo
and serve on run directories (`keras_attention.training`).

A recipe (the NMT dates and fra-eng example, the G2P example) brings its
data readers, its defaults and its metrics; these modules give it the rest:

- `parser`: argparse groups generated from the settings dataclasses, the
  sub-commands with their shared flags and their checks, `read_texts`
  (the inputs of `translate`, read by `keras_attention.cli.io`), and
  `run_main` (one error line, exit status 2, for bad input);
- `decoding`: the decoding flags of `export` and `translate` and their
  checks, the translations of a SavedModel as lines, text grids and
  heatmaps;
- `demo`: the last steps of a demo (attention grids and heatmaps, the
  test split's metrics in `metrics.json`).
"""
