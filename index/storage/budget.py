"""The budget's tallies read from the decision log and its labels: per (namespace, API), the served semantic hits,
how many of them were audited (a label from an audit, feedback or a human) and how many of those were wrong. They
are counts, not a statistic: whether a namespace's budget holds is the learner's to say
(`index.match.live_threshold`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, func, select

from index.errors import store_errors
from index.records import Verdict
from index.storage.decision_log import LabelSource
from index.storage.schema import decisions, labels

# Labels that judge a served hit itself; shadows and explorations judge answers that were not served.
SERVED_SOURCES = (LabelSource.HUMAN, LabelSource.FEEDBACK, LabelSource.AUDIT)


@dataclass(frozen=True)
class BudgetTally:
    """One (namespace, API)'s served semantic hits, those audited and those audited wrong."""

    namespace: str
    api: str
    served: int
    audited: int
    wrong: int


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
