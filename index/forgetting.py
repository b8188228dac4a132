"""Forgetting: what an invalidation covers leaves the decision log and the labels too, and nothing is kept
forever (decisions, labels and tombstones age out in the background, in bounded batches through indexes).

To forget a decision is to delete it when it has no label, and otherwise to keep only what training and the
label counts need: the decision's `request_id`, `namespace` (an HMAC), `model`, `api`, `entry_id`,
`similarity`, `min_similarity`, `verdict`, `vetoed_by` (a stage name or reason code), `created_at`, its stages'
names, pass/fail and scores (not their reasons, which may quote the text), and SHA-256 hashes of the two
prompts (`prompt_hash`, `candidate_hash`); `prompt` becomes "" and `candidate_prompt` "" (or stays NULL when
there was no candidate). Its labels keep `source`, `correct` and `created_at`; their `detail` is dropped.
Invalidating a namespace (or everything) also empties its learned thresholds' evidence totals
(`index.storage.evidence`), which hold numbers per band only and age by requests and labels, not days.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, Engine, and_, bindparam, delete, exists, func, or_, select
from sqlalchemy import update as sql_update

from index.errors import store_errors
from index.maintenance import Maintainer
from index.storage.evidence import reset_evidence
from index.storage.schema import decisions, entries, evidence_labels, labels, tombstones

log = logging.getLogger("deja.forgetting")

DAY_SECONDS = 86_400.0
# Rows removed per table per sweep: each sweep is a few index range scans of bounded size, and a backlog (after
# an upgrade, or a lowered retention) drains over successive upkeep ticks instead of in one long transaction.
BATCH = 5_000


@dataclass(frozen=True)
class Retention:
    """Days each kind of record is kept (None: forever). `decision_days` bounds how long a prompt's text stays
    in the decision log; `label_days` how long a label (and the hashes and numbers of its decision) stays;
    `tombstone_days` how long a replica may be away and still catch up on deletions (an older snapshot is
    rebuilt)."""

    decision_days: float | None = 30.0
    label_days: float | None = 90.0
    tombstone_days: float | None = 7.0


@dataclass(frozen=True)
class Swept:
    """What one retention sweep removed."""

    decisions_deleted: int = 0
    decisions_forgotten: int = 0
    labels: int = 0
    tombstones: int = 0

    @property
    def total(self) -> int:
        return self.decisions_deleted + self.decisions_forgotten + self.labels + self.tombstones


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _bare_stages(raw: str) -> str:
    """Stage names, outcomes and scores; the reasons go (a value guard's reason quotes the values it saw)."""
    try:
        stages = json.loads(raw)
    except ValueError:
        return "[]"
    return json.dumps([{"stage": s.get("stage"), "passed": s.get("passed"), "reason": "", "score": s.get("score")}
                       for s in stages if isinstance(s, dict)])


def _labelled(request_id: ColumnElement[str]) -> ColumnElement[bool]:
    return exists().where(labels.c.request_id == request_id)


def forget_decisions(conn: Connection, condition: ColumnElement[bool], at: float, limit: int) -> tuple[int, int]:
    """Forget the decisions matching `condition` that are not forgotten yet (at most `limit`): delete the
    unlabelled, strip the labelled to hashes and numbers. Returns (deleted, forgotten)."""
    query = (select(decisions.c.request_id, decisions.c.prompt, decisions.c.candidate_prompt, decisions.c.stages,
                    _labelled(decisions.c.request_id).label("labelled"))
             .where(condition, decisions.c.forgotten_at.is_(None)))
    rows = conn.execute(query.limit(limit)).all()
    unlabelled = [r.request_id for r in rows if not r.labelled]
    kept = [r for r in rows if r.labelled]
    for start in range(0, len(unlabelled), 500):
        conn.execute(delete(decisions).where(decisions.c.request_id.in_(unlabelled[start:start + 500])))
    if kept:
        conn.execute(
            sql_update(decisions).where(decisions.c.request_id == bindparam("rid")).values(
                prompt="", candidate_prompt=bindparam("candidate"), stages=bindparam("bare"),
                prompt_hash=bindparam("phash"), candidate_hash=bindparam("chash"), forgotten_at=at),
            [{"rid": r.request_id, "candidate": None if r.candidate_prompt is None else "",
              "bare": _bare_stages(r.stages), "phash": text_hash(r.prompt),
              "chash": None if r.candidate_prompt is None else text_hash(r.candidate_prompt)} for r in kept])
        ids = [r.request_id for r in kept]
        for start in range(0, len(ids), 500):
            conn.execute(sql_update(labels).where(labels.c.request_id.in_(ids[start:start + 500])).values(detail=None))
    return len(unlabelled), len(kept)


class Forgetting:
    """Invalidation that forgets the decisions it covers, and the retention sweep of the upkeep loop."""

    def __init__(self, engine: Engine, maintainer: Maintainer, retention: Retention,
                 clock: Callable[[], float]) -> None:
        self.engine = engine
        self.maintainer = maintainer
        self.retention = retention
        self.clock = clock

    def delete(self, entry_ids: Sequence[int]) -> int:
        """Delete entries, and forget the decisions that offered them or asked their prompt."""
        ids = [int(i) for i in entry_ids]
        with store_errors("read entries to forget"), self.engine.connect() as conn:
            asked = conn.execute(select(entries.c.namespace, entries.c.model, entries.c.prompt)
                                 .where(entries.c.id.in_(ids))).all() if ids else []
        deleted = self.maintainer.delete(ids)
        for start in range(0, len(ids), 500):
            self._forget(decisions.c.entry_id.in_(ids[start:start + 500]))
        for row in asked:
            self._forget(and_(decisions.c.namespace == row.namespace, decisions.c.model == row.model,
                              decisions.c.prompt == row.prompt))
        return deleted

    def invalidate(self, namespace: str | None = None, model: str | None = None) -> int:
        """Delete the entries of a namespace and/or model (neither: flush), and forget the decisions of that
        namespace and/or model, and any other that offered one of those entries."""
        scope = _scope(entries.c.namespace, entries.c.model, namespace, model)
        ids: list[int] = []
        if scope:
            with store_errors("read entries to forget"), self.engine.connect() as conn:
                ids = [int(i) for i in conn.execute(select(entries.c.id).where(*scope)).scalars()]
        deleted = self.maintainer.invalidate(namespace, model)
        decision_scope = _scope(decisions.c.namespace, decisions.c.model, namespace, model)
        self._forget(and_(*decision_scope) if decision_scope else decisions.c.request_id.is_not(None))
        for start in range(0, len(ids), 500):
            self._forget(decisions.c.entry_id.in_(ids[start:start + 500]))
        if model is None:  # a namespace's evidence goes with its entries (a model's is not kept apart)
            with store_errors("reset evidence"), self.engine.begin() as conn:
                reset_evidence(conn, namespace, self.clock())
        return deleted

    def _forget(self, condition: ColumnElement[bool]) -> None:
        """Forget in batches, one transaction each: a flush of a large log never holds it all in memory."""
        deleted = forgotten = 0
        while True:
            with store_errors("forget decisions"), self.engine.begin() as conn:
                gone, kept = forget_decisions(conn, condition, self.clock(), BATCH)
            deleted, forgotten = deleted + gone, forgotten + kept
            if gone + kept < BATCH:
                break
        if deleted or forgotten:
            log.info("forgot %d decisions (%d deleted, %d kept as hashes and numbers)", deleted + forgotten,
                     deleted, forgotten)

    def sweep(self) -> Swept:
        """One bounded round of retention: decisions past `decision_days` are forgotten, labels past
        `label_days` deleted (and forgotten decisions left without a label with them), tombstones past
        `tombstone_days` deleted except the newest (SQLite would otherwise reuse its sequence number)."""
        now = self.clock()
        days = self.retention
        swept = {"decisions_deleted": 0, "decisions_forgotten": 0, "labels": 0, "tombstones": 0}
        with store_errors("sweep retention"), self.engine.begin() as conn:
            if days.decision_days is not None:
                old = decisions.c.created_at < now - days.decision_days * DAY_SECONDS
                swept["decisions_deleted"], swept["decisions_forgotten"] = forget_decisions(conn, old, now, BATCH)
            if days.label_days is not None:
                cutoff = now - days.label_days * DAY_SECONDS
                swept["labels"] = _delete_batch(conn, labels.c.created_at < cutoff, labels.c.request_id,
                                                labels.c.source)
                # What the evidence totals count of those labels goes too (their aged weight stays in the totals).
                _delete_batch(conn, evidence_labels.c.created_at < cutoff, evidence_labels.c.request_id)
                orphaned = and_(decisions.c.forgotten_at.is_not(None), decisions.c.created_at < cutoff,
                                ~_labelled(decisions.c.request_id))
                swept["decisions_deleted"] += _delete_batch(conn, orphaned, decisions.c.request_id)
            if days.tombstone_days is not None:
                newest = select(func.max(tombstones.c.seq)).scalar_subquery()
                old_stones = and_(tombstones.c.deleted_at < now - days.tombstone_days * DAY_SECONDS,
                                  tombstones.c.seq < newest)
                swept["tombstones"] = _delete_batch(conn, old_stones, tombstones.c.seq)
        result = Swept(**swept)
        if result.total:
            log.info("retention: %s", result)
        return result


def _scope(namespace_column: ColumnElement[str], model_column: ColumnElement[str], namespace: str | None,
           model: str | None) -> list[ColumnElement[bool]]:
    scope = []
    if namespace is not None:
        scope.append(namespace_column == namespace)
    if model is not None:
        scope.append(model_column == model)
    return scope


def _delete_batch(conn: Connection, condition: ColumnElement[bool], *key: ColumnElement[object]) -> int:
    """Delete at most BATCH rows matching `condition`, chosen by their primary key `key`."""
    table = key[0].table
    chosen = conn.execute(select(*key).where(condition).limit(BATCH)).all()
    if not chosen:
        return 0
    for start in range(0, len(chosen), 500):
        part = chosen[start:start + 500]
        if len(key) == 1:
            conn.execute(delete(table).where(key[0].in_([r[0] for r in part])))
        else:
            conn.execute(delete(table).where(or_(*[and_(*[k == v for k, v in zip(key, r, strict=True)])
                                                   for r in part])))
    return len(chosen)
