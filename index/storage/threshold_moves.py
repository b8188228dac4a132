"""The learned thresholds' record in the shared store (`index.match.threshold_book.MoveLog`): each stream's threshold
as last recorded, with the evidence version it was chosen at (`deja_learned_thresholds`), and the history of its
moves (`deja_threshold_moves`). A choice is recorded by compare-and-set against the row read, so of the replicas
that choose the same move only the first records it (and counts it in `deja_threshold_moves_total`), and a
restarted or new replica, choosing what is recorded already, records nothing."""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from sqlalchemy import Connection, Engine, insert, select, update

from index.errors import StoreUnavailable, store_errors
from index.match.kinds import Kind
from index.match.threshold_book import ThresholdMove
from index.storage.evidence import insert_ignoring
from index.storage.schema import learned_thresholds, threshold_moves

log = logging.getLogger("deja.threshold")
_SAME = 1e-9


class SqlMoveLog:
    """Thread-safe. `recent` reads memory: the moves this replica recorded, and those `sync` read of the others'."""

    def __init__(self, engine: Engine, keep: int = 200) -> None:
        self.engine = engine
        self.keep = keep
        self._moves: list[ThresholdMove] = []
        self._lock = threading.Lock()

    def record(self, proposed: ThresholdMove, version: int | None) -> ThresholdMove | None:
        try:
            with store_errors("record a threshold"), self.engine.begin() as conn:
                move = self._record(conn, proposed, version or 0)
        except StoreUnavailable as exc:
            log.warning("threshold of %s not recorded: %s", proposed.namespace, exc)
            return None
        if move is not None:
            with self._lock:
                self._moves = [*self._moves, move][-self.keep:]
        return move

    def _record(self, conn: Connection, proposed: ThresholdMove, version: int) -> ThresholdMove | None:
        stream = (learned_thresholds.c.namespace == proposed.namespace,
                  learned_thresholds.c.kind == proposed.kind.value)
        conn.execute(insert_ignoring(conn, learned_thresholds, [{
            "namespace": proposed.namespace, "kind": proposed.kind.value, "threshold": proposed.old, "version": 0,
            "updated_at": proposed.at}]))
        row = conn.execute(select(learned_thresholds.c.threshold, learned_thresholds.c.version).where(*stream)).one()
        old, seen = float(row.threshold), int(row.version)
        if version < seen or abs(proposed.new - old) < _SAME:
            return None
        won = conn.execute(update(learned_thresholds).where(
            *stream, learned_thresholds.c.threshold == row.threshold, learned_thresholds.c.version == seen)
            .values(threshold=proposed.new, version=version, updated_at=proposed.at)).rowcount
        if won != 1:  # another replica recorded this stream meanwhile
            return None
        move = dataclasses.replace(proposed, old=old)
        conn.execute(insert(threshold_moves).values(_move_row(move, version)))
        return move

    def recent(self) -> list[ThresholdMove]:
        with self._lock:
            return list(self._moves)

    def sync(self) -> None:
        """Read the latest moves, every replica's, for `recent`."""
        query = select(threshold_moves).order_by(threshold_moves.c.id.desc()).limit(self.keep)
        with store_errors("read threshold moves"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        moves = [_move(row) for row in reversed(rows)]
        with self._lock:
            self._moves = moves


def _move_row(move: ThresholdMove, version: int) -> dict[str, Any]:
    return {"namespace": move.namespace, "kind": move.kind.value, "old": move.old, "new": move.new,
            "estimate": move.estimate, "upper": move.upper, "labels": move.labels, "version": version,
            "at": move.at}


def _move(row: Any) -> ThresholdMove:
    try:
        kind = Kind(row.kind)
    except ValueError:
        kind = Kind.COSINE
    return ThresholdMove(str(row.namespace), float(row.old), float(row.new), float(row.estimate), float(row.upper),
                         int(row.labels), float(row.at), kind)
