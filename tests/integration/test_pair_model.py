"""The shipped pair model with its real cross-encoder: a symmetric, deterministic probability that serves a
plain rewording and not the near-twin question (it loads the model, so it is not a unit test)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from index.judge.pair_model import PairModel

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def model() -> PairModel:
    return PairModel()


REWORDING = ("How do I reset my password?", "How can I reset my password?")
INSTALL = ("How do I install Steam?", "How do I uninstall Steam?")
PIN = ("How do I pin a message in Slack?", "How do I unpin a message in Slack?")
ORDER = ("How do I convert Celsius to Fahrenheit?", "How do I convert Fahrenheit to Celsius?")


def test_probabilities_are_in_unit_range(model: PairModel) -> None:
    p = model.probabilities([REWORDING, INSTALL, ("", "x"), ("word " * 300, "word " * 299)])
    assert p.shape == (4,) and np.all((p >= 0.0) & (p <= 1.0))


def test_empty_batch_is_empty(model: PairModel) -> None:
    assert model.probabilities([]).shape == (0,)


def test_score_is_symmetric(model: PairModel) -> None:
    a, b = INSTALL
    assert model.raw_scores([(a, b)])[0] == pytest.approx(model.raw_scores([(b, a)])[0], abs=1e-5)


@pytest.mark.parametrize("contrast", [pytest.param(INSTALL, id="install-uninstall"), pytest.param(PIN, id="pin-unpin"),
                                      pytest.param(ORDER, id="swapped-order")])
def test_a_rewording_scores_above_a_minimal_contrast(model: PairModel, contrast: tuple[str, str]) -> None:
    same, different = model.probabilities([REWORDING, contrast])
    assert same > different


def test_the_shipped_model_runs_its_int8_export(model: PairModel) -> None:
    assert model.backend == "onnx"


def test_same_scores_from_many_threads(model: PairModel) -> None:
    pairs = [REWORDING, INSTALL, PIN, ORDER] * 4
    expected = model.probabilities(pairs)
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda pair: model.probability(*pair), pairs))
    assert np.allclose(got, expected, atol=1e-6)


def test_a_pair_read_again_gives_the_very_score_the_model_gave_without_running_it() -> None:
    model = PairModel()
    first = model.raw_scores([REWORDING, PIN])
    runs = model.runs
    again = model.raw_scores([PIN, REWORDING])
    assert model.runs == runs == 2  # the memo answered: the session did not run again
    assert again.tolist() == first[::-1].tolist()
    assert PairModel().raw_scores([REWORDING])[0] == first[0]  # bit-identical to a fresh model's run
