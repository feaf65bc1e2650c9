"""A run directory written by an earlier version loads and translates the
same: `tests/data/compat/nmt_run` (made by
`tests/data/compat/make_nmt_run.py`) and the outputs that version gave
(`expected.json`)."""

import json
import os

import numpy as np
import pytest

from tests.data.compat import make_nmt_run

pytest.importorskip("tensorflow_text")

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.join(HERE, "data", "compat")


@pytest.fixture(scope="module")
def outputs():
    return make_nmt_run.outputs(os.path.join(COMPAT, "nmt_run"))


@pytest.fixture(scope="module")
def expected():
    with open(os.path.join(COMPAT, "expected.json")) as f:
        return json.load(f)


def test_translations_match(outputs, expected):
    assert outputs["greedy"] == expected["greedy"]
    assert outputs["beam"] == expected["beam"]
    np.testing.assert_allclose(
        outputs["greedy_scores"], expected["greedy_scores"], atol=1e-4
    )


def test_first_step_matches(outputs, expected):
    np.testing.assert_allclose(
        outputs["first_step_log_probs"], expected["first_step_log_probs"],
        atol=1e-4,
    )
    np.testing.assert_allclose(
        outputs["first_step_attention"], expected["first_step_attention"],
        atol=1e-5,
    )


def test_evaluate_splits_the_old_run_data_again():
    """The old run has no split files (`validation.tsv`, `test.tsv`):
    `evaluate` makes its split again from the run's data, as it always
    did (the same fallback on a trained run, end to end:
    `test_evaluate_test_sets.py`)."""
    from examples.nmt import data as data_lib
    from examples.nmt import evaluate as eval_lib
    from examples.nmt import run as run_lib

    run = os.path.join(COMPAT, "nmt_run")
    assert not [f for f in os.listdir(run) if f.endswith(".tsv")]
    test = eval_lib.load_split(run, "test")
    _, splits = data_lib.load_splits(run_lib.load_run_config(run)[0])
    assert len(test) > 100
    assert test.pairs == splits["test"].pairs
    assert test.alignments == splits["test"].alignments
