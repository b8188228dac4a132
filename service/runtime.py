"""Everything a running gateway owns, built from `Settings` or passed in as `Parts`. Its background loop is
`service.upkeep`, its admin view `service.runtime_view`."""

from __future__ import annotations

import asyncio
import logging
import random
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
from index.guards.wordnet import load_wordnet
from index.maintenance import Maintainer
from index.match.audit_sampler import AuditSampler
from index.match.candidates import CandidateRule
from index.match.decide import Deciders
from index.match.differences import Differences
from index.match.evidence import Aging
from index.match.live_threshold import LearnerConfig
from index.match.matcher import Matcher, NamespacePolicies
from index.match.threshold_book import ThresholdBook
from index.reuse.watch import ReuseWatch
from index.search.hnsw import SemanticIndex
from index.search.pgvector import PgVectorIndex, PgVectorParams
from index.search.pgvector import check as check_pgvector
from index.search.sharding import Shard
from index.search.snapshot import SnapshotDir
from index.search.vector_index import VectorIndex, VectorIndexKind
from index.storage.allowance import SqlAllowance
from index.storage.budget import BudgetTallies
from index.storage.decision_log import DecisionLog, DecisionRecord
from index.storage.differences import SqlDifferenceLog
from index.storage.entries import EntryStore, make_engine
from index.storage.evidence import EvidenceStore
from index.storage.exact import ExactCache, LruExactCache
from index.storage.secret import check_secret
from index.storage.threshold_moves import SqlMoveLog
from index.storage.variation import SharedAnswerBaselines
from service.budget import BudgetKeeper
from service.credentials import credential_policy
from service.dialects.base import UpstreamName
from service.fairness import NamespaceGate, default_share
from service.label_model import LabelModel
from service.ledger import Ledger
from service.metrics import Metrics
from service.runtime_view import RuntimeView
from service.settings import Settings
from service.thresholds import ThresholdKeeper
from service.upkeep import Upkeep, UpkeepParts
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
    # Uniform draws in [0, 1) for audits (tests pass fixed ones).
    audit_draw: Callable[[], float] = random.random


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
    if not settings.redis_url:
        return LruExactCache(settings.exact_max_items)
    from index.storage.redis_exact import RedisExactCache  # redis-py only when Redis is configured

    return RedisExactCache(settings.redis_url)


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
        self.policy = settings.policy()
        config = CacheConfig(self.policy, settings.ttl_seconds, Shard(settings.shard, settings.shards),
                             settings.context_memo_size)
        self.stages = build_stages(self.policy.stages)
        # The slot step's WordNet table (about 0.4 s), read at start-up rather than by the first request.
        load_wordnet()
        self.audit_draw = parts.audit_draw
        deciders = Deciders(self.stages)
        # Audits labelled by answer comparison are exact about the two answers; a label model errs at its rate.
        self.label_error_rate = 0.0 if settings.label_model is None else settings.label_model_error_rate
        self.differences = Differences(SqlDifferenceLog(self.engine), self.clock,
                                       settings.difference_half_life_days * 86400.0, settings.difference_min_labels)
        # Each namespace's threshold, learned from the shared decision log's evidence (guarded mode).
        # Each threshold's moves are recorded in the shared store: a move counts once between the replicas.
        # Answer comparison's labels: a wrong answer labelled right at its measured rate (`eval answers`).
        false_same = settings.answer_label_false_same if settings.label_model is None else 0.0
        self.learned = ThresholdBook(LearnerConfig.for_policy(self.policy, self.label_error_rate,
                                                              false_same=false_same), self.clock,
                                     moves=SqlMoveLog(self.engine))
        learns = settings.learn_threshold and self.policy.guarded
        matcher = Matcher(self.policy, deciders, self.differences, learned=self.learned.threshold if learns else None,
                          rule=CandidateRule(settings.candidates, settings.decision_log_floor))
        self.cache = Cache(parts.exact or build_exact(settings), self.store,
                           build_index(settings, self.engine, self.embedder), self.embedder, config,
                           clock=self.clock, matcher=matcher)
        self.maintainer = Maintainer(self.cache, settings.max_entries, clock=self.clock,
                                     recount_seconds=settings.recount_interval_seconds)
        # The learned thresholds' evidence: running totals updated where decisions and labels are written.
        self.evidence = EvidenceStore(self.engine, Aging(self.learned.config.floor), self.clock)
        self.decisions = DecisionLog(self.engine, self.evidence, BudgetTallies(self.clock))
        retention = Retention(settings.decision_log_days, settings.label_days, settings.tombstone_days)
        self.forgetting = Forgetting(self.engine, self.maintainer, retention, self.clock)
        # The upstream's answer variation and the labelling allowance are the deployment's, in the shared store.
        self.answer_baselines = SharedAnswerBaselines(self.engine, self.clock)
        # An audit re-asks the upstream twice (the second fresh answer measures its variation), or once and then
        # asks the label model.
        self.audit_sampler = AuditSampler(settings.audit_rate, settings.audit_calls_per_hour, self.clock,
                                          calls_per_audit=2,
                                          allowance=SqlAllowance(self.engine, settings.audit_calls_per_hour))
        self.budget = BudgetKeeper(self.engine, self.learned.budget, self.learned.config.confidence, self.metrics,
                                   self.differences, self.clock, self.answer_baselines)
        self.threshold_keeper = ThresholdKeeper(self.learned, self.evidence, self.thresholds.prior_for,
                                                lambda: self.thresholds.by_namespace, self.metrics)
        self.upstream = build_upstream(settings, settings.upstream_url, parts.transport)
        self.anthropic_upstream = build_upstream(settings, settings.anthropic_upstream_url, parts.transport)
        # What hits save and labelling spends by token kind, at the price table's rates; what stops reuse.
        self.ledger = Ledger(settings.price_table(), self.metrics)
        self.reuse = ReuseWatch()
        self.label_model = None if settings.label_model is None else LabelModel(
            settings.label_model, self.upstream, self.metrics, self.ledger)
        self.secret = settings.secret_bytes()
        self.credentials = credential_policy(settings)
        self.upkeep = Upkeep(UpkeepParts(settings, self.metrics, self.cache, self.maintainer, self.forgetting,
                                         self.budget, self.decisions, self.snapshot,
                                         self.threshold_keeper if learns else None))
        self.ready = self.upkeep.ready
        self.view = RuntimeView(settings, self.policy, self.embedder, self.cache, self.store, self.decisions,
                                self.maintainer, self.stages)
        self._task: asyncio.Task[None] | None = None
        self.audit_slots = asyncio.Semaphore(settings.audit_concurrency)
        self.heavy = NamespaceGate(settings.heavy_requests_per_namespace or default_share(available_cores()))
        self.background: set[asyncio.Task[None]] = set()

    @property
    def thresholds(self) -> NamespacePolicies:
        """Each namespace's policy (stored thresholds, learned thresholds): the matcher's."""
        return self.cache.matcher.namespaces

    def upstream_for(self, name: UpstreamName) -> Upstream:
        return self.anthropic_upstream if name is UpstreamName.ANTHROPIC else self.upstream

    @property
    def index(self) -> VectorIndex:
        """The live index (start-up may replace the empty one with a loaded snapshot)."""
        return self.cache.index

    def indexed(self) -> int:
        """Entries in the index: counted now in process, as of the last upkeep round for a shared index (the
        event loop asks, and must not wait on SQL)."""
        return len(self.index) if isinstance(self.index, SemanticIndex) else self.upkeep.indexed_entries

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
        self._task = asyncio.get_running_loop().create_task(self.upkeep.run())

    def load_index(self) -> None:
        self.upkeep.load_index()

    def save_snapshot(self) -> None:
        self.upkeep.save_snapshot()

    def log_decision(self, record: DecisionRecord) -> None:
        self.upkeep.log_decision(record)

    def flush_decisions(self) -> None:
        self.upkeep.flush_decisions()

    def tick(self, evict: bool) -> None:
        """One round of upkeep, in a worker thread."""
        self.upkeep.tick(evict)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a background coroutine, keeping a reference so it is not garbage-collected mid-flight."""
        task = asyncio.get_running_loop().create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def describe(self) -> str:
        return self.view.describe()

    def stats(self) -> dict[str, Any]:
        return self.view.stats()

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
