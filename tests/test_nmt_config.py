"""Settings of the NMT example: one source of defaults, CLI from the fields."""

import dataclasses

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from examples.nmt import cli  # noqa: E402
from examples.nmt import config as config_lib  # noqa: E402
from examples.nmt import run as run_lib  # noqa: E402

DEFAULTS = (
    config_lib.DataConfig(),
    config_lib.TextConfig(),
    config_lib.ModelConfig(),
    config_lib.TrainConfig(),
)


def parse(argv):
    return cli.configs_from_args(cli.build_parser().parse_args(argv))


def test_train_defaults_are_the_dataclass_defaults():
    assert parse(["train"]) == DEFAULTS
    # Vocabulary sizes are learned, not set.
    assert DEFAULTS[2].source_vocab_size is None


def test_demo_defaults_are_the_demo_settings():
    demo = parse(["demo"])
    assert demo == config_lib.replace(DEFAULTS, config_lib.DEMO_SETTINGS)
    assert demo[3].epochs == config_lib.DEMO_SETTINGS["train"]["epochs"]
    assert demo[2].bridge is True
    assert demo[2].attention_values == "embedding"
    assert demo[2].bridge_dropout == 0.5
    assert demo[2].attend_source_punctuation is False
    assert parse(["train"])[2].attend_source_punctuation is True
    assert parse(["demo", "--attend-source-punctuation"])[2].attend_source_punctuation
    # A flag still overrides a demo setting.
    assert parse(["demo", "--epochs", "2", "--bridge"])[3].epochs == 2
    assert parse(["demo", "--bridge"])[2].bridge is True


def test_every_option_field_is_a_flag():
    dests = set(vars(cli.build_parser().parse_args(["train"])))
    for section, cls in config_lib.SECTIONS:
        for field in dataclasses.fields(cls):
            expected = "help" in field.metadata
            assert (f"{section}.{field.name}" in dests) == expected, field.name


def test_flags_parse_to_config_values():
    data, text, model, train = parse([
        "train", "--data", "a.de", "a.en", "--data-seed", "3",
        "--lower-case-target", "--no-source-end-token", "--score", "dot",
        "--no-bidirectional", "--attention-units", "7",
        "--bucket-boundaries", "--mixed-precision", "--verbose", "0",
        "--seed", "5", "--jit-compile",
    ])
    assert data.paths == ("a.de", "a.en") and data.seed == 3
    assert text.target_lower_case and not text.source_end_token
    assert model.score == "dot" and not model.bidirectional
    assert model.attention_units == 7
    assert train.bucket_boundaries == () and train.mixed_precision == "float16"
    assert train.verbose == 0 and train.seed == 5 and train.jit_compile == "on"
    assert parse(["train", "--verbose", "auto"])[3].verbose == "auto"
    defaults = parse(["train"])[3]
    assert defaults.mixed_precision == "auto" and defaults.jit_compile == "auto"
    off = parse(["train", "--mixed-precision", "off", "--jit-compile", "off"])
    assert off[3].mixed_precision == "off" and off[3].jit_compile == "off"
    assert parse(["train", "--mixed-precision", "bfloat16"])[3].mixed_precision == (
        "bfloat16"
    )


def test_bad_flag_values_are_rejected(capsys):
    for argv in (
        ["train", "--score", "cosine"],
        ["train", "--epochs", "many"],
        ["train", "--strategy", "tpu"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            cli.build_parser().parse_args(argv)
        assert exit_info.value.code == 2
    assert "invalid choice: 'cosine'" in capsys.readouterr().err


def test_run_config_round_trip(tmp_path):
    configs = config_lib.replace(
        DEFAULTS,
        {"model": {"source_vocab_size": 11, "target_vocab_size": 12},
         "train": {"bucket_boundaries": (4, 8)}},
    )
    run_lib.save_run_config(str(tmp_path), *configs)
    assert run_lib.load_run_config(str(tmp_path)) == configs
    with pytest.raises(ValueError, match="No run.json"):
        run_lib.load_run_config(str(tmp_path / "missing"))
