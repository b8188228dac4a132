"""Everything a running gateway owns, built from `Settings` or passed in as `Parts`, and its background loop
(replica catch-up, eviction, decision-log writes, per-namespace thresholds, label counts)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from index.cache import Cache, CacheConfig
from index.embedding.batching import BatchingConfig, BatchingEmbedder, Lane, available_cores, embedding_threads
from index.embedding.embedder import Embedder, make_embedder
from index.errors import StoreUnavailable
from index.forgetting import Forgetting, Retention
from index.guards.registry import build_stages
from index.judge.model import JudgeModelError, load_judge
from index.judge.pair_model import PairModelError, PairStage, load_pair_stage
from index.maintenance import Maintainer
from index.match.answers import AnswerBaselines
from index.match.audit_sampler import AuditSampler
from index.match.bar_book import BarBook
from index.match.decide import Deciders
from index.match.differences import Differences
from index.match.explore import Exploration
from index.match.judged import PairJudge, PairReader
from index.match.matcher import Matcher, NamespacePolicies
from index.search.hnsw import SemanticIndex
from index.search.pgvector import PgVectorIndex, PgVectorParams
from index.search.pgvector import check as check_pgvector
from index.search.sharding import Shard
from index.search.snapshot import SnapshotDir
from index.search.vector_index import VectorIndex, VectorIndexKind
from index.storage.decision_log import DecisionLog, DecisionRecord
from index.storage.differences import SqlDifferenceLog
from index.storage.entries import EntryStore, display_url, make_engine
from index.storage.exact import ExactCache, LruExactCache, RedisExactCache
from index.storage.judge_models import JudgeStore
from index.storage.secret import check_secret
from service.budget import BudgetKeeper
from service.credentials import credential_policy
from service.dialects.base import UpstreamName
from service.fairness import NamespaceGate, default_share
from service.label_judge import LabelJudge
from service.metrics import Metrics
from service.settings import Settings
from service.upstream import Upstream

log = logging.getLogger("deja.runtime")


def build_upstream(settings: Settings, base_url: str, transport: httpx.AsyncBaseTransport | None = None) -> Upstream:
    timeout = httpx.Timeout(connect=settings.upstream_connect_timeout, read=settings.upstream_read_timeout,
                            write=30.0, pool=10.0)
    limits = httpx.Limits(max_connections=settings.upstream_max_connections,
                          max_keepalive_connections=settings.upstream_max_connections)
    return Upstream(base_url, timeout, limits, transport)


@dataclass(frozen=True)
class Parts:
    """What a `Runtime` is made of. Each part left None is built from `Settings`; tests and benchmarks pass
    their own (the lexical embedder, an httpx `MockTransport` upstream, a fixed clock, a temporary store)."""

    embedder: Embedder | None = None
    # The upstream's transport (httpx's I/O seam); None = real HTTP to `settings.upstream_url`.
    transport: httpx.AsyncBaseTransport | None = None
    # SQL engine of the entry store and decision log; None = `make_engine(settings.sql_url)`.
    engine: Engine | None = None
    exact: ExactCache | None = None
    # Wall-clock seconds (entry ages, TTLs, decision and label times).
    clock: Callable[[], float] = time.time
    # Uniform draws in [0, 1) for exploration and for audits (tests pass fixed ones).
    draw: Callable[[], float] = random.random
    audit_draw: Callable[[], float] = random.random
    # The judge of judge mode; None = `load_judge(settings.judge_model)` (the shipped one by default).
    judge: PairJudge | None = None
    # The pair model stacked with the judge; None = the shipped one when `DEJA_PAIR_MODEL` is on and the judge
    # is built from settings (an injected judge runs alone unless a pair reader is injected with it).
    pair: PairReader | None = None


def build_embedder(settings: Settings, model: Embedder | None = None) -> BatchingEmbedder:
    """The model (built from settings unless given) behind one batching worker, the only thread that embeds.
    Its threads follow the cores (`embedding_threads`) unless `DEJA_EMBED_THREADS` says otherwise."""
    threads = settings.embed_threads or embedding_threads(available_cores())
    model = model or make_embedder(settings.embedder, settings.embedding_model, threads)
    config = BatchingConfig(max_batch_texts=settings.embed_max_batch,
                            max_wait_seconds=settings.embed_max_wait_ms / 1000,
                            max_queued_texts=settings.embed_queue_texts)
    return BatchingEmbedder(model, config)


def build_index(settings: Settings, engine: Engine, embedder: Embedder) -> VectorIndex:
    """The in-process HNSW graph (filled at start-up), or the shared pgvector table of the entry database."""
    if settings.vector_index is VectorIndexKind.PGVECTOR:
        return PgVectorIndex(engine, embedder.dim, embedder.model_id, PgVectorParams(settings.pgvector_ef_search))
    return SemanticIndex(embedder.dim)


def build_exact(settings: Settings) -> ExactCache:
    return RedisExactCache(settings.redis_url) if settings.redis_url else LruExactCache(settings.exact_max_items)


class Runtime:
    """Built once in the app's lifespan; `close()` releases it."""

    def __init__(self, settings: Settings, parts: Parts | None = None) -> None:
        parts = parts or Parts()
        self.settings = settings
        self.clock = parts.clock
        self.metrics = Metrics()
        self.engine = parts.engine or make_engine(settings.sql_url)
        self.store = EntryStore(self.engine)
        self.embedder = build_embedder(settings, parts.embedder)
        # Shadow and audit labels embed answers in the background lane: never ahead of a request.
        self.background_embedder: Embedder = self.embedder.lane(Lane.BACKGROUND)
        self.snapshot = SnapshotDir(settings.data_dir / "snapshot")
        self.ready = threading.Event()
        self._last_snapshot = time.monotonic()
        self.policy = settings.policy()
        config = CacheConfig(self.policy, settings.ttl_seconds, settings.candidates, settings.decision_log_floor,
                             Shard(settings.shard, settings.shards), settings.context_memo_size)
        self.stages = build_stages(self.policy.stages)
        # A judge that cannot load stops start-up with its reason (JudgeModelError), like a bad setting would.
        judge = (parts.judge or load_judge(settings.judge_model)) if self.policy.reads_judge else None
        # The judge of the settings (or shipped); a judge fitted from traffic and applied replaces it live.
        self.prior_judge = judge
        self.judges = JudgeStore(self.engine)
        self.judge_in_force: str | None = None
        self.audit_draw = parts.audit_draw
        pair = parts.pair
        if pair is None and judge is not None and parts.judge is None and settings.pair_model:
            pair = load_pair_stage()
        # A judge refitted on the deployment's own labels decides alone (its bar is calibrated on them).
        self.prior_pair = pair
        deciders = Deciders(self.stages, None, judge, Exploration(settings.explore_rate),
                            parts.draw, pair=pair)
        # Audits labelled by answer comparison are exact about the two answers; a label model errs at its rate.
        self.label_error_rate = 0.0 if settings.label_model is None else settings.label_model_error_rate
        self.bars = BarBook(settings.max_false_hit_rate, self.clock, error_rate=self.label_error_rate)
        self.differences = Differences(SqlDifferenceLog(self.engine), self.clock,
                                       settings.difference_half_life_days * 86400.0, settings.difference_min_labels)
        matcher = Matcher(self.policy, deciders, self.differences, level=self.bars.level)
        self.cache = Cache(parts.exact or build_exact(settings), self.store,
                           build_index(settings, self.engine, self.embedder), self.embedder, config,
                           clock=self.clock, matcher=matcher)
        self._indexed = 0
        self.maintainer = Maintainer(self.cache, settings.max_entries, clock=self.clock,
                                     recount_seconds=settings.recount_interval_seconds)
        self.decisions = DecisionLog(self.engine)
        retention = Retention(settings.decision_log_days, settings.label_days, settings.tombstone_days)
        self.forgetting = Forgetting(self.engine, self.maintainer, retention, self.clock)
        self.answer_baselines = AnswerBaselines()
        # An audit re-asks the upstream twice (the second fresh answer measures its variation), or once and then
        # asks the label model.
        self.audit_sampler = AuditSampler(settings.audit_rate, settings.audit_calls_per_hour, self.clock,
                                          calls_per_audit=2)
        self.budget = BudgetKeeper(self.engine, self.bars, self.metrics, self.differences, self.prior_bar)
        self.upstream = build_upstream(settings, settings.upstream_url, parts.transport)
        self.anthropic_upstream = build_upstream(settings, settings.anthropic_upstream_url, parts.transport)
        self.label_judge = None if settings.label_model is None else LabelJudge(
            settings.label_model, self.upstream, self.metrics, settings.prices_per_1k_tokens.get(settings.label_model))
        self.secret = settings.secret_bytes()
        self.credentials = credential_policy(settings)
        self._pending: list[DecisionRecord] = []
        self._pending_lock = threading.Lock()
        # Upkeep ticks and callers may sync the judge at once: one at a time, or a slow load of the version read
        # first could land after a newer sync and put a rolled-back judge back in force.
        self._judge_sync_lock = threading.Lock()
        self._started = False
        self._task: asyncio.Task[None] | None = None
        self.audit_slots = asyncio.Semaphore(settings.audit_concurrency)
        self.heavy = NamespaceGate(settings.heavy_requests_per_namespace or default_share(available_cores()))
        self.background: set[asyncio.Task[None]] = set()

    @property
    def thresholds(self) -> NamespacePolicies:
        """Each namespace's policy (stored thresholds, live bar levels): the matcher's."""
        return self.cache.matcher.namespaces

    def prior_bar(self, namespace: str) -> float:
        """The namespace's bar before the live budget moves it: the judge's cut, or the cosine threshold."""
        policy = self.thresholds.prior_for(namespace)
        deciders = self.cache.deciders
        scorer = deciders.pair if deciders.pair is not None else deciders.judge
        if policy.judged and scorer is not None:
            return scorer.cut(policy.max_false_hit_rate)
        return policy.min_similarity

    def upstream_for(self, name: UpstreamName) -> Upstream:
        return self.anthropic_upstream if name is UpstreamName.ANTHROPIC else self.upstream

    @property
    def index(self) -> VectorIndex:
        """The live index (start-up may replace the empty one with a loaded snapshot)."""
        return self.cache.index

    def indexed(self) -> int:
        """Entries in the index: counted now in process, as of the last upkeep round for a shared index (the
        event loop asks, and must not wait on SQL)."""
        return len(self.index) if isinstance(self.index, SemanticIndex) else self._indexed

    def start(self) -> None:
        """Create the schema and check the namespace secret against it, then load the index in the background:
        `ready` is set once it is loaded (or the store turned out to be unreachable: the gateway then serves
        degraded, from upstream, and retries)."""
        try:
            self.store.create_schema()
            check_secret(self.engine, self.secret, self.clock())  # SecretMismatch stops start-up with its reason
            if isinstance(self.index, PgVectorIndex):
                check_pgvector(self.engine, self.index.dim)  # VectorIndexUnavailable stops start-up with its reason
        except StoreUnavailable as exc:
            log.error("entry store unavailable at start-up, serving degraded: %s", exc)
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def load_index(self) -> None:
        """Start-up in a worker thread: the index from the snapshot (plus catch-up from SQL) or rebuilt, while
        another thread loads the pair model (both mostly outside the GIL: file reads, ONNX Runtime, hnswlib)."""
        warming = threading.Thread(target=self._warm_pair_model, name="deja-warm-pair", daemon=True)
        warming.start()
        try:
            report = self.maintainer.start(self.snapshot if self.settings.snapshot_interval_seconds else None)
            self._started = True
            self._indexed = len(self.index)
            how = ("pgvector, shared" if not isinstance(self.index, SemanticIndex) else
                   "from snapshot" if report.from_snapshot else "rebuilt from SQL")
            log.info("index ready: %d entries (%s, %d caught up from SQL)", self._indexed, how, report.added)
        except StoreUnavailable as exc:
            log.error("entry store unavailable at start-up, serving degraded: %s", exc)
        finally:
            warming.join()
            self.ready.set()

    def _warm_pair_model(self) -> None:
        """Load the pair model before the first request needs it; one that cannot load leaves the judge alone."""
        if not isinstance(self.prior_pair, PairStage):
            return
        try:
            self.prior_pair.warm()
        except PairModelError as exc:
            log.error("pair model not loaded, the judge decides alone: %s", exc)
            self.prior_pair = None
            self.cache.matcher.swap_judge(self.cache.deciders.judge, None)

    def save_snapshot(self) -> None:
        """Save the index beside its SQL watermark (periodically in `tick`, and at shutdown)."""
        if (not self._started or not self.settings.snapshot_interval_seconds
                or not isinstance(self.index, SemanticIndex)):
            return
        try:
            manifest = self.maintainer.save_snapshot(self.snapshot)
            log.info("snapshot saved: %d entries up to id %d", manifest.entries, manifest.watermark)
        except (OSError, RuntimeError) as exc:
            log.warning("snapshot not saved: %s", exc)
        self._last_snapshot = time.monotonic()

    def log_decision(self, record: DecisionRecord) -> None:
        with self._pending_lock:
            self._pending.append(record)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a background coroutine, keeping a reference so it is not garbage-collected mid-flight."""
        task = asyncio.get_running_loop().create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def flush_decisions(self) -> None:
        with self._pending_lock:
            batch, self._pending = self._pending, []
        try:
            self.decisions.record(batch)
        except StoreUnavailable as exc:
            log.warning("dropped %d decision-log records: %s", len(batch), exc)

    def tick(self, evict: bool) -> None:
        """One round of upkeep, in a worker thread."""
        self.flush_decisions()
        if not self._started:
            self.maintainer.start()
            self._started = True
        self.maintainer.sync()
        if evict:
            self.metrics.evictions.inc(self.maintainer.evict())
            self.forgetting.sweep()
            self._label_metrics()
            self.budget.refresh()
            if self.policy.reads_judge:
                self.cache.histories = self.decisions.entry_histories()
        self.sync_judge()
        self.thresholds.by_namespace = self.decisions.thresholds()
        if evict or isinstance(self.index, SemanticIndex):  # a shared index is counted in SQL: not every round
            self._indexed = len(self.index)
        self.metrics.indexed.set(self._indexed)
        interval = self.settings.snapshot_interval_seconds
        if interval and time.monotonic() - self._last_snapshot >= interval:
            self.save_snapshot()

    def sync_judge(self) -> None:
        """Put in force the judge `eval fit --traffic --apply` (or `--rollback`) chose, if it changed."""
        if self.prior_judge is None:
            return
        with self._judge_sync_lock:
            version = self.judges.in_force()
            if version == self.judge_in_force:
                return
            try:
                judge = self.prior_judge if version is None else self.judges.load(version)
            except JudgeModelError as exc:
                log.error("judge %s not put in force, keeping the one in force: %s", version, exc)
                return
            pair = self.prior_pair if version is None else None
            self.cache.matcher.swap_judge(judge, pair)
            self.judge_in_force = version
            log.info("judge in force: %s", judge.version)

    def describe(self) -> str:
        """The start-up block `deja serve` logs: what was loaded, where the data lives, what decides."""
        s, judge, pair = self.settings, self.cache.deciders.judge, self.cache.deciders.pair
        if self.policy.guarded:
            reader = "" if pair is None or judge is None else f" + pair model {pair.version}"
            learned = "" if judge is None else f", vetoed when judge {judge.version}{reader} P < " \
                f"{self.policy.veto_below:g}"
            decision = (f"cosine >= {self.policy.min_similarity:g} (a plain rewording at any cosine), guards "
                        f"{', '.join(self.policy.stages) or 'none'}{learned}; conversations: cosine >= "
                        f"{self.policy.conversation_threshold:g}")
        elif self.policy.judged and judge is not None:
            scorer = judge if pair is None else pair
            reader = "" if pair is None else f" + pair model {pair.version}"
            decision = (f"judge {judge.version}{reader} at a false-hit budget of {self.policy.max_false_hit_rate:g} "
                        f"(bar {scorer.cut(self.policy.max_false_hit_rate):.3f}), candidates >= "
                        f"{self.policy.candidate_floor:g}; conversations: cosine >= "
                        f"{self.policy.conversation_threshold:g}")
        else:
            decision = f"cosine threshold {self.policy.min_similarity:g} then guards {', '.join(self.policy.stages)}"
        ttl = "forever" if s.ttl_seconds is None else f"{s.ttl_seconds:g} s"
        lines = [
            "Deja ready to start",
            f"  embedder   {self.embedder.model_id} ({s.embedder.value})",
            f"  decision   {decision}",
            f"  entries    {display_url(s.sql_url)} (ttl {ttl}, at most {s.max_entries or 'unlimited'})",
            f"  exact tier {'redis ' + display_url(s.redis_url) if s.redis_url else 'in-process LRU'}",
            f"  data dir   {s.data_dir.resolve()}",
            f"  upstreams  chat/responses {s.upstream_url}, messages {s.anthropic_upstream_url}",
            f"  labels     audits {s.audit_rate:g} of semantic hits, exploration {s.explore_rate:g}, admin "
            f"{'on' if s.admin_token else 'off (no DEJA_ADMIN_TOKEN)'}",
        ]
        return "\n".join(lines)

    def stats(self) -> dict[str, Any]:
        """What `/deja/stats` shows, in a worker thread (it counts entries and labels in SQL)."""
        try:
            entries = self.store.count()
            labels = self.decisions.label_counts()
        except StoreUnavailable:
            entries, labels = -1, {}
        by_namespace = self.thresholds.by_namespace.items()
        return {
            "entries": entries, "indexed": len(self.index), "evictions": self.maintainer.evictions,
            "min_similarity": self.thresholds.default,
            "thresholds": {ns: {"min_similarity": v, "labels": n} for ns, (v, n) in by_namespace},
            "stages": [s.name for s in self.stages], "labels": labels,
        }

    def _label_metrics(self) -> None:
        counts = self.decisions.label_counts()
        judged = wrong = 0
        for source, tally in counts.items():
            for verdict, n in tally.items():
                self.metrics.labels.labels(source, verdict).set(n)
            if source not in ("shadow", "explore"):  # these judge near-misses and would-be hits, not served hits
                judged += tally["correct"] + tally["wrong"]
                wrong += tally["wrong"]
        self.metrics.false_hit_rate.set(wrong / judged if judged else 0.0)
        with contextlib.suppress(StoreUnavailable):
            self.metrics.entries.set(self.maintainer.entry_count())

    async def _loop(self) -> None:
        await run_in_threadpool(self.load_index)
        last_evict = 0.0
        while True:
            await asyncio.sleep(self.settings.sync_interval_seconds)
            evict = time.monotonic() - last_evict >= self.settings.evict_interval_seconds
            try:
                await run_in_threadpool(self.tick, evict)
                if evict:
                    last_evict = time.monotonic()
            except StoreUnavailable as exc:
                log.warning("upkeep skipped, store unavailable: %s", exc)
            except Exception:  # the loop must survive anything; the next tick retries
                log.exception("upkeep failed")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for task in list(self.background):
            task.cancel()
        await run_in_threadpool(self.flush_decisions)
        if self.ready.is_set():
            await run_in_threadpool(self.save_snapshot)
        await run_in_threadpool(self.embedder.close)
        await self.upstream.aclose()
        await self.anthropic_upstream.aclose()
        self.engine.dispose()
