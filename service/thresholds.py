"""Each namespace's learned thresholds (one per kind of difference) on a gateway: `ThresholdKeeper.refresh` (the
learner's pass, every `DEJA_THRESHOLD_INTERVAL_SECONDS`, in a thread of its own) reads the evidence streams published
since its last pass from the shared running totals (`index.storage.evidence`: a stream publishes when its labels
change or its traffic grew by an eighth) and lets `index.match.threshold_book` choose; nothing else is read, so a
pass costs what the new labels cost, whatever the number of namespaces. `view` is what `/deja/budget` and the
overview page show of what the passes chose (they never run one): the threshold in force, the budget's statistic
there (the learner's upper bound on wrong ÷ served at its confidence), the evidence per band behind it and the
labels that would move it. A move is counted (`deja_threshold_moves_total`) only by the replica that records it in
the shared store (`index.storage.threshold_moves`): a restarted or new replica counts none."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from pydantic import BaseModel

from index.errors import StoreUnavailable
from index.match.outcome import Kind
from index.match.policy import MatchPolicy
from index.match.threshold_book import ThresholdBook, ThresholdMove
from index.storage.evidence import EvidenceStore, StreamEvidence
from service.metrics import Metrics

log = logging.getLogger("deja.threshold")


class BandRow(BaseModel):
    low: float  # the band is [low, low + 0.01) of cosine similarity
    requests: float  # would-serve requests seen in the band, aged
    right: float  # labels saying the candidate's answer was right, aged
    wrong: float
    wrong_rate: float  # posterior mean of the band's wrong rate (prior + labels)


class NamespaceThreshold(BaseModel):
    namespace: str
    kind: str  # the kind of difference: cosine (single-turn wording), slot (a changed slot), conversation
    threshold: float  # the cosine threshold in force for this kind
    prior: float  # the threshold a namespace without evidence serves at
    estimate: float  # estimated wrong ÷ served at the threshold in force (the posterior mean)
    # The budget's statistic: the learner's upper bound on wrong ÷ served at the threshold in force, at its
    # confidence (`index.match.live_threshold.CONFIDENCE`, 80%); the budget holds when it is at most the budget.
    upper: float
    holds: bool  # upper <= the budget
    labels: int
    next_down: float | None  # the next lower threshold with traffic
    labels_to_move: int | None  # more labels (at the rates seen) before it moves there; None: evidence says no
    requests_to_move: int | None  # the same in requests, at the namespace's current label rate
    bands: list[BandRow]


class ThresholdMoveView(BaseModel):
    namespace: str
    kind: str
    old: float
    new: float
    estimate: float
    upper: float  # at the new threshold, as `NamespaceThreshold.upper`
    labels: int
    at: float


class ThresholdKeeper:
    """Re-chooses the streams whose evidence moved; the book itself is what the Matcher reads. `prior` is a
    namespace's policy before learning; `stored` the thresholds stored per namespace ("*": every namespace's) that
    priors come from: a change there re-chooses the namespaces it covers."""

    def __init__(self, book: ThresholdBook, evidence: EvidenceStore, prior: Callable[[str], MatchPolicy],
                 stored: Callable[[], Mapping[str, tuple[float, int]]], metrics: Metrics) -> None:
        self.book = book
        self.evidence = evidence
        self.prior = prior
        self.stored = stored
        self.metrics = metrics
        # The evidence version the last pass read up to, and the stored thresholds its priors came from.
        self.version = 0
        self._priors: dict[str, tuple[float, int]] = {}
        # Streams the last pass chose (what a pass costs is this many choices).
        self.chosen = 0
        self._lock = threading.Lock()

    def refresh(self) -> list[ThresholdMove]:
        """In a worker thread: labels left uncounted are counted, then every stream published since the last pass
        (and every stream of a namespace whose prior changed) is chosen again from its published evidence."""
        with self._lock:
            try:
                self.evidence.settle()
                streams = self.evidence.changed(self.version)
                priors = dict(self.stored())
                moved = _moved(self._priors, priors, {ns for ns, _ in self.book.states()})
                if moved:
                    known = {(s.namespace, s.kind) for s in streams}
                    streams += [s for s in self.evidence.of(moved) if (s.namespace, s.kind) not in known]
            except StoreUnavailable as exc:
                log.warning("thresholds not refreshed: %s", exc)
                return []
            moves = [move for stream in streams if (move := self._choose(stream)) is not None]
            self.version = max([self.version, *(s.version for s in streams)])
            self._priors = priors
            self.chosen = len(streams)
            self._sync_moves()
        return moves

    def _sync_moves(self) -> None:
        """The move history as the shared store keeps it (every replica's moves), when the book records there."""
        try:
            self.book.moves.sync()
        except StoreUnavailable as exc:
            log.warning("threshold moves not read: %s", exc)

    def _choose(self, stream: StreamEvidence) -> ThresholdMove | None:
        policy = self.prior(stream.namespace)
        move = self.book.update(stream.namespace, stream.evidence, policy.prior_for(stream.kind), stream.kind,
                                stream.version)
        state = self.book.state(stream.namespace, stream.kind)
        if state is not None:
            self._export(stream.namespace, stream.kind, state.threshold, state.upper)
        if move is not None:
            self.metrics.threshold_moves.labels("down" if move.new < move.old else "up").inc()
        return move

    def _export(self, namespace: str, kind: Kind, threshold: float, upper: float) -> None:
        if kind is Kind.COSINE:
            self.metrics.threshold.labels(namespace).set(threshold)
        self.metrics.budget_upper.labels(namespace, kind.value).set(upper)

    def view(self) -> list[NamespaceThreshold]:
        rows = []
        budget = self.book.budget
        for (namespace, kind), s in sorted(self.book.states().items()):
            bands = [BandRow(low=b.low, requests=round(b.mass, 3), right=round(b.right, 3), wrong=round(b.wrong, 3),
                             wrong_rate=round(b.wrong_rate, 5)) for b in s.bands]
            rows.append(NamespaceThreshold(
                namespace=namespace, kind=kind.value, threshold=s.threshold, prior=s.prior,
                estimate=round(s.estimate, 5), upper=round(s.upper, 5), holds=s.upper <= budget,
                labels=s.labels, next_down=s.next_down,
                labels_to_move=s.labels_to_move, requests_to_move=s.requests_to_move, bands=bands))
        return rows

    def moves(self) -> list[ThresholdMoveView]:
        return [ThresholdMoveView(namespace=m.namespace, kind=m.kind.value, old=m.old, new=m.new, estimate=m.estimate,
                                  upper=m.upper, labels=m.labels, at=m.at) for m in self.book.history]


def _moved(before: Mapping[str, tuple[float, int]], after: Mapping[str, tuple[float, int]],
           known: set[str]) -> set[str]:
    """The namespaces whose prior a change of the stored thresholds moved (of those `known`, all of them when the
    deployment-wide "*" changed)."""
    if before.get("*") != after.get("*"):
        return known | {ns for ns in after if ns != "*"}
    return {ns for ns in before.keys() | after.keys() if before.get(ns) != after.get(ns)}
