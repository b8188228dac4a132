"""Each namespace's learned cosine thresholds, one per kind of difference (`index.match.live_threshold`), kept for
the Matcher to read.

`ThresholdBook.update` chooses a namespace's threshold from its latest evidence and the prior alone (never from the
replica's previous choice, so every replica that reads the same evidence serves the same threshold) and returns
the move it made, if any; every move is logged with its evidence. A namespace never seen stays at the prior. The
book is memory; the gateway rebuilds it from the shared evidence (`index.storage.evidence`) on every pass, so a
restart keeps what was learned. Whether a choice is a *move* is the `MoveLog`'s to say: in memory (`eval replay
--learn`, tests) or in the shared store (`index.storage.threshold_moves`), where each stream's threshold is recorded
once with the evidence version it was chosen at, so a move counts once between the replicas and a restarted or new
replica, choosing what is recorded already, moves nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

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


class MoveLog(Protocol):
    """Where each stream's threshold is recorded and its moves kept (newest last)."""

    def record(self, proposed: ThresholdMove, version: int | None) -> ThresholdMove | None:
        """Record the stream's threshold `proposed.new`, chosen from the evidence published at `version` (None: the
        latest choice wins); `proposed.old` is the stream's prior. Returns the move recorded (`old`: the threshold
        it replaces, the prior for a stream never recorded), None when there is none (the same threshold, an older
        version, or another replica recorded it first)."""
        ...

    def recent(self) -> list[ThresholdMove]:
        """The latest moves, newest last."""
        ...

    def sync(self) -> None:
        """Read the moves recorded elsewhere (other replicas) for `recent`."""
        ...


class MemoryMoveLog:
    """The move log of one process."""

    def __init__(self, keep: int = 200) -> None:
        self.keep = keep
        self._last: dict[tuple[str, str], tuple[float, int | None]] = {}
        self._moves: list[ThresholdMove] = []
        self._lock = threading.Lock()

    def record(self, proposed: ThresholdMove, version: int | None) -> ThresholdMove | None:
        stream = (proposed.namespace, proposed.kind.value)
        with self._lock:
            old, seen = self._last.get(stream, (proposed.old, None))
            if version is not None and seen is not None and version < seen:
                return None
            self._last[stream] = (proposed.new, version)
            if abs(proposed.new - old) < 1e-9:
                return None
            move = dataclasses.replace(proposed, old=old)
            self._moves = [*self._moves, move][-self.keep:]
        return move

    def recent(self) -> list[ThresholdMove]:
        with self._lock:
            return list(self._moves)

    def sync(self) -> None:
        """Nothing is recorded elsewhere."""


class ThresholdBook:
    """Per-namespace thresholds, one per kind of difference (`Kind`); thread-safe. `history` keeps the latest moves
    (newest last)."""

    def __init__(self, config: LearnerConfig, clock: Callable[[], float], keep: int = 200,
                 moves: MoveLog | None = None) -> None:
        """`moves`: where the moves are recorded (default: in this process; a gateway passes the shared store's)."""
        self.config = config
        self.clock = clock
        self.keep = keep
        self.moves: MoveLog = moves or MemoryMoveLog(keep)
        self._states: dict[tuple[str, Kind], ThresholdState] = {}
        self._lock = threading.Lock()

    @property
    def history(self) -> list[ThresholdMove]:
        """The latest moves (newest last), as the move log keeps them."""
        return self.moves.recent()

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
        """The budget did not hold at `namespace`'s cold-start threshold for `kind`: the learner had to raise it
        above the prior (the threshold in force is always one where the bound holds, so "over" is where the
        evidence drove it: what it still serves is audited most). False while the kind has no evidence."""
        state = self._states.get((namespace, kind))
        return state is not None and state.threshold > state.prior + 1e-9

    def thin(self, namespace: str, kind: Kind = Kind.COSINE) -> bool:
        """The bound at `namespace`'s threshold in force for `kind` rests mostly on the prior (too few labels of what
        it serves, `ThresholdState.thin`): its hits are audited densely. True while the kind has no evidence."""
        state = self._states.get((namespace, kind))
        return state is None or state.thin

    def states(self) -> dict[tuple[str, Kind], ThresholdState]:
        with self._lock:
            return dict(self._states)

    def update(self, namespace: str, evidence: Evidence, prior: float | None = None,
               kind: Kind = Kind.COSINE, version: int | None = None) -> ThresholdMove | None:
        """Choose `namespace`'s threshold for `kind` from `evidence` (published at `version`, from its prior: the
        deployment's, or one stored for the namespace); returns the move made, if this call made one."""
        config = self.config if prior is None else dataclasses.replace(
            self.config, prior=prior, floor=min(self.config.floor, prior))
        # Chosen from the prior, never from this replica's last choice: the threshold is a function of the shared
        # evidence alone, so a restart, a second replica and a late one serve the same threshold.
        state = choose(evidence, config.prior, config)
        with self._lock:
            self._states[(namespace, kind)] = state
        proposed = ThresholdMove(namespace, config.prior, state.threshold, state.estimate, state.upper, state.labels,
                                 self.clock(), kind, config.confidence, config.budget)
        move = self.moves.record(proposed, version)
        if move is not None:
            log.info("%s", move.describe())
        return move
