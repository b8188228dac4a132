"""The learned thresholds' evidence in the shared store, as running totals per (namespace, kind) and band
(`index.match.evidence.Totals`): `count_in` in the transaction that claims logged decisions and marks them counted
(`index.storage.decision_log.DecisionLog.count`, the budget's pass), `settle` when a label is written (and, for a
label that arrived before its decision was counted or lost a race, when that decision is counted or on the next
pass). A pass never re-reads the log: `changed` returns the streams published
since a version.

Publication is what makes every replica choose alike: a stream publishes (its mass frozen, the evidence clock
`deja_meta.evidence_version` stamped on it) whenever its labels change, and on requests alone once they grew by an
eighth since its last publication (at most every 1,000 requests), so every replica that reads a stream at a
version reads the same evidence. Locks are taken in one order,
label rows, then streams sorted by (namespace, kind), then the evidence clock, so replicas writing at once never
deadlock; the clock's row lock also makes versions commit in order, so "published after v" misses nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, and_, bindparam, delete, false, insert, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite

from index.errors import store_errors
from index.match.evidence import Aging, BandTotals, Evidence, Totals
from index.match.outcome import Kind
from index.records import Verdict
from index.storage.decision_log import PRECEDENCE, DecisionRecord, LabelSource
from index.storage.schema import decisions, evidence, evidence_bands, evidence_labels, labels, meta

# The evidence clock's key in `deja_meta`: every publication takes the next value.
VERSION_KEY = "evidence_version"
# Label rows settled per transaction at most, and ids per IN list.
SETTLE_BATCH = 2_000
# A label whose decision is not logged this long after the label was written is given up (its flush was lost).
ORPHAN_SECONDS = 3600.0
_CHUNK = 500
_SERVED = (Verdict.SEMANTIC_HIT.value, Verdict.EXACT_HIT.value)

Stream = tuple[str, str]  # (namespace, kind)
_THIS_STREAM = and_(evidence.c.namespace == bindparam("b_namespace"), evidence.c.kind == bindparam("b_kind"))


@dataclass(frozen=True)
class StreamEvidence:
    """One stream's evidence as last published, and the version it was published at."""

    namespace: str
    kind: Kind
    version: int
    evidence: Evidence


@dataclass
class _Loaded:
    """A stream's totals read under its row lock, the bands already stored and the bands changed since."""

    totals: Totals
    version: int
    stored: set[float]
    touched: set[float] = field(default_factory=set)
    publish: bool = False


class EvidenceStore:
    """The totals' SQL reads and writes; raises `StoreUnavailable` when the database is down."""

    def __init__(self, engine: Engine, aging: Aging, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.aging = aging
        self.clock = clock

    def count_in(self, conn: Connection, records: Sequence[DecisionRecord]) -> None:
        """The requests among logged decisions (oldest first), in the caller's transaction (the one that marks
        them counted): would-serve ones in their kind's band, hits served whatever the threshold (exact hits, plain
        rewordings) as the cosine kind's fixed mass. A stream whose requests grew by an eighth since it last
        published publishes again (`Totals.stale`)."""
        observed: dict[Stream, list[float | None]] = {}
        for record in sorted(records, key=lambda r: (r.created_at, r.request_id)):
            if record.would_serve:
                low = self.aging.band(record.similarity)
                if low is not None:
                    observed.setdefault((record.namespace, _kind(record.kind).value), []).append(low)
            elif record.verdict in _SERVED:
                observed.setdefault((record.namespace, Kind.COSINE.value), []).append(None)
        if not observed:
            return
        loaded = _lock(conn, observed)
        for stream, lows in observed.items():
            state = loaded[stream]
            for low in lows:
                state.totals.observe(low, self.aging)
            state.touched.update(low for low in lows if low is not None)
            state.publish = state.totals.stale
        self._write(conn, loaded)

    def settle(self, request_ids: Sequence[str] | None = None) -> int:
        """Fold labels not yet counted into the totals (those of `request_ids`, or every one), a label's
        decision counting by precedence (human > feedback > audit > explore > shadow); a label whose decision is not
        logged yet waits for it. Returns the labels settled."""
        settled = 0
        chunks = [None] if request_ids is None else [request_ids[i:i + _CHUNK]
                                                     for i in range(0, len(request_ids), _CHUNK)]
        for chunk in chunks:
            while True:
                with store_errors("count labels"), self.engine.begin() as conn:
                    claimed, done = self._settle(conn, chunk)
                settled += done
                if claimed < SETTLE_BATCH or not done:
                    break
        return settled

    def _settle(self, conn: Connection, request_ids: Sequence[str] | None) -> tuple[int, int]:
        """One batch: (labels claimed, labels settled or given up)."""
        pending = (select(labels.c.request_id, labels.c.source).where(labels.c.counted == false())
                   .order_by(labels.c.created_at, labels.c.request_id, labels.c.source).limit(SETTLE_BATCH)
                   .with_for_update(skip_locked=True))
        if request_ids is not None:
            pending = pending.where(labels.c.request_id.in_(request_ids))
        claim = (update(labels).where(tuple_(labels.c.request_id, labels.c.source).in_(pending))
                 .values(counted=True).returning(labels.c.request_id, labels.c.created_at))
        claimed = conn.execute(claim).all()
        ids = sorted({str(r[0]) for r in claimed})
        if not ids:
            return 0, 0
        logged = {str(r.request_id): r for r in conn.execute(
            select(decisions.c.request_id, decisions.c.namespace, decisions.c.kind, decisions.c.similarity,
                   decisions.c.would_serve, decisions.c.counted).where(decisions.c.request_id.in_(ids))).all()}
        found = {request_id: r for request_id, r in logged.items() if r.counted}
        # Not counted yet: the pass that counts the decision settles them. One never logged (its flush lost, its
        # decision gone) is given up after ORPHAN_SECONDS, so that it does not hold up the labels behind it.
        cutoff = self.clock() - ORPHAN_SECONDS
        waiting = {str(r[0]) for r in claimed
                   if str(r[0]) not in found and (str(r[0]) in logged or float(r[1]) >= cutoff)}
        if waiting:
            conn.execute(update(labels).where(labels.c.request_id.in_(sorted(waiting))).values(counted=False))
        where: dict[str, tuple[Stream, float]] = {}
        for request_id, row in found.items():
            low = self.aging.band(float(row.similarity)) if row.would_serve else None
            if low is not None:
                where[request_id] = ((str(row.namespace), _kind(row.kind).value), low)
        if where:
            loaded = _lock(conn, {stream: [] for stream, _ in where.values()})
            self._fold(conn, where, loaded)
            self._write(conn, loaded)
        return len(claimed), len(claimed) - sum(1 for r in claimed if str(r[0]) in waiting)

    def _fold(self, conn: Connection, where: dict[str, tuple[Stream, float]], loaded: dict[Stream, _Loaded]) -> None:
        """Each decision's label by precedence against what the totals count of it: a new label, a changed one,
        or nothing (the same answer again)."""
        ids = sorted(where)
        best: dict[str, tuple[int, bool, float]] = {}
        for row in conn.execute(select(labels.c.request_id, labels.c.source, labels.c.correct, labels.c.created_at)
                                .where(labels.c.request_id.in_(ids))).all():
            rank = PRECEDENCE.index(LabelSource(row.source))
            if row.request_id not in best or rank < best[row.request_id][0]:
                best[str(row.request_id)] = (rank, bool(row.correct), float(row.created_at))
        counted = {str(r.request_id): r for r in conn.execute(
            select(evidence_labels).where(evidence_labels.c.request_id.in_(ids))).all()}
        new, changed = [], []
        for request_id in sorted(best, key=lambda i: (best[i][2], i)):  # in the order the labels arrived
            (stream, low), (_, correct, at) = where[request_id], best[request_id]
            state, before = loaded[stream], counted.get(request_id)
            if before is None:
                seq = state.totals.label(low, correct, self.aging)
                new.append({"request_id": request_id, "namespace": stream[0], "kind": stream[1], "low": low,
                            "seq": seq, "correct": correct, "created_at": at})
            elif bool(before.correct) != correct:
                state.totals.relabel(float(before.low), int(before.seq), correct, self.aging)
                changed.append({"b_request_id": request_id, "correct": correct})
                low = float(before.low)
            else:
                continue
            state.touched.add(low)
            state.publish = True
        if new:
            conn.execute(insert(evidence_labels), new)
        if changed:
            conn.execute(update(evidence_labels).where(evidence_labels.c.request_id == bindparam("b_request_id")),
                         changed)

    def _write(self, conn: Connection, loaded: dict[Stream, _Loaded]) -> None:
        """The changed bands and streams; the published ones stamped with the next version (the clock's lock last)."""
        inserts, updates, streams = [], [], []
        for (namespace, kind), state in sorted(loaded.items()):
            if state.publish:
                state.totals.publish(self.aging)
                state.touched.update(state.totals.bands)
            for low in sorted(state.touched):
                row = _band_row(state.totals.bands[low])
                if low in state.stored:
                    updates.append({"b_namespace": namespace, "b_kind": kind, "b_low": low, **row})
                else:
                    inserts.append({"namespace": namespace, "kind": kind, "low": low, **row})
            streams.append({"b_namespace": namespace, "b_kind": kind, **_stream_row(state.totals)})
        if inserts:
            conn.execute(insert(evidence_bands), inserts)
        if updates:
            conn.execute(update(evidence_bands).where(
                evidence_bands.c.namespace == bindparam("b_namespace"), evidence_bands.c.kind == bindparam("b_kind"),
                evidence_bands.c.low == bindparam("b_low")), updates)
        if streams:
            conn.execute(update(evidence).where(_THIS_STREAM), streams)
        published = [{"b_namespace": ns, "b_kind": kind} for (ns, kind), s in sorted(loaded.items()) if s.publish]
        if published:
            conn.execute(update(evidence).where(_THIS_STREAM).values(version=next_version(conn, self.clock())),
                         published)

    def changed(self, since: int) -> list[StreamEvidence]:
        """Every stream published after version `since` (0: every stream), with the evidence it published."""
        return self._published(evidence.c.version > since)

    def of(self, namespaces: Iterable[str]) -> list[StreamEvidence]:
        """The published evidence of every stream of `namespaces`."""
        names = sorted(set(namespaces))
        found: list[StreamEvidence] = []
        for start in range(0, len(names), _CHUNK):
            found += self._published(and_(evidence.c.namespace.in_(names[start:start + _CHUNK]),
                                          evidence.c.version > 0))
        return found

    def _published(self, condition: ColumnElement[bool]) -> list[StreamEvidence]:
        joined = evidence.outerjoin(evidence_bands, and_(evidence_bands.c.namespace == evidence.c.namespace,
                                                         evidence_bands.c.kind == evidence.c.kind))
        query = (select(evidence, evidence_bands.c.low, evidence_bands.c.mass, evidence_bands.c.mass_at,
                        evidence_bands.c.labels_right, evidence_bands.c.labels_wrong, evidence_bands.c.labels_at,
                        evidence_bands.c.served)
                 .select_from(joined).where(condition).order_by(evidence.c.namespace, evidence.c.kind))
        with store_errors("read evidence"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        streams: dict[Stream, tuple[int, Totals]] = {}
        for row in rows:
            key = (str(row.namespace), str(row.kind))
            if key not in streams:
                streams[key] = (int(row.version), _totals(row))
            if row.low is not None:
                streams[key][1].bands[float(row.low)] = _band(row)
        return [StreamEvidence(ns, _kind(kind), version, totals.published(self.aging))
                for (ns, kind), (version, totals) in streams.items()]


def next_version(conn: Connection, at: float, key: str = VERSION_KEY) -> int:
    """The next value of the clock `key` in `deja_meta` (the evidence clock by default), its row locked until the
    transaction ends (take it last)."""
    read = select(meta.c.value).where(meta.c.key == key).with_for_update()
    value = conn.execute(read).scalar_one_or_none()
    if value is None:
        conn.execute(insert_ignoring(conn, meta, [{"key": key, "value": "0", "updated_at": at}]))
        value = conn.execute(read).scalar_one()
    version = int(value) + 1
    conn.execute(update(meta).where(meta.c.key == key).values(value=str(version), updated_at=at))
    return version


def reset_evidence(conn: Connection, namespace: str | None, at: float) -> int:
    """Empty the totals of `namespace` (None: every namespace), published at the next version so every replica's
    pass serves its priors again; returns the streams reset."""
    scope = [] if namespace is None else [evidence.c.namespace == namespace]
    keys = [(str(r[0]), str(r[1])) for r in conn.execute(
        select(evidence.c.namespace, evidence.c.kind).where(*scope).order_by(evidence.c.namespace, evidence.c.kind)
        .with_for_update()).all()]
    # Decisions of the namespace not counted yet belong to the evidence emptied here: they are not counted later.
    conn.execute(update(decisions).where(decisions.c.counted == false(),
                                         *([] if namespace is None else [decisions.c.namespace == namespace]))
                 .values(counted=True))
    if not keys:
        return 0
    for table in (evidence_bands, evidence_labels):
        conn.execute(delete(table).where(*([] if namespace is None else [table.c.namespace == namespace])))
    conn.execute(update(evidence).where(*scope).values(**_stream_row(Totals()), version=next_version(conn, at)))
    return len(keys)


def _lock(conn: Connection, streams: Iterable[Stream]) -> dict[Stream, _Loaded]:
    """The streams' totals under their row locks, created empty where missing (sorted: one lock order)."""
    keys = sorted(set(streams))
    loaded: dict[Stream, _Loaded] = {}
    for start in range(0, len(keys), _CHUNK):
        part = keys[start:start + _CHUNK]
        empty = {**_stream_row(Totals()), "version": 0}
        # One statement executed many times (compiled once, cached), never a VALUES list compiled per call.
        conn.execute(_ignoring(conn, evidence), [{"namespace": ns, "kind": kind, **empty} for ns, kind in part])
        within = tuple_(evidence.c.namespace, evidence.c.kind).in_(part)
        for row in conn.execute(select(evidence).where(within).order_by(evidence.c.namespace, evidence.c.kind)
                                .with_for_update()).all():
            loaded[(str(row.namespace), str(row.kind))] = _Loaded(_totals(row), int(row.version), set())
        for row in conn.execute(select(evidence_bands).where(
                tuple_(evidence_bands.c.namespace, evidence_bands.c.kind).in_(part))).all():
            state = loaded[(str(row.namespace), str(row.kind))]
            state.totals.bands[float(row.low)] = _band(row)
            state.stored.add(float(row.low))
    return loaded


def insert_ignoring(conn: Connection, table: Any, rows: list[dict[str, object]]) -> Any:
    """INSERT that leaves rows whose key exists alone (a concurrent insert of the same key waits, then yields)."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).values(rows).on_conflict_do_nothing()
    return sqlite.insert(table).values(rows).on_conflict_do_nothing()


def _ignoring(conn: Connection, table: Any) -> Any:
    """INSERT (executed with many rows) that leaves rows whose key exists alone."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table).on_conflict_do_nothing()


def _stream_row(totals: Totals) -> dict[str, object]:
    return {"requests": totals.requests, "labels": totals.labels, "observations": totals.observations,
            "labelled": totals.labelled, "fixed": totals.fixed, "served_fixed": totals.served_fixed,
            "served_observations": totals.served_observations, "served_requests": totals.served_requests}


def _band_row(band: BandTotals) -> dict[str, object]:
    return {"mass": band.mass, "mass_at": band.mass_at, "labels_right": band.right, "labels_wrong": band.wrong,
            "labels_at": band.labels_at, "served": band.served}


def _totals(row: Any) -> Totals:
    return Totals(int(row.requests), int(row.labels), int(row.observations), int(row.labelled), float(row.fixed),
                  float(row.served_fixed), int(row.served_observations), int(row.served_requests))


def _band(row: Any) -> BandTotals:
    return BandTotals(float(row.mass), int(row.mass_at), float(row.labels_right), float(row.labels_wrong),
                      int(row.labels_at), float(row.served))


def _kind(column: str | None) -> Kind:
    """A row's kind; rows logged before kinds (NULL) and kinds this build does not know are cosine evidence."""
    try:
        return Kind(column or Kind.COSINE)
    except ValueError:
        return Kind.COSINE
