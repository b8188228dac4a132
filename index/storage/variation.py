"""The upstream's answer variation per namespace in the shared store: each fresh-vs-fresh similarity an audit
measures is a row of `deja_answer_variation` (the latest `BASELINE_KEEP` per namespace are kept), and every
replica's baselines read them all, so a baseline measured through one replica serves every replica and a restart."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy import Engine, delete, insert, select

from index.errors import StoreUnavailable, store_errors
from index.match.answers import BASELINE_KEEP, AnswerBaselines
from index.storage.schema import answer_variation

log = logging.getLogger("deja.labels")
# A sync re-reads rows written this long before the last one it saw (a row commits a little after its time; one
# read twice is recognised by its id).
LOOKBACK_SECONDS = 300.0


class SharedAnswerBaselines(AnswerBaselines):
    """`AnswerBaselines` whose samples are the shared store's: `add` writes a row (and counts it here at once),
    `sync` (the budget's pass) reads the rows the other replicas wrote since the last sync. `baseline` reads
    memory only: the labelling path waits on no SQL for it."""

    def __init__(self, engine: Engine, clock: Callable[[], float]) -> None:
        super().__init__()
        self.engine = engine
        self.clock = clock
        self._seen: dict[int, float] = {}  # row id -> created_at, for the rows within the lookback
        self._since: float | None = None
        self._sync_lock = threading.Lock()

    def add(self, namespace: str, similarity: float) -> None:
        at = self.clock()
        try:
            with store_errors("record answer variation"), self.engine.begin() as conn:
                inserted = conn.execute(insert(answer_variation).values(
                    namespace=namespace, similarity=similarity, created_at=at)).inserted_primary_key
                row_id = int(inserted[0]) if inserted is not None else -1
                keep = (select(answer_variation.c.id).where(answer_variation.c.namespace == namespace)
                        .order_by(answer_variation.c.id.desc()).offset(BASELINE_KEEP).limit(1).scalar_subquery())
                conn.execute(delete(answer_variation).where(answer_variation.c.namespace == namespace,
                                                            answer_variation.c.id <= keep))
        except StoreUnavailable as exc:
            log.warning("answer variation kept on this replica only: %s", exc)
            super().add(namespace, similarity)
            return
        with self._sync_lock:
            self._seen[int(row_id)] = at
        super().add(namespace, similarity)

    def sync(self) -> int:
        """Read the samples written since the last sync (every one on the first); returns how many were new."""
        with self._sync_lock:
            query = select(answer_variation).order_by(answer_variation.c.id)
            if self._since is not None:
                query = query.where(answer_variation.c.created_at >= self._since - LOOKBACK_SECONDS)
            with store_errors("read answer variation"), self.engine.connect() as conn:
                rows = conn.execute(query).all()
            new = [row for row in rows if int(row.id) not in self._seen]
            for row in new:
                self._seen[int(row.id)] = float(row.created_at)
                super().add(str(row.namespace), float(row.similarity))
            latest = max([float(row.created_at) for row in rows], default=self._since)
            self._since = latest
            if latest is not None:
                self._seen = {i: at for i, at in self._seen.items() if at >= latest - 2 * LOOKBACK_SECONDS}
            return len(new)
