"""The false-hit budget measured on a deployment's own traffic: per (namespace, API), the served semantic hits,
how many of them were audited (a label from an audit, feedback or a human) and how many of those were wrong,
the estimate wrong / audited and its one-sided 95% Clopper-Pearson upper bound.

The bound is exact for a fixed sample. It is read continuously (every upkeep tick), which makes it optimistic
in the sense of a sequential test; audits sampled more densely where hits are riskier (uncertain candidates,
young entries, a namespace over budget) bias the estimate upward, which errs on the safe side.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scipy.stats import beta
from sqlalchemy import Engine, func, select

from index.decision_log import LabelSource
from index.errors import store_errors
from index.records import Verdict
from index.schema import decisions, labels

CONFIDENCE = 0.95
# Labels that judge a served hit itself; shadows and explorations judge answers that were not served.
SERVED_SOURCES = (LabelSource.HUMAN, LabelSource.FEEDBACK, LabelSource.AUDIT)


def upper_bound(wrong: int, audited: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound on the wrong rate after `wrong` of `audited` (1.0 with no audit)."""
    if audited <= 0 or wrong >= audited:
        return 1.0
    return float(beta.ppf(confidence, wrong + 1, audited - wrong))


@dataclass(frozen=True)
class BudgetTally:
    """One (namespace, API)'s evidence. `estimate` is None until a served hit was audited."""

    namespace: str
    api: str
    served: int
    audited: int
    wrong: int

    @property
    def estimate(self) -> float | None:
        return self.wrong / self.audited if self.audited else None

    @property
    def upper(self) -> float:
        return upper_bound(self.wrong, self.audited)


def merge(tallies: Iterable[BudgetTally], namespace: str, api: str = "*") -> BudgetTally:
    """Several tallies summed into one (a namespace over all its APIs)."""
    items = list(tallies)
    return BudgetTally(namespace, api, sum(t.served for t in items), sum(t.audited for t in items),
                       sum(t.wrong for t in items))


def budget_tallies(engine: Engine) -> list[BudgetTally]:
    """Every (namespace, API) with a served semantic hit, from the decision log and its labels; a hit labelled by
    several sources counts once, by precedence (human > feedback > audit)."""
    hit = decisions.c.verdict == Verdict.SEMANTIC_HIT.value
    served_q = select(decisions.c.namespace, decisions.c.api, func.count()).where(hit).group_by(
        decisions.c.namespace, decisions.c.api)
    labelled_q = (select(decisions.c.request_id, decisions.c.namespace, decisions.c.api, labels.c.source,
                         labels.c.correct)
                  .join(labels, labels.c.request_id == decisions.c.request_id)
                  .where(hit, labels.c.source.in_([s.value for s in SERVED_SOURCES])))
    with store_errors("read the budget"), engine.connect() as conn:
        served = {(ns, api): int(n) for ns, api, n in conn.execute(served_q).all()}
        rows = conn.execute(labelled_q).all()
    rank = {s.value: i for i, s in enumerate(SERVED_SOURCES)}
    best: dict[str, tuple[int, str, str, bool]] = {}
    for row in rows:
        r = rank[row.source]
        if row.request_id not in best or r < best[row.request_id][0]:
            best[row.request_id] = (r, row.namespace, row.api, bool(row.correct))
    audited: dict[tuple[str, str], list[int]] = {}
    for _, ns, api, correct in best.values():
        tally = audited.setdefault((ns, api), [0, 0])
        tally[0] += 1
        tally[1] += 0 if correct else 1
    return [BudgetTally(ns, api, n, *audited.get((ns, api), [0, 0]))
            for (ns, api), n in sorted(served.items())]
