"""The live false-hit budget: reads the per-(namespace, API) tallies (`index.storage.budget`), moves each namespace's
bar (`index.match.bar_book`), exports both as gauges and answers `GET /deja/budget`."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from pydantic import BaseModel
from sqlalchemy import Engine

from index.match.bar import raised
from index.match.bar_book import BarBook, BarChange
from index.match.budget import BudgetTally, audits_to_trust
from index.match.differences import Differences
from index.storage.budget import budget_tallies
from service.metrics import Metrics
from service.thresholds import NamespaceThreshold, ThresholdMoveView


class NamespaceBudget(BaseModel):
    namespace: str  # as logged: the HMAC of the credential
    api: str
    served: int
    audited: int
    wrong: int
    estimate: float | None  # wrong / audited; None until a served hit was audited
    upper: float  # one-sided 95% Clopper-Pearson upper bound on wrong / served
    bar: float | None  # judge probability bar (None: nothing can be served) or cosine threshold
    # Further audits, all right, before the upper bound (corrected for the label model's error rate) certifies the
    # budget: 0 = certified now; None = not within a million audits.
    audits_to_trust: int | None


class BarMove(BaseModel):
    namespace: str
    old_level: int
    new_level: int
    served: int
    audited: int
    wrong: int
    upper: float
    at: float


class DifferenceView(BaseModel):
    namespace: str
    a: str
    b: str
    same: bool  # what the evidence says: False while wrong labels outweigh right ones
    wrong: float  # weight of wrong labels (a wrong served hit), decayed to now
    right: float  # weight of right labels (a right near-miss), decayed to now
    labels: int  # labels counted, undecayed
    vetoes: bool  # wrong - right reaches DEJA_DIFFERENCE_MIN_LABELS: such candidates are not served
    changed: int  # later decisions this difference changed on this replica


class BudgetReport(BaseModel):
    """`GET /deja/budget`: the audited tallies per (namespace, API), and per namespace the learned threshold in
    force with the evidence behind it."""

    budget: float
    namespaces: list[NamespaceBudget]
    thresholds: list[NamespaceThreshold] = []


class Evidence(BaseModel):
    """`GET /deja/budget/evidence`: the latest bar moves and the remembered differences with the counts behind
    each."""

    bar_changes: list[BarMove]
    differences: list[DifferenceView]
    threshold_moves: list[ThresholdMoveView] = []


class BudgetKeeper:
    """Holds the latest tallies; `refresh` (the upkeep tick, or a `/deja/budget` read) re-reads them from SQL."""

    def __init__(self, engine: Engine, bars: BarBook, metrics: Metrics, differences: Differences,
                 prior_bar: Callable[[str], float], learned: Callable[[str], float | None] | None = None) -> None:
        """`learned`: each namespace's learned threshold (None: the bar levels move the prior)."""
        self.engine = engine
        self.bars = bars
        self.metrics = metrics
        self.differences = differences
        self.prior_bar = prior_bar
        self.learned = learned
        self.tallies: list[BudgetTally] = []
        self._lock = threading.Lock()

    def bar(self, namespace: str) -> float | None:
        learned = None if self.learned is None else self.learned(namespace)
        if learned is not None:
            return learned
        value = raised(self.prior_bar(namespace), self.bars.level(namespace))
        return None if math.isinf(value) else value

    def refresh(self) -> list[BarChange]:
        """In a worker thread: read the tallies, move the bars, set the gauges."""
        with self._lock:
            self.differences.sync()
            tallies = budget_tallies(self.engine)
            changes = self.bars.update(tallies)
            self.tallies = tallies
        for change in changes:
            self.metrics.bar_changes.labels("up" if change.new_level > change.old_level else "down").inc()
        self._export(tallies)
        return changes

    def _export(self, tallies: list[BudgetTally]) -> None:
        m = self.metrics
        m.budget.set(self.bars.budget)
        for t in tallies:
            labels = (t.namespace, t.api)
            m.budget_served.labels(*labels).set(t.served)
            m.budget_audited.labels(*labels).set(t.audited)
            m.budget_wrong.labels(*labels).set(t.wrong)
            m.budget_upper.labels(*labels).set(t.upper)
            if t.estimate is not None:
                m.budget_estimate.labels(*labels).set(t.estimate)
            bar = self.bar(t.namespace)
            if bar is not None:
                m.budget_bar.labels(*labels).set(bar)

    def report(self) -> BudgetReport:
        rows = [NamespaceBudget(namespace=t.namespace, api=t.api, served=t.served, audited=t.audited, wrong=t.wrong,
                                estimate=t.estimate, upper=t.upper, bar=self.bar(t.namespace),
                                audits_to_trust=audits_to_trust(t.wrong, t.audited, self.bars.budget,
                                                                self.bars.error_rate))
                for t in self.tallies]
        return BudgetReport(budget=self.bars.budget, namespaces=rows)

    def evidence(self) -> Evidence:
        moves = [BarMove(namespace=c.namespace, old_level=c.old_level, new_level=c.new_level, served=c.served,
                         audited=c.audited, wrong=c.wrong, upper=c.upper, at=c.at) for c in self.bars.history]
        diffs = [DifferenceView(namespace=d.namespace, a=d.a, b=d.b, same=d.same, wrong=round(d.wrong, 4),
                                right=round(d.right, 4), labels=d.labels,
                                vetoes=d.net_wrong >= self.differences.min_net_wrong, changed=d.changed)
                 for d in self.differences.remembered()]
        return Evidence(bar_changes=moves, differences=diffs)
