"""Each namespace's learned cosine threshold (`index.match.live_threshold`), kept for the Matcher to read.

`ThresholdBook.update` folds a namespace's latest evidence in and returns the move it made, if any; every move is
logged with its evidence. A namespace never seen stays at the prior. The book is memory; the gateway rebuilds it
from the shared decision log (`index.storage.evidence`) on every upkeep tick, so every replica serves the same
threshold and a restart keeps what was learned. `eval replay --learn` feeds it the same evidence in memory.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from index.match.evidence import Evidence
from index.match.live_threshold import LearnerConfig, ThresholdState, choose

log = logging.getLogger("deja.threshold")


@dataclass(frozen=True)
class ThresholdMove:
    """One move of a namespace's threshold and the evidence behind it."""

    namespace: str
    old: float
    new: float
    estimate: float
    within: float
    labels: int
    at: float

    def describe(self) -> str:
        way = "down" if self.new < self.old else "up"
        return (f"threshold {way} for namespace {self.namespace}: {self.old:.2f} -> {self.new:.2f} "
                f"(wrong ÷ served estimated {self.estimate:.4f}, within budget with probability {self.within:.2f}, "
                f"{self.labels} labels)")


class ThresholdBook:
    """Per-namespace thresholds; thread-safe. `history` keeps the latest moves (newest last)."""

    def __init__(self, config: LearnerConfig, clock: Callable[[], float], keep: int = 200) -> None:
        self.config = config
        self.clock = clock
        self.keep = keep
        self.history: list[ThresholdMove] = []
        self._states: dict[str, ThresholdState] = {}
        self._lock = threading.Lock()

    @property
    def budget(self) -> float:
        return self.config.budget

    def threshold(self, namespace: str) -> float | None:
        """The learned threshold of `namespace`, None while it has no evidence (the prior serves)."""
        state = self._states.get(namespace)
        return None if state is None else state.threshold

    def state(self, namespace: str) -> ThresholdState | None:
        return self._states.get(namespace)

    def states(self) -> dict[str, ThresholdState]:
        with self._lock:
            return dict(self._states)

    def update(self, namespace: str, evidence: Evidence, prior: float | None = None) -> ThresholdMove | None:
        """Choose `namespace`'s threshold from `evidence` (from its prior: the deployment's, or one stored for
        the namespace); returns the move made, if any."""
        config = self.config if prior is None else dataclasses.replace(
            self.config, prior=prior, floor=min(self.config.floor, prior))
        with self._lock:
            before = self._states.get(namespace)
            current = config.prior if before is None else before.threshold
            state = choose(evidence, current, config)
            self._states[namespace] = state
            if abs(state.threshold - current) < 1e-9:
                return None
            move = ThresholdMove(namespace, current, state.threshold, state.estimate, state.within, state.labels,
                                 self.clock())
            self.history = ([*self.history, move])[-self.keep:]
        log.info("%s", move.describe())
        return move
