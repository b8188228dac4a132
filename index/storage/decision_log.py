"""Decision log and labels: every semantic decision that had a candidate above a floor, and what we later
learned about it (feedback, shadow comparisons, audits). The raw material of `eval sweep --traffic`.

The `vetoed_by` column holds the vetoing stage for a veto and the reason for any other miss (NULL for a hit);
`DecisionRecord` reads it back as a `Reason` and a stage name that is set only for vetoes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from sqlalchemy import Connection, Engine, and_, false, func, insert, select, update
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError, SQLAlchemyError

from index.errors import StoreUnavailable, store_errors
from index.guards.stages import StepResult
from index.match.outcome import Lookup, Reason
from index.records import Verdict
from index.storage.schema import decisions, labels, thresholds

log = logging.getLogger("deja.decisions")


class LabelSource(StrEnum):
    FEEDBACK = "feedback"
    SHADOW = "shadow"
    AUDIT = "audit"
    HUMAN = "human"
    # Labels of the retired exploration (a would-be hit the learned veto doubted, sent upstream): nothing writes
    # them now, but a database may hold some, and they still resolve by precedence.
    EXPLORE = "explore"


@dataclass(frozen=True)
class DecisionRecord:
    """One semantic decision as logged."""

    request_id: str
    namespace: str
    model: str
    prompt: str
    entry_id: int | None
    candidate_prompt: str | None
    similarity: float
    min_similarity: float
    stages: tuple[StepResult, ...]
    verdict: str
    reason: Reason
    vetoed_by: str | None
    created_at: float
    # The API the request spoke (`chat`, `messages`, `responses`): `eval sweep --traffic --api` filters on it.
    api: str = "chat"
    # Served, or would be served at a threshold at `similarity`, on the cosine alone (`Decision.would_serve`).
    would_serve: bool = False
    # The kind of difference the candidate shows: whose evidence the decision is (`Decision.kind`).
    kind: str = "cosine"


@dataclass(frozen=True)
class Label:
    request_id: str
    source: LabelSource
    correct: bool
    created_at: float
    detail: str | None = None


@dataclass(frozen=True)
class LabeledDecision:
    """A decision with its label resolved by precedence: human > feedback > audit > shadow."""

    decision: DecisionRecord
    correct: bool
    source: LabelSource


# Miss reasons logged by decisions since retired, read back as a miss below the threshold: the judge mode's (its
# P below its bar) and the learned veto's exploration (a would-be hit sent upstream, its `would_serve` kept).
RETIRED_MISSES = frozenset({"judge_below_bar", "explored"})
# Decisions counted per transaction at most (`DecisionLog.count`).
COUNT_BATCH = 2_000
# Label sources by precedence (a decision with several labels takes the first): human > feedback > audit > ...
PRECEDENCE = [LabelSource.HUMAN, LabelSource.FEEDBACK, LabelSource.AUDIT, LabelSource.EXPLORE,
               LabelSource.SHADOW]


def _stages_json(stages: Sequence[StepResult]) -> str:
    return json.dumps([{"stage": s.stage, "passed": s.passed, "reason": s.reason, "score": s.score}
                       for s in stages])


def _outcome_column(record: DecisionRecord) -> str | None:
    if record.reason is Reason.HIT:
        return None
    return record.vetoed_by if record.reason is Reason.VETOED else record.reason.value


def _outcome(column: str | None) -> tuple[Reason, str | None]:
    """(reason, vetoing stage) from the `vetoed_by` column."""
    if column is None:
        return Reason.HIT, None
    if column in RETIRED_MISSES:
        return Reason.BELOW_THRESHOLD, None
    if column in {r.value for r in Reason if r not in (Reason.HIT, Reason.VETOED)}:
        return Reason(column), None
    return Reason.VETOED, column


def _row_to_decision(m: object) -> DecisionRecord:
    row = m._mapping  # type: ignore[attr-defined]
    stages = tuple(StepResult(**s) for s in json.loads(row["stages"]))
    reason, vetoed_by = _outcome(row["vetoed_by"])
    return DecisionRecord(
        row["request_id"], row["namespace"], row["model"], row["prompt"], row["entry_id"], row["candidate_prompt"],
        float(row["similarity"]), float(row["min_similarity"]), stages, row["verdict"], reason, vetoed_by,
        float(row["created_at"]), row["api"], bool(row["would_serve"]), row["kind"] or "cosine",
    )


def record_of(lookup: Lookup, request_id: str, namespace: str, model: str, prompt: str, api: str, prior: float,
              at: float) -> DecisionRecord | None:
    """The decision log's line for a lookup (None: nothing to log), as the gateway and `eval replay --learn` write
    it: an exact hit is served whatever the threshold (it counts among what the namespace serves, without its text:
    the entry holds it already); a decision with a candidate is logged with the threshold it held the candidate to
    (`Decision.threshold`, `prior` when none did)."""
    if lookup.verdict is Verdict.EXACT_HIT:
        return DecisionRecord(request_id, namespace, model, "", None, None, 1.0, prior, (), Verdict.EXACT_HIT.value,
                              Reason.HIT, None, at, api)
    decision = lookup.decision
    if decision is None or lookup.candidate_prompt is None:
        return None
    return DecisionRecord(request_id, namespace, model, prompt, lookup.candidate_id, lookup.candidate_prompt,
                          decision.similarity, prior if decision.threshold is None else decision.threshold,
                          decision.stages, lookup.verdict.value, decision.reason, decision.vetoed_by, at, api,
                          decision.would_serve, decision.kind.value)


class EvidenceSink(Protocol):
    """Where logged decisions and written labels also count: the learned thresholds' running totals
    (`index.storage.evidence.EvidenceStore`)."""

    def count_in(self, conn: Connection, records: Sequence[DecisionRecord]) -> None: ...

    def settle(self, request_ids: Sequence[str] | None = None) -> int: ...


class TallySink(Protocol):
    """Where logged decisions and written labels also count: the budget's tallies per (namespace, API)
    (`index.storage.budget.BudgetTallies`)."""

    def count_in(self, conn: Connection, records: Sequence[DecisionRecord]) -> None: ...

    def fold_in(self, conn: Connection, request_id: str, source: LabelSource) -> None: ...


class DecisionLog:
    """SQL access for decisions, labels and per-namespace thresholds. With `tallies` and `evidence`, a decision is
    logged uncounted (a bare insert: the tick's flush costs what the rows cost) and `count` (the budget's pass)
    claims the uncounted decisions, counts them into the budget's tallies and the learned thresholds' totals and
    marks them counted, all in one transaction: a count that fails leaves them uncounted for the next pass, so none
    is ever lost nor counted twice, whichever replica counts it. A label is folded into the tallies in the
    transaction that writes it and settled into the evidence right after (a label whose decision is not counted
    yet waits for it)."""

    def __init__(self, engine: Engine, evidence: EvidenceSink | None = None, tallies: TallySink | None = None) -> None:
        self.engine = engine
        self.evidence = evidence
        self.tallies = tallies

    @property
    def counts(self) -> bool:
        """Whether logged decisions are counted into running totals (else they are logged counted)."""
        return self.evidence is not None or self.tallies is not None

    def record(self, records: Sequence[DecisionRecord]) -> None:
        if records:
            self._insert(records)

    def count(self, batch: int = COUNT_BATCH) -> int:
        """Count every decision logged and not counted yet (oldest first, `batch` per transaction; replicas counting
        at once take different rows), then settle the labels that waited for them. Returns the decisions counted."""
        if not self.counts:
            return 0
        total = 0
        while True:
            with store_errors("count decisions"), self.engine.begin() as conn:
                claimed = conn.execute(
                    update(decisions).where(decisions.c.request_id.in_(
                        select(decisions.c.request_id).where(decisions.c.counted == false())
                        .order_by(decisions.c.created_at, decisions.c.request_id).limit(batch)
                        .with_for_update(skip_locked=True)))
                    .values(counted=True).returning(*decisions.c)).all()
                records = sorted((_row_to_decision(r) for r in claimed), key=lambda r: (r.created_at, r.request_id))
                self._count(conn, records)
            if records and self.evidence is not None:
                self.evidence.settle([r.request_id for r in records])  # labels that arrived before the count
            total += len(records)
            if len(records) < batch:
                return total

    def _count(self, conn: Connection, records: Sequence[DecisionRecord]) -> None:
        """What the decisions being counted add to the running totals, in the transaction that marks them."""
        if not records:
            return
        if self.tallies is not None:
            self.tallies.count_in(conn, records)
        if self.evidence is not None:
            self.evidence.count_in(conn, records)

    def _insert(self, records: Sequence[DecisionRecord]) -> Sequence[DecisionRecord]:
        """Insert the records (uncounted where they will be counted); returns those logged."""
        counted = not self.counts
        rows = [{
            "request_id": r.request_id, "namespace": r.namespace, "model": r.model, "prompt": r.prompt,
            "entry_id": r.entry_id, "candidate_prompt": r.candidate_prompt, "similarity": r.similarity,
            "min_similarity": r.min_similarity, "stages": _stages_json(r.stages), "verdict": r.verdict,
            "vetoed_by": _outcome_column(r), "created_at": r.created_at, "api": r.api, "would_serve": r.would_serve,
            "kind": r.kind, "counted": counted,
        } for r in records]
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(decisions), rows)
            return records
        except (OperationalError, InterfaceError) as exc:  # the database, not the rows: nothing to retry
            raise StoreUnavailable(f"cannot log decisions: {exc}") from exc
        except (SQLAlchemyError, ValueError):
            # One bad row (a value the database refuses) must not cost the others, other tenants' included.
            logged = set(self._record_each(rows))
            return [r for r in records if r.request_id in logged]

    def _record_each(self, rows: Sequence[Mapping[str, object]]) -> list[object]:
        logged = []
        for row in rows:
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(decisions), [row])
                logged.append(row["request_id"])
            except (OperationalError, InterfaceError) as exc:
                raise StoreUnavailable(f"cannot log decisions: {exc}") from exc
            except (SQLAlchemyError, ValueError) as exc:
                log.warning("decision %s not logged: %s", row["request_id"], type(exc).__name__)
        return logged

    def get(self, request_id: str) -> DecisionRecord | None:
        with store_errors("read decision"), self.engine.connect() as conn:
            row = conn.execute(select(decisions).where(decisions.c.request_id == request_id)).first()
        return None if row is None else _row_to_decision(row)

    def label(self, label: Label) -> None:
        """Record a label; the same request and source twice keeps the latest (to be counted again)."""
        values = {"correct": label.correct, "detail": label.detail, "created_at": label.created_at}
        key = and_(labels.c.request_id == label.request_id, labels.c.source == label.source.value)
        with store_errors("record label"), self.engine.begin() as conn:
            try:
                with conn.begin_nested():
                    conn.execute(insert(labels).values(request_id=label.request_id, source=label.source.value,
                                                       **values))
            except IntegrityError:
                conn.execute(update(labels).where(key).values(counted=False, **values))
            if self.tallies is not None:
                self.tallies.fold_in(conn, label.request_id, label.source)
        if self.evidence is not None:
            try:
                self.evidence.settle([label.request_id])
            except StoreUnavailable as exc:
                log.warning("label of %s not counted yet: %s", label.request_id, exc)

    def labeled(self, namespace: str | None = None, api: str | None = None) -> list[LabeledDecision]:
        """Every decision that has at least one label, with its label by precedence; optionally one namespace's
        or one API's only."""
        # Forgotten decisions (index/forgetting.py) have no texts left to compare: they only count.
        query = select(decisions, labels.c.source, labels.c.correct).join(
            labels, labels.c.request_id == decisions.c.request_id).where(decisions.c.forgotten_at.is_(None))
        if namespace is not None:
            query = query.where(decisions.c.namespace == namespace)
        if api is not None:
            query = query.where(decisions.c.api == api)
        with store_errors("read labeled decisions"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        best: dict[str, tuple[int, LabeledDecision]] = {}
        for row in rows:
            source = LabelSource(row.source)
            rank = PRECEDENCE.index(source)
            if row.request_id not in best or rank < best[row.request_id][0]:
                best[row.request_id] = (rank, LabeledDecision(_row_to_decision(row), bool(row.correct), source))
        return [item for _, item in sorted(best.values(), key=lambda x: x[1].decision.created_at)]

    def pending(self, limit: int = 20) -> list[DecisionRecord]:
        """Decisions with a candidate and no human label yet, newest first."""
        human = select(labels.c.request_id).where(labels.c.source == LabelSource.HUMAN.value)
        query = (select(decisions).where(decisions.c.entry_id.is_not(None), decisions.c.forgotten_at.is_(None),
                                         decisions.c.request_id.not_in(human))
                 .order_by(decisions.c.created_at.desc()).limit(limit))
        with store_errors("read pending decisions"), self.engine.connect() as conn:
            return [_row_to_decision(r) for r in conn.execute(query).all()]

    def label_counts(self) -> dict[str, dict[str, int]]:
        """{source: {"correct": n, "wrong": n}}."""
        query = select(labels.c.source, labels.c.correct, func.count()).group_by(labels.c.source, labels.c.correct)
        with store_errors("count labels"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        counts: dict[str, dict[str, int]] = {}
        for source, correct, n in rows:
            counts.setdefault(source, {"correct": 0, "wrong": 0})["correct" if correct else "wrong"] += int(n)
        return counts

    def set_threshold(self, namespace: str, min_similarity: float, label_count: int, at: float) -> None:
        values = {"min_similarity": min_similarity, "labels": label_count, "updated_at": at}
        with store_errors("store threshold"), self.engine.begin() as conn:
            done = conn.execute(update(thresholds).where(thresholds.c.namespace == namespace).values(**values))
            if done.rowcount == 0:
                conn.execute(insert(thresholds).values(namespace=namespace, **values))

    def thresholds(self) -> dict[str, tuple[float, int]]:
        """{namespace: (min_similarity, labels behind it)}; namespace "*" is the deployment-wide default."""
        with store_errors("read thresholds"), self.engine.connect() as conn:
            rows = conn.execute(select(thresholds)).all()
        return {r.namespace: (float(r.min_similarity), int(r.labels)) for r in rows}
