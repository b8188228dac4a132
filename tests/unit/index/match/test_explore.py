"""Exploration: only the would-be hits the learned score doubts, at the stated share."""

from __future__ import annotations

import random

import pytest

from index.match.explore import Exploration


def test_only_a_doubted_would_be_hit_may_be_explored() -> None:
    explore = Exploration(rate=1.0, band=0.5)
    assert explore.doubts(0.7, bar=0.6)  # in the lower half of the range above the bar
    assert not explore.doubts(0.85, bar=0.6)  # the upper half: the learned score is sure


def test_rate_zero_turns_exploration_off() -> None:
    assert not Exploration(rate=0.0).doubts(0.61, 0.6)
    assert not Exploration(rate=0.0).explores(0.61, 0.6, 0.0)


def test_explores_draws_at_the_stated_share() -> None:
    explore, rng = Exploration(rate=0.1), random.Random(4)
    share = sum(explore.explores(0.7, 0.6, rng.random()) for _ in range(20_000)) / 20_000
    assert share == pytest.approx(0.1, abs=0.01)


@pytest.mark.parametrize(("rate", "band"), [(-0.1, 0.5), (1.1, 0.5), (0.1, 0.0)], ids=["neg", "above-one", "band0"])
def test_out_of_range_settings_are_refused(rate: float, band: float) -> None:
    with pytest.raises(ValueError):
        Exploration(rate, band)
