"""Keeping replicas consistent: catch up on entries written elsewhere, forget deleted ones, evict by TTL and
LRU, invalidate on request. SQL decides; the index and the exact tier follow through tombstones."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from index.cache import Cache
from index.errors import StoreUnavailable
from index.store import Tombstone

log = logging.getLogger("deja.maintenance")


@dataclass(frozen=True)
class SyncReport:
    """What one catch-up did: entries added to the index, entries forgotten through tombstones."""

    added: int
    removed: int


class Maintainer:
    """Thread-safe; `sync()` and `evict()` are called periodically by the service, off the event loop."""

    # Ids are allocated before commit, so an id below the watermark can still appear: re-check this window.
    RECENT_WINDOW_SECONDS = 10.0

    def __init__(self, cache: Cache, max_entries: int | None, clock: Callable[[], float] = time.time) -> None:
        self.cache = cache
        self.max_entries = max_entries
        self.clock = clock
        self._tombstone_seq = 0
        self._touched: set[int] = set()
        self._lock = threading.Lock()
        self.evictions = 0

    def start(self) -> int:
        """Warm the index from SQL and remember where the tombstones end."""
        self._tombstone_seq = self.cache.store.last_tombstone()
        return self.cache.warm()

    def touch(self, entry_id: int) -> None:
        with self._lock:
            self._touched.add(entry_id)

    def sync(self) -> SyncReport:
        index = self.cache.index
        added = self.cache.warm()
        recent = [i for i in self.cache.store.recent_ids(self.clock() - self.RECENT_WINDOW_SECONDS) if i not in index]
        if recent:
            # Ids below the watermark that committed late (see RECENT_WINDOW_SECONDS).
            added += self.cache.add_bulk(self.cache.store.vectors_for(recent))
        stones = self.cache.store.tombstones_after(self._tombstone_seq)
        if stones:
            self._tombstone_seq = stones[-1].seq
            self.forget(stones)
        with self._lock:
            touched, self._touched = sorted(self._touched), set()
        try:
            self.cache.store.record_hits(touched, self.clock())
        except StoreUnavailable:
            log.warning("could not record %d hits", len(touched))
        return SyncReport(added, len(stones))

    def evict(self) -> int:
        ids = self.cache.store.eviction_candidates(self.clock(), self.max_entries)
        if not ids:
            return 0
        self.forget(self.cache.store.delete(ids, self.clock()))
        self.evictions += len(ids)
        return len(ids)

    def delete(self, entry_ids: Sequence[int]) -> int:
        stones = self.cache.store.delete(entry_ids, self.clock())
        self.forget(stones)
        return len(stones)

    def invalidate(self, namespace: str | None = None, model: str | None = None) -> int:
        stones = self.cache.store.delete_where(self.clock(), namespace=namespace, model=model)
        self.forget(stones)
        return len(stones)

    def forget(self, stones: Sequence[Tombstone]) -> None:
        for stone in stones:
            self.cache.index.remove(stone.entry_id)
            try:
                self.cache.exact.delete(stone.exact_key)
            except StoreUnavailable:
                log.warning("exact tier unavailable while forgetting entry %d", stone.entry_id)
