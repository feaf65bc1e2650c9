"""A Keras callback that shows attention alignments forming during training."""

import os
import warnings
from typing import Any
from typing import Callable
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

import keras

from keras_attention.visualization import heatmap
from keras_attention.visualization import text_grid
from keras_attention.checks import check_positive_int


class AttentionPlotCallback(keras.callbacks.Callback):
    """Every `every_n_epochs` epochs, plots the attention of fixed sentences.

    At the end of every `every_n_epochs`-th epoch the callback calls
    `translate_fn(sentences)`, which decodes a few fixed validation
    sentences with the model being trained (for instance with
    `keras_attention.decoding.greedy_decode`) and returns, for each, its
    source tokens, target tokens and attention weights. Each heatmap
    (`keras_attention.visualization.plot_attention`) is written

    - as a TensorBoard image under `log_dir` (TensorFlow backend: the images
      appear in TensorBoard's "Images" tab, one slider step per epoch);
    - as a PNG file `{png_dir}/{name}_epoch{epoch:04d}_{i}.png`.

    On the JAX and PyTorch backends TensorBoard images are not written (the
    callback does not import TensorFlow there): the PNGs go to `png_dir`,
    or to `log_dir` when only that is given.

    Args:
        translate_fn: Callable `sentences -> list of (source_tokens,
            target_tokens, weights)`, with `weights` of shape
            `(len(target_tokens), len(source_tokens))` or larger (cropped).
        sentences: The fixed inputs passed to `translate_fn` (a list of
            strings, a tensor of token ids, ...).
        every_n_epochs: Positive integer. Defaults to `1`.
        log_dir: Optional TensorBoard log directory (can be the one of
            `keras.callbacks.TensorBoard`; the images go to its `attention`
            subdirectory).
        png_dir: Optional directory for PNG files.
        name: Prefix of the image names. Defaults to `"attention"`.
        verbose: If `1`, also prints the text grid of each sentence
            (`attention_text_grid`). Defaults to `0`.
        plot_kwargs: Optional dict of keyword arguments for
            `plot_attention` (e.g. `{"vmax": 1.0}`).

    Raises:
        ValueError: if `every_n_epochs` is not a positive integer or neither
            `log_dir` nor `png_dir` is given.
        ImportError: if matplotlib is not installed.

    Example:

    ```python
    def translate_fn(sentences):
        out = keras_attention.decoding.greedy_decode(step_fn, ...)
        ...
        return [(src_words, tgt_words, weights), ...]

    model.fit(ds, epochs=10, callbacks=[AttentionPlotCallback(
        translate_fn, ["Hello there.", "How are you?"], every_n_epochs=2,
        log_dir="logs", png_dir="attention_png")])
    ```
    """

    def __init__(
        self,
        translate_fn: Callable[[Any], Sequence[tuple]],
        sentences: Any,
        every_n_epochs: int = 1,
        log_dir: Optional[str] = None,
        png_dir: Optional[str] = None,
        name: str = "attention",
        verbose: int = 0,
        plot_kwargs: Optional[dict] = None,
    ):
        super().__init__()
        every_n_epochs = check_positive_int("every_n_epochs", every_n_epochs)
        if log_dir is None and png_dir is None:
            raise ValueError(
                "AttentionPlotCallback needs somewhere to write: pass "
                "`log_dir` (TensorBoard) and/or `png_dir`. Received: "
                "log_dir=None, png_dir=None"
            )
        heatmap.require_matplotlib()  # fail early, with the hint
        self.translate_fn = translate_fn
        self.sentences = sentences
        self.every_n_epochs = every_n_epochs
        self.log_dir = log_dir
        self.png_dir = png_dir
        self.name = name
        self.verbose = verbose
        self.plot_kwargs = dict(plot_kwargs or {})
        self._writer = None
        self.written = []  # (epoch, png path or None) for each image
        if log_dir is not None and not self._tensorboard_enabled():
            warnings.warn(
                "AttentionPlotCallback writes TensorBoard images only on the "
                f"TensorFlow backend (active: {keras.backend.backend()}); "
                "writing PNG files to "
                f"{png_dir if png_dir is not None else log_dir} instead.",
                stacklevel=2,
            )

    def _tensorboard_enabled(self):
        return (
            self.log_dir is not None and keras.backend.backend() == "tensorflow"
        )

    def _png_dir(self):
        if self.png_dir is not None:
            return self.png_dir
        if not self._tensorboard_enabled():
            return self.log_dir
        return None

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        if (epoch + 1) % self.every_n_epochs == 0:
            self.plot(epoch + 1)

    def plot(self, epoch: int) -> List[str]:
        """Decodes the sentences and writes their heatmaps for `epoch`.

        Returns the list of PNG paths written (empty with TensorBoard only).
        """
        results = list(self.translate_fn(self.sentences))
        png_dir = self._png_dir()
        paths, images = [], []
        for i, (source, target, weights) in enumerate(results):
            kwargs = {"title": f"epoch {epoch}"}
            kwargs.update(self.plot_kwargs)
            path = None
            if png_dir is not None:
                path = os.path.join(
                    png_dir, f"{self.name}_epoch{epoch:04d}_{i}.png"
                )
            figure = heatmap.plot_attention(
                weights, source, target, path=path, **kwargs
            )
            if self._tensorboard_enabled():
                images.append(
                    heatmap.figure_to_png(
                        figure, dpi=self.plot_kwargs.get("dpi", 100)
                    )
                )
            if path is not None:
                paths.append(path)
            self.written.append((epoch, path))
            if self.verbose:
                print(
                    f"\n{self.name} {i}, epoch {epoch}:\n"
                    + text_grid.attention_text_grid(weights, source, target)
                )
        if images:
            self._write_images(images, epoch)
        return paths

    def _write_images(
        self, images: Sequence[Tuple[bytes, int, int]], epoch: int
    ):
        # TensorBoard's image summary format, written with TensorFlow's own
        # `tf.summary.write`: the `tensorboard` package is not needed to
        # write the logs, only to view them.
        import tensorflow as tf
        from tensorflow.core.framework import summary_pb2

        if self._writer is None:
            self._writer = tf.summary.create_file_writer(
                os.path.join(self.log_dir, "attention")
            )
        metadata = summary_pb2.SummaryMetadata()
        metadata.plugin_data.plugin_name = "images"
        with self._writer.as_default():
            for i, (png, width, height) in enumerate(images):
                tf.summary.write(
                    f"{self.name}/{i}",
                    tf.constant([str(width), str(height), png]),
                    step=epoch,
                    metadata=metadata,
                )
        self._writer.flush()

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
