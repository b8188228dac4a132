"""The learned scores the guarded rule reads as its veto: margins as features, the pair model read only where it
can move P across the bar."""

from __future__ import annotations

import math

import pytest

from index.match.learned import LearnedScores, learned_probability, margins
from index.match.outcome import Candidate
from support.judges import FixedJudge


def test_margins_are_over_the_best_other_candidate() -> None:
    assert margins([0.9, 0.8, 0.85]) == pytest.approx([0.05, -0.1, -0.05])
    assert math.isnan(margins([0.9])[0])


def test_without_a_judge_there_is_no_learned_probability() -> None:
    scores = LearnedScores(None, None, 0.6)
    assert learned_probability("a", Candidate(1, "b", 0.95), 0, math.nan, scores) == (None, False)
    assert scores.version == "cosine"


def test_the_judge_alone_gives_its_probability_and_its_version() -> None:
    scores = LearnedScores(FixedJudge(0.7, version="j1"), None, 0.6)
    assert learned_probability("a", Candidate(1, "b", 0.95), 0, math.nan, scores) == (pytest.approx(0.7), False)
    assert scores.version == "j1"
