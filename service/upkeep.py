"""A running gateway's upkeep: start-up index load, then a loop of rounds (replica catch-up, eviction, forgetting,
decision-log writes, label metrics, snapshots) and, beside it in a thread of its own, the budget's pass (tallies
and per-namespace thresholds), so that a long pass never delays a replica's catch-up. The budget's pass is the only
place its numbers are computed; the admin reads show what it stored."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import dataclass

import anyio
import anyio.to_thread
from starlette.concurrency import run_in_threadpool

from index.cache import Cache
from index.errors import StoreUnavailable
from index.forgetting import Forgetting
from index.maintenance import Maintainer
from index.search.hnsw import SemanticIndex
from index.search.snapshot import SnapshotDir
from index.storage.decision_log import DecisionLog, DecisionRecord
from service.budget import BudgetKeeper
from service.metrics import Metrics
from service.settings import Settings
from service.thresholds import ThresholdKeeper

log = logging.getLogger("deja.runtime")


@dataclass(frozen=True)
class UpkeepParts:
    """What the upkeep rounds work on: the runtime's parts."""

    settings: Settings
    metrics: Metrics
    cache: Cache
    maintainer: Maintainer
    forgetting: Forgetting
    budget: BudgetKeeper
    decisions: DecisionLog
    snapshot: SnapshotDir
    # Learned thresholds (guarded mode with DEJA_LEARN_THRESHOLD); None = the prior serves.
    thresholds: ThresholdKeeper | None = None


class Upkeep:
    """The background work of one replica; `run()` is its loop, each round (`tick`) runs in a worker thread."""

    def __init__(self, parts: UpkeepParts) -> None:
        self.parts = parts
        self.ready = threading.Event()
        self.started = False
        # Entries in the index as of the last count (a shared index is counted in SQL: not every round).
        self.indexed_entries = 0
        self._last_snapshot = time.monotonic()
        self._budget_lock = threading.Lock()
        # The budget's pass runs in this one thread of its own, never in the request pool nor in the upkeep round.
        self._budget_thread = anyio.CapacityLimiter(1)
        self._pending: list[DecisionRecord] = []
        self._pending_lock = threading.Lock()

    def log_decision(self, record: DecisionRecord) -> None:
        with self._pending_lock:
            self._pending.append(record)

    def flush_decisions(self) -> None:
        with self._pending_lock:
            batch, self._pending = self._pending, []
        try:
            self.parts.decisions.record(batch)
        except StoreUnavailable as exc:
            log.warning("dropped %d decision-log records: %s", len(batch), exc)

    def count_decisions(self) -> None:
        """The decisions logged since the last pass, counted into the tallies and the evidence (one transaction per
        batch with their marks: what fails now is counted by the next pass)."""
        try:
            self.parts.decisions.count()
        except StoreUnavailable as exc:
            log.warning("decisions not counted yet: %s", exc)

    def load_index(self) -> None:
        """Start-up in a worker thread: the index from the snapshot (plus catch-up from SQL) or rebuilt."""
        p = self.parts
        try:
            report = p.maintainer.start(p.snapshot if p.settings.snapshot_interval_seconds else None)
            self.started = True
            index = p.cache.index
            self.indexed_entries = len(index)
            how = ("pgvector, shared" if not isinstance(index, SemanticIndex) else
                   "from snapshot" if report.from_snapshot else "rebuilt from SQL")
            log.info("index ready: %d entries (%s, %d caught up from SQL)", self.indexed_entries, how, report.added)
        except StoreUnavailable as exc:
            log.error("entry store unavailable at start-up, serving degraded: %s", exc)
        finally:
            self.ready.set()

    def save_snapshot(self) -> None:
        """Save the index beside its SQL watermark (periodically in `tick`, and at shutdown)."""
        p = self.parts
        if (not self.started or not p.settings.snapshot_interval_seconds
                or not isinstance(p.cache.index, SemanticIndex)):
            return
        try:
            manifest = p.maintainer.save_snapshot(p.snapshot)
            if manifest is None:
                log.debug("snapshot unchanged: not written again")
            else:
                log.info("snapshot saved: %d entries up to id %d", manifest.entries, manifest.watermark)
        except (OSError, RuntimeError) as exc:
            log.warning("snapshot not saved: %s", exc)
        self._last_snapshot = time.monotonic()

    def tick(self, evict: bool) -> None:
        """One round of upkeep, in a worker thread."""
        p = self.parts
        if not self.started:
            p.maintainer.start()
            self.started = True
        p.maintainer.sync()
        # After the catch-up, never before it. A bare insert: the budget's pass counts what it logs.
        self.flush_decisions()
        if evict:
            p.metrics.evictions.inc(p.maintainer.evict())
            p.forgetting.sweep()
            self._label_metrics()
        p.cache.matcher.namespaces.by_namespace = p.decisions.thresholds()
        if evict or isinstance(p.cache.index, SemanticIndex):  # a shared index is counted in SQL: not every round
            self.indexed_entries = len(p.cache.index)
        p.metrics.indexed.set(self.indexed_entries)
        interval = p.settings.snapshot_interval_seconds
        if interval and time.monotonic() - self._last_snapshot >= interval:
            self.save_snapshot()

    def refresh_budget(self) -> None:
        """The budget's pass (every `DEJA_THRESHOLD_INTERVAL_SECONDS` in `run`, or now): the decisions logged since
        the last pass counted, the tallies per (namespace, API) and the remembered differences, then the thresholds
        of the namespaces whose evidence moved (with learning on). `GET /deja/budget` and the overview page read
        what the last pass stored."""
        p = self.parts
        with self._budget_lock:
            self.flush_decisions()
            self.count_decisions()
            p.budget.refresh()
            if p.thresholds is not None:
                p.thresholds.refresh()

    def _label_metrics(self) -> None:
        p = self.parts
        counts = p.decisions.label_counts()
        judged = wrong = 0
        for source, tally in counts.items():
            for verdict, n in tally.items():
                p.metrics.labels.labels(source, verdict).set(n)
            if source not in ("shadow", "explore"):  # these label near misses and would-be hits, not served hits
                judged += tally["correct"] + tally["wrong"]
                wrong += tally["wrong"]
        p.metrics.false_hit_rate.set(wrong / judged if judged else 0.0)
        with contextlib.suppress(StoreUnavailable):
            p.metrics.entries.set(p.maintainer.entry_count())

    async def run(self) -> None:
        """Load the index, then one round every `DEJA_SYNC_INTERVAL_SECONDS` (evicting every
        `DEJA_EVICT_INTERVAL_SECONDS`) until cancelled; the budget's pass runs beside it."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._budget_loop)
            await self._rounds()

    async def _budget_loop(self) -> None:
        """The budget's pass every `DEJA_THRESHOLD_INTERVAL_SECONDS` until cancelled."""
        while True:
            await asyncio.sleep(self.parts.settings.threshold_interval_seconds)
            try:
                await anyio.to_thread.run_sync(self.refresh_budget, limiter=self._budget_thread)
            except StoreUnavailable as exc:
                log.warning("budget pass skipped, store unavailable: %s", exc)
            except Exception:  # the loop must survive anything; the next pass retries
                log.exception("budget pass failed")

    async def _rounds(self) -> None:
        await run_in_threadpool(self.load_index)
        last_evict = 0.0
        while True:
            await asyncio.sleep(self.parts.settings.sync_interval_seconds)
            evict = time.monotonic() - last_evict >= self.parts.settings.evict_interval_seconds
            try:
                await run_in_threadpool(self.tick, evict)
                if evict:
                    last_evict = time.monotonic()
            except StoreUnavailable as exc:
                log.warning("upkeep skipped, store unavailable: %s", exc)
            except Exception:  # the loop must survive anything; the next tick retries
                log.exception("upkeep failed")
