"""Each namespace's learned cosine thresholds, one per kind of difference (`index.match.live_threshold`), kept for
the Matcher to read.

`ThresholdBook.update` chooses a namespace's threshold from its latest evidence and the prior alone (never from the
replica's previous choice, so every replica that reads the same evidence serves the same threshold) and returns
the move it made, if any; every move is logged with its evidence. A namespace never seen stays at the prior. The
book is memory; the gateway rebuilds it from the shared decision log (`index.storage.evidence`) on every upkeep
tick, so a restart keeps what was learned. `eval replay --learn` feeds it the same evidence in memory.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from index.match.evidence import Evidence
from index.match.live_threshold import CONFIDENCE, LearnerConfig, ThresholdState, choose
from index.match.outcome import Kind
from index.match.policy import DEFAULT_MAX_FALSE_HIT_RATE

log = logging.getLogger("deja.threshold")


@dataclass(frozen=True)
class ThresholdMove:
    """One move of a namespace's threshold and the evidence behind it: wrong ÷ served at the new threshold,
    estimated and its upper bound at the learner's `confidence`, against the `budget`."""

    namespace: str
    old: float
    new: float
    estimate: float
    upper: float
    labels: int
    at: float
    kind: Kind = Kind.COSINE
    confidence: float = CONFIDENCE
    budget: float = DEFAULT_MAX_FALSE_HIT_RATE

    def describe(self) -> str:
        way = "down" if self.new < self.old else "up"
        return (f"{self.kind} threshold {way} for namespace {self.namespace}: {self.old:.2f} -> {self.new:.2f} "
                f"(wrong ÷ served estimated {self.estimate:.4f}, {self.confidence:.0%} upper bound {self.upper:.4f} "
                f"vs budget {self.budget:g}, {self.labels} labels)")


class ThresholdBook:
    """Per-namespace thresholds, one per kind of difference (`Kind`); thread-safe. `history` keeps the latest moves
    (newest last)."""

    def __init__(self, config: LearnerConfig, clock: Callable[[], float], keep: int = 200) -> None:
        self.config = config
        self.clock = clock
        self.keep = keep
        self.history: list[ThresholdMove] = []
        self._states: dict[tuple[str, Kind], ThresholdState] = {}
        self._lock = threading.Lock()

    @property
    def budget(self) -> float:
        return self.config.budget

    def threshold(self, namespace: str, kind: Kind = Kind.COSINE) -> float | None:
        """The learned threshold of `namespace` for `kind`, None while it has no evidence (the prior serves)."""
        state = self._states.get((namespace, kind))
        return None if state is None else state.threshold

    def state(self, namespace: str, kind: Kind = Kind.COSINE) -> ThresholdState | None:
        return self._states.get((namespace, kind))

    def over_budget(self, namespace: str, kind: Kind = Kind.COSINE) -> bool:
        """The budget does not hold at `namespace`'s threshold in force for `kind`: its upper bound at the learner's
        confidence is above the budget (False while the kind has no evidence)."""
        state = self._states.get((namespace, kind))
        return state is not None and state.upper > self.config.budget

    def states(self) -> dict[tuple[str, Kind], ThresholdState]:
        with self._lock:
            return dict(self._states)

    def update(self, namespace: str, evidence: Evidence, prior: float | None = None,
               kind: Kind = Kind.COSINE) -> ThresholdMove | None:
        """Choose `namespace`'s threshold for `kind` from `evidence` (from its prior: the deployment's, or one
        stored for the namespace); returns the move made, if any."""
        config = self.config if prior is None else dataclasses.replace(
            self.config, prior=prior, floor=min(self.config.floor, prior))
        with self._lock:
            before = self._states.get((namespace, kind))
            current = config.prior if before is None else before.threshold
            # Chosen from the prior, never from this replica's last choice: the threshold is a function of the
            # shared evidence alone, so a restart, a second replica and a late one serve the same threshold.
            state = choose(evidence, config.prior, config)
            self._states[(namespace, kind)] = state
            if abs(state.threshold - current) < 1e-9:
                return None
            move = ThresholdMove(namespace, current, state.threshold, state.estimate, state.upper, state.labels,
                                 self.clock(), kind, config.confidence, config.budget)
            self.history = ([*self.history, move])[-self.keep:]
        log.info("%s", move.describe())
        return move
