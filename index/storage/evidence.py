"""The learned threshold's evidence, read from the shared decision log: each namespace's latest decisions that were
served on their cosine or would have been (near misses), and hits served whatever the threshold (exact hits, plain
rewordings), with the label
each has by precedence (human > feedback > audit > explore > shadow). Every replica reads the same rows, so every
replica chooses the same threshold; a restart reads them again, so nothing learned is lost."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, or_, select

from index.errors import store_errors
from index.match.evidence import Observation
from index.match.outcome import Kind
from index.records import Verdict
from index.storage.decision_log import PRECEDENCE, LabelSource
from index.storage.schema import decisions, labels

# Decisions read per namespace at most (the newest): older evidence weighs little after aging anyway.
MAX_OBSERVATIONS = 20_000
_CHUNK = 500


class EvidenceLog:
    """SQL reads of the evidence; raises `StoreUnavailable` when the database is down."""

    def __init__(self, engine: Engine, limit: int = MAX_OBSERVATIONS) -> None:
        self.engine = engine
        self.limit = limit

    def namespaces(self) -> list[str]:
        """Namespaces with at least one decision that is evidence."""
        query = select(decisions.c.namespace).where(decisions.c.would_serve.is_(True)).distinct()
        with store_errors("read evidence namespaces"), self.engine.connect() as conn:
            return sorted(str(row[0]) for row in conn.execute(query).all())

    def observations(self, namespace: str) -> list[Observation]:
        """The namespace's evidence, oldest first."""
        served = decisions.c.verdict.in_([Verdict.SEMANTIC_HIT.value, Verdict.EXACT_HIT.value])
        evidence = or_(decisions.c.would_serve.is_(True), served)
        query = (select(decisions.c.request_id, decisions.c.similarity, decisions.c.would_serve, decisions.c.kind)
                 .where(decisions.c.namespace == namespace, decisions.c.forgotten_at.is_(None), evidence)
                 .order_by(decisions.c.created_at.desc(), decisions.c.request_id.desc()).limit(self.limit))
        with store_errors("read evidence"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
            found = self._labels(conn, [str(r.request_id) for r in rows if r.would_serve])
        return [Observation(float(r.similarity), found.get(str(r.request_id)), fixed=not r.would_serve,
                            kind=_kind(r.kind)) for r in reversed(rows)]

    @staticmethod
    def _labels(conn: object, request_ids: Sequence[str]) -> dict[str, bool]:
        best: dict[str, tuple[int, bool]] = {}
        for start in range(0, len(request_ids), _CHUNK):
            chunk = request_ids[start:start + _CHUNK]
            query = select(labels.c.request_id, labels.c.source, labels.c.correct).where(
                labels.c.request_id.in_(chunk))
            for row in conn.execute(query).all():  # type: ignore[attr-defined]
                rank = PRECEDENCE.index(LabelSource(row.source))
                if row.request_id not in best or rank < best[row.request_id][0]:
                    best[row.request_id] = (rank, bool(row.correct))
        return {request_id: correct for request_id, (_, correct) in best.items()}


def _kind(column: str | None) -> Kind:
    """A row's kind; rows logged before kinds (NULL) and kinds this build does not know are cosine evidence."""
    try:
        return Kind(column or Kind.COSINE)
    except ValueError:
        return Kind.COSINE
