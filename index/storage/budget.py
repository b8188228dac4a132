"""The budget's tallies as running totals: per (namespace, API), the served semantic hits, how many of them were
audited (a label from an audit, feedback or a human) and how many of those were wrong. They are counted where the
decision log writes (`BudgetTallies.count_in`, in the transaction that claims logged decisions and marks them
counted, and `fold_in`, in the one that writes a label), and read by version (`tallies_since`), so the budget's
pass costs what changed, not what the log holds. They are counts, not a statistic: whether a namespace's budget
holds is the learner's to say (`index.match.live_threshold`).

Locks: the tally clock (`deja_meta` key `tally_version`, held to the commit, so versions commit in order) first,
then the tally rows sorted by (namespace, API), then the evidence's (`index.storage.evidence`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from index.errors import store_errors
from index.records import Verdict
from index.storage.decision_log import PRECEDENCE, DecisionRecord, LabelSource
from index.storage.evidence import next_version
from index.storage.schema import budget_labels, budget_tallies, decisions, labels

# Labels that judge a served hit itself; shadows and explorations judge answers that were not served.
SERVED_SOURCES = (LabelSource.HUMAN, LabelSource.FEEDBACK, LabelSource.AUDIT)
VERSION_KEY = "tally_version"
_CHUNK = 500
_HIT = Verdict.SEMANTIC_HIT.value


@dataclass(frozen=True)
class BudgetTally:
    """One (namespace, API)'s served semantic hits, those audited and those audited wrong."""

    namespace: str
    api: str
    served: int
    audited: int
    wrong: int


class BudgetTallies:
    """The tallies' writes, in the decision log's transactions (`index.storage.decision_log.TallySink`). Each write
    takes the tally clock first: a label and its decision written at once by two replicas then take turns, and the
    second sees the first's row (so a label that arrives before its decision still counts, once)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock

    def count_in(self, conn: Connection, records: Sequence[DecisionRecord]) -> None:
        """Count the served semantic hits among `records` (being logged) and the labels they already have."""
        served: dict[tuple[str, str], tuple[int, int, int]] = {}
        for record in records:
            if record.verdict == _HIT:
                n = served.get((record.namespace, record.api), (0, 0, 0))[0]
                served[(record.namespace, record.api)] = (n + 1, 0, 0)
        if not served:
            return
        version = next_version(conn, self.clock(), VERSION_KEY)
        deltas = _fold(conn, [r.request_id for r in records if r.verdict == _HIT])
        for key, (n, _, _) in served.items():
            deltas[key] = _plus(deltas.get(key, (0, 0, 0)), (n, 0, 0))
        _add(conn, deltas, version)

    def fold_in(self, conn: Connection, request_id: str, source: LabelSource) -> None:
        """Fold a label just written into the tallies, if it judges a served hit already logged."""
        if source not in SERVED_SOURCES:
            return
        version = next_version(conn, self.clock(), VERSION_KEY)
        _add(conn, _fold(conn, [request_id]), version)


def _plus(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _fold(conn: Connection, request_ids: Iterable[str]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """The tallies' changes from the labels of `request_ids` that judge a served semantic hit: a hit audited for
    the first time counts once, a changed verdict (a label of higher precedence says otherwise) moves `wrong`, the
    same verdict again nothing. Records what is counted of each hit (`deja_budget_labels`)."""
    ids = sorted(set(request_ids))
    deltas: dict[tuple[str, str], tuple[int, int, int]] = {}
    new: list[dict[str, object]] = []
    changed: list[dict[str, object]] = []
    for start in range(0, len(ids), _CHUNK):
        part = ids[start:start + _CHUNK]
        best = _best(conn.execute(select(labels.c.request_id, labels.c.source, labels.c.correct).where(
            labels.c.request_id.in_(part), labels.c.source.in_([s.value for s in SERVED_SOURCES]))).all())
        if not best:
            continue
        hits = {str(r.request_id): (str(r.namespace), str(r.api)) for r in conn.execute(
            select(decisions.c.request_id, decisions.c.namespace, decisions.c.api)
            .where(decisions.c.request_id.in_(sorted(best)), decisions.c.verdict == _HIT)).all()}
        counted = {str(r.request_id): bool(r.correct) for r in conn.execute(
            select(budget_labels).where(budget_labels.c.request_id.in_(sorted(hits)))).all()}
        for request_id, key in sorted(hits.items()):
            correct, before = best[request_id], counted.get(request_id)
            if before is None:
                step = (0, 1, 0 if correct else 1)
                new.append({"request_id": request_id, "correct": correct})
            elif before != correct:
                step = (0, 0, -1 if correct else 1)
                changed.append({"b_request_id": request_id, "correct": correct})
            else:
                continue
            deltas[key] = _plus(deltas.get(key, (0, 0, 0)), step)
    if new:
        conn.execute(insert(budget_labels), new)
    if changed:
        conn.execute(update(budget_labels).where(budget_labels.c.request_id == bindparam("b_request_id")), changed)
    return deltas


def tallies_since(engine: Engine, since: int) -> tuple[list[BudgetTally], int]:
    """The tallies changed after version `since` (0: every one) and the latest version among them (`since` when
    none changed)."""
    query = select(budget_tallies).where(budget_tallies.c.version > since).order_by(
        budget_tallies.c.namespace, budget_tallies.c.api)
    with store_errors("read the budget"), engine.connect() as conn:
        rows = conn.execute(query).all()
    tallies = [BudgetTally(str(r.namespace), str(r.api), int(r.served), int(r.audited), int(r.wrong)) for r in rows]
    return tallies, max([since, *(int(r.version) for r in rows)])


def _best(rows: Iterable[Any]) -> dict[str, bool]:
    """Each request's verdict by precedence (human > feedback > audit)."""
    best: dict[str, tuple[int, bool]] = {}
    for row in rows:
        rank = PRECEDENCE.index(LabelSource(row.source))
        if row.request_id not in best or rank < best[str(row.request_id)][0]:
            best[str(row.request_id)] = (rank, bool(row.correct))
    return {request_id: correct for request_id, (_, correct) in best.items()}


def _add(conn: Connection, deltas: dict[tuple[str, str], tuple[int, int, int]], version: int) -> None:
    """Add (served, audited, wrong) to each tally, stamped with `version` (the tally clock's, taken first)."""
    rows = [{"namespace": namespace, "api": api, "served": served, "audited": audited, "wrong": wrong,
             "version": version} for (namespace, api), (served, audited, wrong) in sorted(deltas.items()) if
            served or audited or wrong]
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    for start in range(0, len(rows), _CHUNK):
        upsert = dialect.insert(budget_tallies).values(rows[start:start + _CHUNK])
        conn.execute(upsert.on_conflict_do_update(
            index_elements=[budget_tallies.c.namespace, budget_tallies.c.api],
            set_={"served": budget_tallies.c.served + upsert.excluded.served,
                  "audited": budget_tallies.c.audited + upsert.excluded.audited,
                  "wrong": budget_tallies.c.wrong + upsert.excluded.wrong, "version": version}))
