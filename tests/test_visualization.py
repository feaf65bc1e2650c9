"""Tests of the attention heatmaps, text grids and the plotting callback."""

import os
import struct
import sys

import keras
import numpy as np
import pytest

from keras_attention import visualization
from keras_attention.callbacks import AttentionPlotCallback
from keras_attention.visualization import attention_text_grid
from keras_attention.visualization import display_width
from keras_attention.visualization import plot_attention

pytest.importorskip("matplotlib")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) read from the PNG header."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == PNG_SIGNATURE
    return struct.unpack(">II", head[16:24])


# ----------------------------------------------------------------------
# Text grid.


def test_text_grid_of_hand_made_matrix():
    weights = [
        [0.9, 0.1, 0.0],
        [0.3, 0.7, 0.0],
        [0.0, 0.45, 0.55],
        [0.19, 0.2, 0.61],
    ]
    grid = attention_text_grid(
        weights, ["le", "chat", "."], ["the", "cat", "sat", "."]
    )
    expected = "\n".join(
        [
            "    le chat .",
            "the ██",
            "cat ░░ ▓▓▓▓",
            "sat    ▒▒▒▒ ▒▒",
            ".      ░░░░ ▓▓",
        ]
    )
    assert grid == expected


def test_text_grid_levels_are_floor_of_weight_times_shades():
    # With shades "0123" a weight w gets digit min(floor(4 w), 3).
    weights = np.array([[0.0, 0.249, 0.25, 0.5, 0.74, 0.75, 1.0]])
    grid = attention_text_grid(
        weights, list("abcdefg"), ["x"], shades="0123", cell_width=1
    )
    assert grid.splitlines() == ["  a b c d e f g", "x 0 0 1 2 2 3 3"]


def test_text_grid_aligns_wide_and_combining_characters():
    # "猫" and "chat" are 2 and 4 columns wide; "é" written as e + U+0301
    # is 1 column. Every cell starts right below its token.
    source = ["猫", "chat", "e\u0301"]
    target = ["ねこ", "x"]
    weights = [[1.0, 0.0, 0.0], [0.0, 0.5, 1.0]]
    grid = attention_text_grid(weights, source, target, shades=".#")
    lines = grid.splitlines()
    assert lines == [
        "     猫 chat e\u0301",
        "ねこ ## .... ..",
        "x    .. #### ##",
    ]
    # Display widths: the header's last token is 1 column in a 2-column cell
    # (trailing space stripped).
    assert [display_width(line) for line in lines] == [14, 15, 15]
    assert display_width("ねこ") == 4
    assert display_width("e\u0301") == 1


def test_text_grid_relative_rows_and_cropping():
    # Weights padded to 3 x 4 by a decoder: only 2 x 2 are shown. In
    # relative mode each row is divided by its largest weight.
    weights = np.zeros((3, 4))
    weights[0, :2] = [0.1, 0.05]
    weights[1, :2] = [0.02, 0.08]
    grid = attention_text_grid(
        weights, ["a", "b"], ["x", "y"], shades="01234", relative=True
    )
    assert grid.splitlines() == ["  a  b", "x 44 22", "y 11 44"]
    absolute = attention_text_grid(
        weights, ["a", "b"], ["x", "y"], shades="01234"
    )
    assert absolute.splitlines() == ["  a  b", "x 00 00", "y 00 00"]


def test_text_grid_truncates_long_tokens():
    grid = attention_text_grid(
        [[1.0]], ["internationalisation"], ["y"], max_label_length=6
    )
    assert grid.splitlines() == ["  inter…", "y ██████"]


def test_text_grid_bad_input():
    with pytest.raises(ValueError, match=r"weights.shape=\(1, 2\)"):
        attention_text_grid([[0.5, 0.5]], ["a", "b", "c"], ["x"])
    with pytest.raises(ValueError, match=r"weights.shape=\(2,\)"):
        attention_text_grid([0.5, 0.5], ["a", "b"], ["x"])
    with pytest.raises(ValueError, match="shades"):
        attention_text_grid([[1.0]], ["a"], ["x"], shades="#")
    with pytest.raises(ValueError, match="shades"):
        attention_text_grid([[1.0]], ["a"], ["x"], shades=" 猫")
    with pytest.raises(ValueError, match="cell_width"):
        attention_text_grid([[1.0]], ["a"], ["x"], cell_width=0)


def test_text_grid_accepts_tensors_bytes_and_strings():
    weights = keras.ops.convert_to_tensor([[0.9, 0.1], [0.3, 0.7]])
    grid = attention_text_grid(weights[None], [b"le", b"chat"], "the cat")
    assert grid == "    le chat\nthe ██\ncat ░░ ▓▓▓▓"


# ----------------------------------------------------------------------
# Figures.


def _tick_texts(labels):
    return [label.get_text() for label in labels]


def test_plot_attention_axes_labels_and_shape(tmp_path):
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(4), size=3)
    source = ["le", "chat", "noir", "."]
    target = ["the", "black", "cat"]
    path = tmp_path / "sub" / "attention.png"
    figure = plot_attention(
        weights, source, target, title="greedy", path=str(path)
    )
    ax = figure.axes[0]
    assert _tick_texts(ax.get_xticklabels()) == source
    assert _tick_texts(ax.get_yticklabels()) == target
    assert ax.get_xlabel() == "source"
    assert ax.get_ylabel() == "target"
    assert ax.get_title() == "greedy"
    image = ax.images[0]
    np.testing.assert_allclose(image.get_array(), weights)
    assert image.get_array().shape == (3, 4)
    assert image.get_clim() == (0.0, weights.max())
    assert not ax.xaxis_inverted()
    assert len(figure.axes) == 2  # heatmap and colour bar
    # PNG written, non-empty, of the figure's size in pixels.
    assert path.stat().st_size > 1000
    width, height = png_size(path)
    assert (width, height) == tuple(
        int(round(x)) for x in figure.get_size_inches() * figure.dpi
    )


def test_save_attention_plot_writes_the_png(tmp_path):
    weights = np.array([[0.9, 0.1], [0.2, 0.8]])
    path = tmp_path / "saved.png"
    figure = visualization.save_attention_plot(
        str(path), weights, ["vendredi", "1933"], ["Friday", "1933"], title="t"
    )
    assert figure.axes[0].get_title() == "t"
    np.testing.assert_allclose(figure.axes[0].images[0].get_array(), weights)
    assert path.stat().st_size > 1000
    assert png_size(path) == tuple(
        int(round(x)) for x in figure.get_size_inches() * figure.dpi
    )


def test_plot_attention_crops_padded_weights_and_annotates():
    weights = np.zeros((5, 6))
    weights[:2, :3] = [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]
    figure = plot_attention(
        weights,
        ["a", "b", "c"],
        ["x", "y"],
        annotate=True,
        colorbar=False,
        vmax=1.0,
    )
    ax = figure.axes[0]
    assert len(figure.axes) == 1
    np.testing.assert_allclose(ax.images[0].get_array(), weights[:2, :3])
    assert ax.images[0].get_clim() == (0.0, 1.0)
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == sorted(["0.20", "0.30", "0.50", "1.00", "0.00", "0.00"])


def test_plot_attention_on_given_axes():
    from matplotlib.figure import Figure

    figure = Figure()
    ax = figure.add_subplot(1, 2, 2)
    out = plot_attention([[1.0]], ["a"], ["x"], ax=ax, colorbar=False)
    assert out is figure
    assert ax.images[0].get_array().shape == (1, 1)


def test_plot_attention_long_inputs_scale_and_rotate():
    source = [f"token{i}" for i in range(60)] + ["a" * 40]
    target = [f"w{i}" for i in range(50)]
    weights = np.full((50, 61), 1.0 / 61)
    figure = plot_attention(weights, source, target)
    short = plot_attention(np.eye(3), ["a", "b", "c"], ["x", "y", "z"])
    big_w, big_h = figure.get_size_inches()
    small_w, small_h = short.get_size_inches()
    assert big_w > 3 * small_w and big_h > 3 * small_h
    ax = figure.axes[0]
    labels = ax.get_xticklabels()
    assert labels[0].get_rotation() == 90
    assert short.axes[0].get_xticklabels()[0].get_rotation() == 0
    assert labels[-1].get_text() == "a" * 19 + "…"
    assert (
        labels[0].get_fontsize()
        < short.axes[0].get_xticklabels()[0].get_fontsize()
    )


def test_plot_attention_right_to_left_source():
    # Hebrew source "שלום עולם": drawn right to left, labels in display
    # order (reversed letters) for renderers without bidi support.
    weights = np.array([[0.8, 0.2], [0.1, 0.9]])
    figure = plot_attention(weights, ["שלום", "עולם"], ["hello", "world"])
    ax = figure.axes[0]
    assert ax.xaxis_inverted()
    assert visualization.is_right_to_left(["שלום", "עולם"])
    assert not visualization.is_right_to_left(["hello", "שלום"] * 0 + ["hi"])
    texts = _tick_texts(ax.get_xticklabels())
    try:
        import bidi  # noqa: F401
    except ImportError:
        assert texts == ["םולש", "םלוע"]
    # Digits keep their order inside a right-to-left token.
    assert visualization.visual_order("אב12") in ("12בא",)
    assert visualization.visual_order("abc") == "abc"
    forced = plot_attention(weights, ["a", "b"], ["x", "y"], source_rtl=True)
    assert forced.axes[0].xaxis_inverted()


def test_plot_attention_does_not_touch_pyplot():
    before = None
    if "matplotlib.pyplot" in sys.modules:
        before = list(sys.modules["matplotlib.pyplot"].get_fignums())
    plot_attention([[1.0]], ["a"], ["x"])
    if before is not None:
        assert sys.modules["matplotlib.pyplot"].get_fignums() == before


def test_plot_attention_bad_input():
    with pytest.raises(ValueError, match=r"weights.shape=\(2, 2\)"):
        plot_attention(np.eye(2), ["a", "b", "c"], ["x", "y"])
    with pytest.raises(ValueError, match=r"weights.shape=\(2, 2, 2\)"):
        plot_attention(np.ones((2, 2, 2)), ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="source_tokens"):
        plot_attention(np.eye(2), 42, ["x", "y"])


# ----------------------------------------------------------------------
# Grid of heatmaps.


def test_plot_attention_grid_panels_scale_and_layout(tmp_path):
    a = np.array([[0.9, 0.1], [0.2, 0.8]])
    b = np.zeros((4, 5))
    b[:3, :2] = [[0.5, 0.5], [0.3, 0.7], [0.6, 0.4]]  # padded: cropped
    c = np.array([[0.25, 0.75]])
    path = tmp_path / "grid" / "three.png"
    figure = visualization.plot_attention_grid(
        [(a, ["le", "chat"], ["the", "cat"], "first"),
         (b, ["x", "y"], ["p", "q", "r"]),
         (c, "u v", "w", "third")],
        columns=2,
        path=str(path),
    )
    # Two rows of two: three heatmaps and one hidden cell, no colour bar.
    assert len(figure.axes) == 4
    panels = [ax for ax in figure.axes if ax.images]
    assert len(panels) == 3 and not figure.axes[3].axison
    np.testing.assert_allclose(panels[0].images[0].get_array(), a)
    np.testing.assert_allclose(panels[1].images[0].get_array(), b[:3, :2])
    assert [ax.get_title() for ax in panels] == ["first", "", "third"]
    assert _tick_texts(panels[2].get_xticklabels()) == ["u", "v"]
    # One colour scale for every panel.
    assert {ax.images[0].get_clim() for ax in panels} == {(0.0, 1.0)}
    # Panels fill rows left to right: the first two share a row.
    boxes = [ax.get_position() for ax in figure.axes]
    assert boxes[0].y0 == pytest.approx(boxes[1].y0)
    assert boxes[2].y0 < boxes[0].y0 and boxes[2].x0 < boxes[1].x0
    assert tuple(figure.get_size_inches()) == (10.0, 9.0)
    assert png_size(path) == (1000, 900)


def test_plot_attention_grid_shared_largest_weight_and_one_row():
    small = np.array([[0.2, 0.1]])
    large = np.array([[0.6, 0.4]])
    figure = visualization.plot_attention_grid(
        [(small, ["a", "b"], ["x"]), (large, ["a", "b"], ["y"])],
        vmax=None, cmap="Greys", annotate=True,
    )
    assert len(figure.axes) == 2
    assert {ax.images[0].get_clim() for ax in figure.axes} == {(0.0, 0.6)}
    assert figure.axes[0].images[0].get_cmap().name == "Greys"
    assert sorted(t.get_text() for t in figure.axes[1].texts) == [
        "0.40", "0.60"
    ]
    # Default: all in one row.
    boxes = [ax.get_position() for ax in figure.axes]
    assert boxes[0].y0 == pytest.approx(boxes[1].y0)


def test_plot_attention_grid_bad_input():
    item = (np.eye(2), ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="items=\\[\\]"):
        visualization.plot_attention_grid([])
    with pytest.raises(ValueError, match="items\\[1\\]"):
        visualization.plot_attention_grid([item, (np.eye(2), ["a"])])
    with pytest.raises(ValueError, match="columns=0"):
        visualization.plot_attention_grid([item], columns=0)
    with pytest.raises(ValueError, match="colorbar"):
        visualization.plot_attention_grid([item], colorbar=True)
    with pytest.raises(ValueError, match="weights.shape"):
        visualization.plot_attention_grid([(np.eye(2), ["a", "b", "c"], "x")])


def test_plot_attention_grid_does_not_touch_pyplot():
    before = None
    if "matplotlib.pyplot" in sys.modules:
        before = list(sys.modules["matplotlib.pyplot"].get_fignums())
    visualization.plot_attention_grid([([[1.0]], ["a"], ["x"])] * 2)
    if before is not None:
        assert sys.modules["matplotlib.pyplot"].get_fignums() == before


def test_missing_matplotlib_names_the_viz_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"keras-seq2seq-attention\[viz\]"):
        plot_attention([[1.0]], ["a"], ["x"])
    with pytest.raises(ImportError, match=r"keras-seq2seq-attention\[viz\]"):
        AttentionPlotCallback(lambda s: [], [], png_dir="x")
    with pytest.raises(ImportError, match=r"keras-seq2seq-attention\[viz\]"):
        visualization.plot_attention_grid([([[1.0]], ["a"], ["x"])])
    # The text grid needs no matplotlib.
    assert attention_text_grid([[1.0]], ["a"], ["x"]) == "  a\nx ██"


# ----------------------------------------------------------------------
# Callback.


def _tiny_model_and_translate_fn():
    """A model with self-attention over embedded tokens, and a translate_fn
    that returns the attention of fixed sentences (a stand-in for a
    decoder: what matters is that it reads the weights being trained)."""
    import keras_attention

    tokens = keras.Input((4,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(10, 8, name="embedding")(tokens)
    context, weights = keras_attention.DotAttention(name="attention")(x, x)
    y = keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(context))
    model = keras.Model(tokens, y)
    attention_model = keras.Model(tokens, weights)
    model.compile(optimizer="sgd", loss="mse")

    def translate_fn(sentences):
        ids = np.array([[int(w) for w in s.split()] for s in sentences])
        weights = keras.ops.convert_to_numpy(attention_model(ids))
        return [(s.split(), s.split(), w) for s, w in zip(sentences, weights)]

    data = np.random.default_rng(0).integers(0, 10, size=(16, 4))
    return model, translate_fn, data, attention_model


def test_callback_writes_png_every_n_epochs(tmp_path, capsys):
    model, translate_fn, data, attention_model = _tiny_model_and_translate_fn()
    sentences = ["1 2 3 4", "5 6 7 8"]
    callback = AttentionPlotCallback(
        translate_fn,
        sentences,
        every_n_epochs=2,
        png_dir=str(tmp_path / "png"),
        verbose=1,
    )
    model.fit(
        data,
        np.zeros((16, 1)),
        epochs=5,
        batch_size=8,
        verbose=0,
        callbacks=[callback],
    )
    files = sorted(os.listdir(tmp_path / "png"))
    assert files == [
        "attention_epoch0002_0.png",
        "attention_epoch0002_1.png",
        "attention_epoch0004_0.png",
        "attention_epoch0004_1.png",
    ]
    for name in files:
        assert os.path.getsize(tmp_path / "png" / name) > 1000
        assert png_size(tmp_path / "png" / name)[0] > 100
    assert [epoch for epoch, _ in callback.written] == [2, 2, 4, 4]
    printed = capsys.readouterr().out
    assert "attention 1, epoch 4:" in printed
    # The printed grid is the one of the final weights.
    ids = np.array([[5, 6, 7, 8]])
    final = keras.ops.convert_to_numpy(attention_model(ids))[0]
    assert attention_text_grid(final, "5 6 7 8", "5 6 7 8") in printed


@pytest.mark.tf_only
def test_callback_writes_tensorboard_images(tmp_path):
    import tensorflow as tf

    model, translate_fn, data, _ = _tiny_model_and_translate_fn()
    callback = AttentionPlotCallback(
        translate_fn, ["1 2 3 4"], every_n_epochs=1, log_dir=str(tmp_path)
    )
    model.fit(
        data,
        np.zeros((16, 1)),
        epochs=2,
        batch_size=8,
        verbose=0,
        callbacks=[callback],
    )
    event_files = tf.io.gfile.glob(str(tmp_path / "attention" / "events.*"))
    assert len(event_files) == 1
    images, plugins = [], set()
    for record in tf.data.TFRecordDataset(event_files[0]):
        event = tf.compat.v1.Event.FromString(record.numpy())
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name:
                plugins.add(value.metadata.plugin_data.plugin_name)
            tensor = tf.make_ndarray(value.tensor)
            width, height = int(tensor[0]), int(tensor[1])
            png = tf.io.decode_png(tensor[2]).numpy()
            images.append((value.tag, event.step, png.shape, width, height))
    assert [(tag, step) for tag, step, *_ in images] == [
        ("attention/0", 1),
        ("attention/0", 2),
    ]
    assert plugins == {"images"}  # shown in TensorBoard's Images tab
    for _, _, shape, width, height in images:
        assert shape == (height, width, 4)
        assert width > 100 and height > 100
    assert not (tmp_path / "png").exists()


def test_callback_on_other_backends_writes_pngs_to_log_dir(
    tmp_path, monkeypatch
):
    # Without the TensorFlow backend the callback imports no TensorFlow:
    # it warns and writes PNG files into log_dir.
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    weights = np.array([[0.7, 0.3]])
    with pytest.warns(UserWarning, match="only on the TensorFlow backend"):
        callback = AttentionPlotCallback(
            lambda sentences: [(["a", "b"], ["x"], weights)],
            ["a b"],
            log_dir=str(tmp_path),
        )
    assert callback.plot(3) == [str(tmp_path / "attention_epoch0003_0.png")]
    assert os.path.getsize(tmp_path / "attention_epoch0003_0.png") > 1000
    assert not (tmp_path / "attention").exists()  # no event file


def test_callback_bad_arguments():
    with pytest.raises(ValueError, match="every_n_epochs"):
        AttentionPlotCallback(lambda s: [], [], every_n_epochs=0, png_dir="x")
    with pytest.raises(ValueError, match="log_dir"):
        AttentionPlotCallback(lambda s: [], [])
