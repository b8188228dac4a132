"""Each namespace's learned thresholds (one per kind of difference) on a gateway: `ThresholdKeeper.refresh` (the
upkeep pass, every `DEJA_THRESHOLD_INTERVAL_SECONDS`) re-reads every namespace's evidence from the shared decision log
(`index.storage.evidence`) and lets `index.match.threshold_book` choose; `view` is what `/deja/budget` and the
overview page show of what that pass chose (they never run one): the threshold in force, the budget's statistic
there (the learner's upper bound on wrong ÷ served at its confidence), the evidence per band behind it and the
labels that would move it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import BaseModel

from index.errors import StoreUnavailable
from index.match.evidence import by_kind, collect
from index.match.outcome import Kind
from index.match.policy import MatchPolicy
from index.match.threshold_book import ThresholdBook, ThresholdMove
from index.storage.evidence import EvidenceLog
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
    """Refreshes the book from SQL; the book itself is what the Matcher reads."""

    def __init__(self, book: ThresholdBook, evidence: EvidenceLog, prior: Callable[[str], MatchPolicy],
                 metrics: Metrics) -> None:
        self.book = book
        self.evidence = evidence
        self.prior = prior
        self.metrics = metrics

    def refresh(self) -> list[ThresholdMove]:
        """In a worker thread: every namespace's threshold from its evidence."""
        moves = []
        try:
            for namespace in self.evidence.namespaces():
                policy = self.prior(namespace)
                for kind, observations in by_kind(self.evidence.observations(namespace)).items():
                    found = collect(observations, self.book.config.floor)
                    move = self.book.update(namespace, found, policy.prior_for(kind), kind)
                    state = self.book.state(namespace, kind)
                    if state is not None:
                        self._export(namespace, kind, state.threshold, state.upper)
                    if move is not None:
                        moves.append(move)
                        self.metrics.threshold_moves.labels("down" if move.new < move.old else "up").inc()
        except StoreUnavailable as exc:
            log.warning("thresholds not refreshed: %s", exc)
        return moves

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
