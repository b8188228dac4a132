"""Exploration: a small share of would-be hits the learned score doubts goes upstream instead, to be labelled.

Labels gather where they teach most: a hit whose learned P(same answer) sits in the lower `band` of the range above
the veto's bar (p < bar + (1 - bar) * band) is explored with probability `rate`; a hit the learned score is sure of,
and a plain rewording (served on its content, no P), never is. The step is `explore` in `index.match.steps`.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_EXPLORE_RATE = 0.05
DEFAULT_EXPLORE_BAND = 0.5


@dataclass(frozen=True)
class Exploration:
    """`rate` is DEJA_EXPLORE_RATE (0 turns exploration off); `band` the share of the range above the bar in
    which a would-be hit counts as doubted."""

    rate: float = DEFAULT_EXPLORE_RATE
    band: float = DEFAULT_EXPLORE_BAND

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"explore rate must be in [0, 1], got {self.rate}")
        if not 0.0 < self.band <= 1.0:
            raise ValueError(f"explore band must be in (0, 1], got {self.band}")

    def doubts(self, p: float, bar: float) -> bool:
        """A would-be hit of learned probability `p` (served above `bar`) is one exploration may send upstream."""
        return self.rate > 0.0 and p < bar + (1.0 - bar) * self.band

    def explores(self, p: float, bar: float, draw: float) -> bool:
        """Decide with `draw`, a uniform number in [0, 1) from the caller's random source."""
        return self.doubts(p, bar) and draw < self.rate
