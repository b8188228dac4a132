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
from index.search.hnsw import SemanticIndex
from index.search.snapshot import Manifest, SnapshotDir
from index.storage.entries import CountMark, Tombstone

log = logging.getLogger("deja.maintenance")


@dataclass(frozen=True)
class StartReport:
    """How the index came up: from a snapshot (plus `added` entries caught up from SQL) or rebuilt."""

    from_snapshot: bool
    added: int
    removed: int = 0


class Maintainer:
    """Thread-safe; `sync()` and `evict()` are called periodically by the service, off the event loop."""

    # Ids are allocated before commit, so an id below the watermark can still appear: re-check this window.
    RECENT_WINDOW_SECONDS = 10.0

    def __init__(self, cache: Cache, max_entries: int | None, clock: Callable[[], float] = time.time,
                 recount_seconds: float = 3600.0) -> None:
        self.cache = cache
        self.max_entries = max_entries
        self.clock = clock
        self.recount_seconds = recount_seconds
        self._count: CountMark | None = None
        self._counted_at = 0.0
        self._tombstone_seq = 0
        # (index, its changes, tombstones applied) as the snapshot on disk holds them: saving again is a no-op.
        self._on_disk: tuple[int, int, int] | None = None
        self._touched: set[int] = set()
        self._lock = threading.Lock()
        self.evictions = 0
        # Full counts of the entries table run so far (each one scans it; see `entry_count`).
        self.full_counts = 0

    def start(self, snapshot: SnapshotDir | None = None) -> StartReport:
        """Load the snapshot when it is valid and not ahead of SQL, then catch up past its watermark; otherwise
        rebuild from SQL. Either way the index then holds every live entry SQL has."""
        restored = None
        index = self.cache.index
        # A shared index (pgvector) has no snapshot and needs no rebuild: `warm` below only backfills entries above
        # its highest id (written while the deployment ran the in-process index).
        if snapshot is not None and isinstance(index, SemanticIndex):
            restored = snapshot.load(self.cache.embedder.model_id, index.dim, index.params)
        if restored is not None and not self._ahead_of_sql(restored.manifest):
            return self._catch_up(restored.index, restored.manifest)
        self._tombstone_seq = self.cache.store.last_tombstone()
        return StartReport(False, self.cache.warm())

    def _ahead_of_sql(self, manifest: Manifest) -> bool:
        """A snapshot that knows entries or tombstones SQL does not (a restored or reset database) is stale."""
        store = self.cache.store
        stale = manifest.watermark > store.max_id() or manifest.tombstone_seq > store.last_tombstone()
        if stale:
            log.warning("snapshot is ahead of SQL (database reset?), rebuilding")
            return True
        # Tombstones after the snapshot's were pruned (DEJA_TOMBSTONE_DAYS): its deletions can no longer be replayed.
        if store.first_tombstone() > manifest.tombstone_seq + 1:
            log.warning("snapshot is older than the tombstones kept, rebuilding")
            return True
        return False

    def _catch_up(self, index: SemanticIndex, manifest: Manifest) -> StartReport:
        self.cache.index = index
        self._tombstone_seq = manifest.tombstone_seq
        removed = self._apply_tombstones()  # first: SQLite may reuse a deleted id for a late entry
        added = self.cache.warm()
        # Entries below the watermark that committed after the snapshot was taken (see RECENT_WINDOW_SECONDS).
        late = [i for i in self.cache.store.recent_ids(manifest.saved_at - self.RECENT_WINDOW_SECONDS)
                if i not in index]
        if late:
            added += self.cache.add_bulk(self.cache.store.vectors_for(late))
        if not added and not removed:
            self._on_disk = (id(index), index.changes, manifest.tombstone_seq)
        return StartReport(True, added, removed)

    def save_snapshot(self, snapshot: SnapshotDir) -> Manifest | None:
        """Write the index and the watermark it covers (call from the thread that runs `sync`); None when the
        snapshot on disk already holds this index as it is (a restart of an idle gateway rewrote 1.6 GB at 1M
        entries, and evicted what the next start reads from the page cache)."""
        index = self.cache.index
        if not isinstance(index, SemanticIndex):
            raise TypeError("only the in-process HNSW index is saved to a snapshot")
        state = (id(index), index.changes, self._tombstone_seq)
        if state == self._on_disk:
            return None
        manifest = snapshot.save(index, self.cache.embedder.model_id, self._tombstone_seq, self.clock())
        self._on_disk = state
        return manifest

    def _apply_tombstones(self) -> int:
        removed = 0
        while stones := self.cache.store.tombstones_after(self._tombstone_seq):
            self._tombstone_seq = stones[-1].seq
            self.forget(stones)
            removed += len(stones)
        return removed

    def touch(self, entry_id: int) -> None:
        with self._lock:
            self._touched.add(entry_id)

    def sync(self) -> None:
        """Catch up: add entries other replicas wrote, forget deleted ones, record the hits served since."""
        index = self.cache.index
        if isinstance(index, SemanticIndex):
            self._catch_up_index(index)
        self._apply_tombstones()
        with self._lock:
            touched, self._touched = sorted(self._touched), set()
        try:
            self.cache.store.record_hits(touched, self.clock())
        except StoreUnavailable:
            log.warning("could not record %d hits", len(touched))

    def _catch_up_index(self, index: SemanticIndex) -> None:
        """Entries other replicas wrote since the last round (a shared index has them already)."""
        self.cache.warm()
        recent = [i for i in self.cache.store.recent_ids(self.clock() - self.RECENT_WINDOW_SECONDS) if i not in index]
        if recent:
            # Ids below the watermark that committed late (see RECENT_WINDOW_SECONDS).
            self.cache.add_bulk(self.cache.store.vectors_for(recent))

    def entry_count(self) -> int:
        """Entries in SQL, kept incrementally (see `Store.count_mark`); a full count only every
        `recount_seconds`, which also corrects what the running count missed (ids that committed late)."""
        now = self.clock()
        if self._count is None or now - self._counted_at >= self.recount_seconds:
            self._count, self._counted_at = self.cache.store.count_mark(), now
            self.full_counts += 1
        else:
            self._count = self.cache.store.count_mark(self._count)
        return self._count.total

    def evict(self) -> int:
        ids = self.cache.store.eviction_candidates(self.clock(), self.max_entries, self.entry_count())
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
