"""Per-namespace bar levels from the evidence (`index.match.bar`). `BarBook.update` moves a namespace's level from its
budget tally, reading the audits since its last move (the evidence at the bar now in force), each rate corrected for
the labeller's error rate (`index.match.budget.corrected`):
- up when a new wrong audit arrives, at least `MIN_WRONG_TO_RAISE` wrong labels beyond those the labeller's errors
  explain were seen since the last move, and their rate is above the budget: one label is an anecdote;
- down when at least `lower_after` audits since the last move certify the budget (the upper bound at or below it:
  the bar can open recall), or, for a raised bar, when their rate is at most half the budget (the raise did not
  hold up).
A namespace without audits stays at the prior. Every move is logged with its evidence.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from index.match.bar import MAX_LEVEL, MIN_LEVEL
from index.match.budget import BudgetTally, corrected, merge, upper_bound

log = logging.getLogger("deja.bar")

LOWER_AFTER = 50
MIN_WRONG_TO_RAISE = 2.0


@dataclass(frozen=True)
class BarChange:
    """One move of a namespace's bar and the evidence behind it."""

    namespace: str
    old_level: int
    new_level: int
    served: int
    audited: int
    wrong: int
    upper: float
    budget: float
    at: float

    def describe(self) -> str:
        way = "up" if self.new_level > self.old_level else "down"
        return (f"bar {way} for namespace {self.namespace}: level {self.old_level} -> {self.new_level} "
                f"({self.wrong} wrong of {self.audited} audited, {self.served} served; "
                f"upper bound {self.upper:.4f} vs budget {self.budget:g})")


@dataclass
class _State:
    level: int = 0
    wrong_seen: int = 0
    audited_at_move: int = 0
    wrong_at_move: int = 0


class BarBook:
    """Per-namespace bar levels; thread-safe. `history` keeps the latest moves (newest last)."""

    def __init__(self, budget: float, clock: Callable[[], float], lower_after: int = LOWER_AFTER,
                 keep: int = 200, error_rate: float = 0.0) -> None:
        """`error_rate`: how often the labeller of audits calls a label wrongly (0 for exact answer comparison)."""
        self.budget = budget
        self.error_rate = error_rate
        self.clock = clock
        self.lower_after = lower_after
        self.keep = keep
        self.history: list[BarChange] = []
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()

    def level(self, namespace: str) -> int:
        state = self._states.get(namespace)
        return 0 if state is None else state.level

    def levels(self) -> dict[str, int]:
        with self._lock:
            return {ns: s.level for ns, s in self._states.items() if s.level}

    def update(self, tallies: Iterable[BudgetTally]) -> list[BarChange]:
        """Fold the namespaces' latest tallies (all APIs together) in; returns the moves made."""
        by_namespace: dict[str, list[BudgetTally]] = {}
        for tally in tallies:
            by_namespace.setdefault(tally.namespace, []).append(tally)
        changes = []
        with self._lock:
            for namespace, items in by_namespace.items():
                change = self._update(merge(items, namespace))
                if change is not None:
                    changes.append(change)
                    log.info("%s", change.describe())
            self.history = (self.history + changes)[-self.keep:]
        return changes

    def _update(self, tally: BudgetTally) -> BarChange | None:
        state = self._states.setdefault(tally.namespace, _State())
        e = self.error_rate
        audited, wrong = tally.audited - state.audited_at_move, tally.wrong - state.wrong_at_move
        rate = corrected(wrong / audited, e) if audited else 0.0
        new = state.level
        if tally.wrong > state.wrong_seen and wrong - e * audited >= MIN_WRONG_TO_RAISE and rate > self.budget:
            new = min(MAX_LEVEL, state.level + 1)
        elif audited >= self.lower_after and (corrected(upper_bound(wrong, audited), e) <= self.budget
                                              or (state.level > 0 and rate <= self.budget / 2)):
            new = max(MIN_LEVEL, state.level - 1)
        state.wrong_seen = max(state.wrong_seen, tally.wrong)
        if new == state.level:
            return None
        change = BarChange(tally.namespace, state.level, new, tally.served, tally.audited, tally.wrong, tally.upper,
                           self.budget, self.clock())
        state.level, state.audited_at_move, state.wrong_at_move = new, tally.audited, tally.wrong
        return change
