"""The labelling allowance in the shared store (`index.match.allowance.Allowance`): one `DEJA_AUDIT_CALLS_PER_HOUR`
per deployment, however many replicas spend it. A take locks the allowance's row of `deja_meta` first (so replicas
take in turn, on PostgreSQL and SQLite alike), then sums the calls of the last hour and records its own. A refused take
closes the allowance on this replica until its oldest call leaves the hour, so a spent allowance costs no SQL on
the request path: at most one transaction per call taken and one per reopening."""

from __future__ import annotations

import logging

from sqlalchemy import Engine, delete, func, insert, select, update

from index.errors import StoreUnavailable, store_errors
from index.match.allowance import HOUR
from index.storage.evidence import insert_ignoring
from index.storage.schema import allowance_calls, meta

# The allowance's lock row in `deja_meta` (its value: the calls of the last take, for an operator's eye).
LOCK_KEY = "audit_allowance"

log = logging.getLogger("deja.labels")


class SqlAllowance:
    """`calls_per_hour` calls in any sliding hour, between every replica on `engine`. A store that cannot be reached
    allows nothing (labelling is never worth an unbounded cost)."""

    def __init__(self, engine: Engine, calls_per_hour: int) -> None:
        self.engine = engine
        self.calls_per_hour = calls_per_hour
        # No room before this wall-clock time (the last refusal's oldest call leaves the hour then), per reserve
        # asked (a take that must leave calls for audits is refused sooner than one that need not).
        self._closed_until: dict[int, float] = {}

    def take(self, calls: int, now: float, reserve: int = 0) -> bool:
        if calls + reserve > self.calls_per_hour or now < self._closed_until.get(reserve, float("-inf")):
            return False
        try:
            with store_errors("take from the labelling allowance"), self.engine.begin() as conn:
                conn.execute(insert_ignoring(conn, meta, [{"key": LOCK_KEY, "value": "0", "updated_at": now}]))
                # The row lock first: every replica's take waits here for the one before it to commit.
                conn.execute(update(meta).where(meta.c.key == LOCK_KEY).values(value=str(calls), updated_at=now))
                since = now - HOUR
                conn.execute(delete(allowance_calls).where(allowance_calls.c.at <= since))
                spent, oldest = conn.execute(select(func.coalesce(func.sum(allowance_calls.c.calls), 0),
                                                    func.min(allowance_calls.c.at))
                                             .where(allowance_calls.c.at > since)).one()
                if int(spent) + calls + reserve > self.calls_per_hour:
                    self._closed_until[reserve] = float(oldest) + HOUR
                    return False
                conn.execute(insert(allowance_calls).values(at=now, calls=calls))
                return True
        except StoreUnavailable as exc:
            log.warning("labelling allowance unavailable, nothing taken: %s", exc)
            return False
