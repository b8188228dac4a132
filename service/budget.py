"""The false-hit budget on a gateway: one ratio, wrong ÷ served (`DEJA_MAX_FALSE_HIT_RATE`), with one statistic, the
learner's (`index.match.live_threshold`: the upper bound on wrong ÷ served at its confidence). `BudgetKeeper.refresh`
(the upkeep pass, `service.upkeep.Upkeep.refresh_budget`) reads the tallies per (namespace, API) that changed since
its last pass (`index.storage.budget`: running totals, read by version) and exports them; `GET /deja/budget` and the
overview page show what the last pass stored."""

from __future__ import annotations

import threading
from collections.abc import Callable

from pydantic import BaseModel
from sqlalchemy import Engine

from index.match.differences import Differences
from index.storage.budget import BudgetTally, tallies_since
from index.storage.variation import SharedAnswerBaselines
from service.metrics import Metrics
from service.thresholds import NamespaceThreshold, ThresholdMoveView


class ApiTally(BaseModel):
    """One (namespace, API)'s counts: no statistic of its own (the learner's is per namespace and kind)."""

    namespace: str  # as logged: the HMAC of the credential
    api: str
    served: int  # semantic hits served
    audited: int  # of those, with a label that judges the served answer (audit, feedback or human)
    wrong: int  # of those, labelled wrong


class DifferenceView(BaseModel):
    namespace: str
    a: str
    b: str
    same: bool  # what the evidence says: False while wrong labels outweigh right ones
    wrong: float  # weight of wrong labels (a wrong served hit), decayed to now
    right: float  # weight of right labels (a right near miss), decayed to now
    labels: int  # labels counted, undecayed
    vetoes: bool  # wrong - right reaches DEJA_DIFFERENCE_MIN_LABELS: such candidates are not served
    changed: int  # later decisions this difference changed on this replica


class BudgetReport(BaseModel):
    """`GET /deja/budget`: the budget (wrong ÷ served) and the learner's confidence; the tallies per (namespace,
    API); per namespace and kind the threshold in force with the statistic there (`upper`, `holds`) and the
    evidence behind it. All as the last upkeep pass stored them (`at`: its wall-clock time; None before the first)."""

    budget: float
    confidence: float
    at: float | None = None
    namespaces: list[ApiTally]
    thresholds: list[NamespaceThreshold] = []


class Evidence(BaseModel):
    """`GET /deja/budget/evidence`: the remembered differences with the counts behind each, and the latest moves
    of the learned thresholds."""

    differences: list[DifferenceView]
    threshold_moves: list[ThresholdMoveView] = []


class BudgetKeeper:
    """Holds the tallies as of the last upkeep pass; `refresh` (that pass, in a worker thread) reads the tallies
    changed since the version it read last (`index.storage.budget`: running totals kept where the decision log
    writes), the remembered differences and the upstream's answer variation the other replicas measured, and sets
    the gauges. Reading a report computes nothing."""

    def __init__(self, engine: Engine, budget: float, confidence: float, metrics: Metrics, differences: Differences,
                 clock: Callable[[], float], variation: SharedAnswerBaselines | None = None) -> None:
        """`budget` and `confidence`: the learner's (`index.match.live_threshold.LearnerConfig`)."""
        self.engine = engine
        self.budget = budget
        self.confidence = confidence
        self.metrics = metrics
        self.differences = differences
        self.clock = clock
        self.variation = variation
        self.version = 0
        self._tallies: dict[tuple[str, str], BudgetTally] = {}
        self.at: float | None = None
        self._lock = threading.Lock()

    @property
    def tallies(self) -> list[BudgetTally]:
        return [tally for _, tally in sorted(self._tallies.items())]

    def refresh(self) -> None:
        with self._lock:
            self.differences.sync()
            if self.variation is not None:
                self.variation.sync()
            changed, self.version = tallies_since(self.engine, self.version)
            self._tallies.update({(t.namespace, t.api): t for t in changed})
            self.at = self.clock()
        self._export(changed)

    def _export(self, tallies: list[BudgetTally]) -> None:
        m = self.metrics
        m.budget.set(self.budget)
        for t in tallies:
            labels = (t.namespace, t.api)
            m.budget_served.labels(*labels).set(t.served)
            m.budget_audited.labels(*labels).set(t.audited)
            m.budget_wrong.labels(*labels).set(t.wrong)

    def report(self, thresholds: list[NamespaceThreshold]) -> BudgetReport:
        """The stored tallies, with `thresholds` (the learner's rows, as its last pass left them)."""
        rows = [ApiTally(namespace=t.namespace, api=t.api, served=t.served, audited=t.audited, wrong=t.wrong)
                for t in self.tallies]
        return BudgetReport(budget=self.budget, confidence=self.confidence, at=self.at, namespaces=rows,
                            thresholds=thresholds)

    def evidence(self, moves: list[ThresholdMoveView]) -> Evidence:
        diffs = [DifferenceView(namespace=d.namespace, a=d.a, b=d.b, same=d.same, wrong=round(d.wrong, 4),
                                right=round(d.right, 4), labels=d.labels,
                                vetoes=d.net_wrong >= self.differences.min_net_wrong, changed=d.changed)
                 for d in self.differences.remembered()]
        return Evidence(differences=diffs, threshold_moves=moves)
