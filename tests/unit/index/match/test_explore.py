"""Exploration: only uncertain would-be hits, at a share that follows the budget."""

from __future__ import annotations

import random

import pytest

from index.match.explore import Exploration


def test_below_the_bar_or_well_above_it_nothing_is_explored() -> None:
    explore = Exploration(rate=1.0, band=0.5)
    assert explore.probability(0.89, bar=0.9, max_false_hit_rate=0.02) == 0.0  # a miss anyway
    assert explore.probability(0.95, bar=0.9, max_false_hit_rate=0.02) == 0.0  # upper half above the bar
    assert explore.probability(0.92, bar=0.9, max_false_hit_rate=0.02) > 0.0


def test_the_share_follows_the_budget_and_the_doubt() -> None:
    explore = Exploration(rate=0.05)
    tight, loose = (explore.probability(0.93, bar=0.9, max_false_hit_rate=b) for b in (0.01, 0.05))
    assert tight == pytest.approx(0.05 * 0.07 / 0.01) and loose == pytest.approx(0.05 * 0.07 / 0.05)
    assert explore.probability(0.91, 0.9, 0.02) > explore.probability(0.94, 0.9, 0.02)


def test_rate_zero_turns_exploration_off() -> None:
    assert Exploration(rate=0.0).probability(0.91, 0.9, 0.001) == 0.0


def test_explores_draws_at_the_stated_share() -> None:
    explore, rng = Exploration(rate=0.1), random.Random(4)
    share = sum(explore.explores(0.92, 0.9, 0.02, rng.random()) for _ in range(20_000)) / 20_000
    assert share == pytest.approx(0.1 * 0.08 / 0.02, abs=0.02)


@pytest.mark.parametrize(("rate", "band"), [(-0.1, 0.5), (1.1, 0.5), (0.1, 0.0)], ids=["neg", "above-one", "band0"])
def test_out_of_range_settings_are_refused(rate: float, band: float) -> None:
    with pytest.raises(ValueError):
        Exploration(rate, band)
