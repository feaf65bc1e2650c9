"""Training a `Seq2Seq` into a run directory (TensorFlow: `tf.data` and
`tf.distribute`).

- `settings`: `ModelConfig` (the `Seq2Seq` arguments) and `TrainConfig`
  (the optimisation settings), dataclasses whose fields are also flags.
- `runs`: `start` (strategy, seeds, the worker's directory) and `fit` (the
  model under the strategy and the dtype policy, compiled, fitted on the
  `tf.data` batches, written to the run directory).
- `loop`: `compile_seq2seq` and the resumable training loop (checkpoints,
  backup, early stopping, `history.json`).
- `dataset`: `make_dataset`, the bucketed `tf.data` batches of pairs.
- `distillation`: the teachers' averaged next-token distributions that a
  distilled model learns (`teacher_distributions`, `check_teachers`).
- `run_dir`: the run directory's files (`run.json`, weights,
  checkpoints, held-out splits).
- `splits`: the deterministic train/validation/test split by a hash.
- `acceleration`: mixed precision and XLA chosen per machine.
- `distribute`: `tf.distribute` strategies and multi-worker helpers.
"""
