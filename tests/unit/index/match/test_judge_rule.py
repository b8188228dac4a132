"""The judge's hit rule: scores the top K candidates, serves the most probable one that clears the bar."""

from __future__ import annotations

import math

import numpy as np
import pytest

from index.judge.model import Calibration, Forest, Isotonic, Judge
from index.match.judged import JudgeSetup, judge, margins
from index.match.outcome import Candidate


class _SimilarityForest(Forest):
    """A fake model at the judge's real seam: the raw score is the similarity feature (column 0)."""

    def decision(self, features: np.ndarray) -> np.ndarray:
        return np.asarray(features[:, 0], dtype=np.float64)


@pytest.fixture
def setup() -> JudgeSetup:
    nothing = np.zeros(1, dtype=np.int32)
    forest = _SimilarityForest(nothing, np.zeros(1), np.ones(1, dtype=bool), nothing, nothing, np.zeros(1),
                               nothing, 0, 0.0)
    # P(same) = similarity mapped from [0.5, 1] onto [0, 1]; calibration data wrong below 0.3, right above.
    grid = np.linspace(0.0, 1.0, 2001)
    calibration = Calibration(grid, (grid > 0.3).astype(np.int8))
    judge_ = Judge(forest, Isotonic(np.array([0.5, 1.0]), np.array([0.0, 1.0])), calibration, "judge-test")
    return JudgeSetup(judge_, max_false_hit_rate=0.02, candidates=2)


def test_margins_are_over_the_best_other_candidate() -> None:
    assert margins([0.9, 0.8, 0.85]) == pytest.approx([0.05, -0.1, -0.05])
    assert math.isnan(margins([0.9])[0])


def test_serves_the_most_probable_candidate_that_clears_the_bar(setup: JudgeSetup) -> None:
    bar = setup.judge.cut(0.02)
    assert 0.0 < bar < 1.0
    candidates = [Candidate(1, "a", 0.97), Candidate(2, "b", 0.99), Candidate(3, "c", 1.0)]
    result = judge("q", candidates, setup)
    assert len(result.candidates) == 2  # only the top K are scored
    assert result.hit and result.candidates[result.chosen or 0].entry_id == 2
    assert result.version == "judge-test" and result.probability is not None and result.bar == bar


def test_misses_when_no_candidate_clears_the_bar(setup: JudgeSetup) -> None:
    result = judge("q", [Candidate(1, "a", 0.6)], setup)
    assert not result.hit and result.chosen is None and result.best == 0
    assert result.probability is not None and result.probability < result.bar


def test_no_candidates_is_a_miss(setup: JudgeSetup) -> None:
    result = judge("q", [], setup)
    assert not result.hit and result.probability is None


def test_setup_validates_budget_and_k(setup: JudgeSetup) -> None:
    with pytest.raises(ValueError):
        JudgeSetup(setup.judge, max_false_hit_rate=0.0)
    with pytest.raises(ValueError):
        JudgeSetup(setup.judge, candidates=0)
