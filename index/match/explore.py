"""Exploration: a small share of would-be hits the judge is unsure of goes upstream instead, to be labelled.

Labels gather where they teach most: just above the bar, where a served answer is likeliest to be wrong. The
share follows the budget: a would-be hit with P(same answer) p is explored with probability
rate * (1 - p) / budget (at most 1), so the tighter the budget and the likelier a wrong answer, the more is
explored; candidates in the upper part of the range above the bar (p >= bar + (1 - bar) * band) never are.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_EXPLORE_RATE = 0.05
DEFAULT_EXPLORE_BAND = 0.5


@dataclass(frozen=True)
class Exploration:
    """`rate` is DEJA_EXPLORE_RATE (0 turns exploration off); `band` the share of the range above the bar in
    which a would-be hit counts as uncertain."""

    rate: float = DEFAULT_EXPLORE_RATE
    band: float = DEFAULT_EXPLORE_BAND

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"explore rate must be in [0, 1], got {self.rate}")
        if not 0.0 < self.band <= 1.0:
            raise ValueError(f"explore band must be in (0, 1], got {self.band}")

    def probability(self, p: float, bar: float, max_false_hit_rate: float) -> float:
        """The chance that a would-be hit of probability `p` (served at `bar`) is explored instead."""
        if self.rate == 0.0 or p < bar or p >= bar + (1.0 - bar) * self.band:
            return 0.0
        return min(1.0, self.rate * (1.0 - p) / max_false_hit_rate)

    def explores(self, p: float, bar: float, max_false_hit_rate: float, draw: float) -> bool:
        """Decide with `draw`, a uniform number in [0, 1) from the caller's random source."""
        return draw < self.probability(p, bar, max_false_hit_rate)
