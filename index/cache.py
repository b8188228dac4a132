"""The cache pipeline without HTTP: exact tier, then semantic tier, then store. Used by the gateway and by
`eval replay`, so both exercise the same code. Synchronous: callers run it off the event loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from index.embedding.embedder import Embedder, combine
from index.embedding.memo import DEFAULT_CONTEXT_MEMO_SIZE, ContextMemo
from index.errors import Overloaded, StoreUnavailable
from index.match.decide import Deciders
from index.match.matcher import Matcher, MatchRequest, Plan
from index.match.outcome import Candidate, Lookup
from index.match.policy import MatchPolicy
from index.pricing.usage import Usage
from index.records import CachedResponse, CacheEntry, Neighbor, QueryVectors, StoredEntry, Verdict
from index.request.keys import CacheKey, LookupMode
from index.search.sharding import Shard
from index.search.vector_index import VectorIndex
from index.storage.entries import EntryStore, IndexedVector
from index.storage.exact import ExactCache

log = logging.getLogger("deja.cache")


@dataclass(frozen=True)
class CacheConfig:
    """Tunables of the pipeline. `ttl_seconds=None` keeps entries until evicted. `policy` is the deployment's (the
    prior of every namespace, and what keys read); which neighbours a lookup reads is the Matcher's
    (`index.match.candidates.CandidateRule`)."""

    policy: MatchPolicy
    ttl_seconds: float | None = None
    # The namespaces whose semantic index this replica holds (all by default); see `index.search.sharding`.
    shard: Shard = field(default_factory=Shard)
    # Context vectors memoised by exact text (`DEJA_CONTEXT_MEMO_SIZE`, 0 = off); see `index.embedding.memo`.
    context_memo_size: int = DEFAULT_CONTEXT_MEMO_SIZE


class Cache:
    """Exact tier -> semantic tier (HNSW search, then the `Matcher`) -> store. Thread-safe. The Matcher owns the
    decision's inputs (the namespace's policy, which neighbours are candidates); the cache fetches rows."""

    def __init__(
        self,
        exact: ExactCache,
        store: EntryStore,
        index: VectorIndex,
        embedder: Embedder,
        config: CacheConfig,
        deciders: Deciders | None = None,
        clock: Callable[[], float] = time.time,
        matcher: Matcher | None = None,
    ) -> None:
        """`matcher` is the decision with its live state (`index.match.matcher`); without one, a matcher of
        `config.policy` and `deciders` (the rule stages; see `index.match.decide`)."""
        self.exact = exact
        self.store = store
        self.index = index
        self.embedder = embedder
        self.config = config
        self.matcher = matcher or Matcher(config.policy, deciders)
        self.context_memo = ContextMemo(config.context_memo_size)
        self.clock = clock

    @property
    def deciders(self) -> Deciders:
        """The deciders in force (read-only)."""
        return self.matcher.deciders

    def warm(self, batch: int = 5000) -> int:
        """Add to the index every stored vector it lacks (start-up rebuild and replica catch-up), in bulk."""
        now = self.clock()
        pending: list[IndexedVector] = []
        added = 0
        for item in self.store.vectors(after_id=self.index.max_id()):
            if (item.expires_at is None or item.expires_at > now) and self._indexable(item):
                pending.append(item)
            if len(pending) >= batch:
                added += self.add_bulk(pending)
                pending = []
        return added + self.add_bulk(pending)

    def _indexable(self, item: IndexedVector) -> bool:
        """Only vectors of the serving embedder enter the index: two models' vectors are never compared."""
        return (item.embedding_model == self.embedder.model_id and item.vector.shape[0] == self.index.dim
                and self.config.shard.owns(item.namespace))

    def add_bulk(self, items: Sequence[IndexedVector]) -> int:
        items = [item for item in items if self._indexable(item)]
        if items:
            self.index.add_many([i.entry_id for i in items], [i.scope for i in items],
                                np.stack([i.vector for i in items]))
        return len(items)

    def lookup(self, key: CacheKey) -> Lookup:
        """Find a stored answer for `key`; never raises for a failed backend (counted in `degraded`). A semantic
        decision is the Matcher's, under the policy it carries (`Lookup.decision.policy`)."""
        if key.mode is LookupMode.BYPASS:
            return Lookup(Verdict.BYPASS)
        timings: dict[str, float] = {}
        degraded: list[str] = []
        started = time.perf_counter()
        exact = self._exact(key, degraded)
        timings["exact"] = (time.perf_counter() - started) * 1000
        if exact is not None:
            return Lookup(Verdict.EXACT_HIT, exact, similarity=1.0, timings_ms=timings, degraded=tuple(degraded))
        if key.mode is not LookupMode.FULL or not self.config.shard.owns(key.namespace) or self._empty(key, degraded):
            return Lookup(Verdict.MISS, timings_ms=timings, degraded=tuple(degraded))
        try:
            return self._semantic(key, timings, degraded)
        except StoreUnavailable as exc:  # a shared index (pgvector) that failed: a counted miss
            log.warning("semantic index unavailable: %s", exc)
            return Lookup(Verdict.MISS, timings_ms=timings, degraded=(*degraded, "index"))

    def _empty(self, key: CacheKey, degraded: list[str]) -> bool:
        """No entry in the request's scope (or the index cannot say): nothing to embed for."""
        try:
            return self.index.count(key.scope) == 0
        except StoreUnavailable as exc:
            log.warning("semantic index unavailable: %s", exc)
            degraded.append("index")
            return True

    def _exact(self, key: CacheKey, degraded: list[str]) -> CachedResponse | None:
        try:
            hit = self.exact.get(key.exact)
            if hit is not None:
                return hit
        except StoreUnavailable as exc:
            log.warning("exact tier unavailable: %s", exc)
            degraded.append("exact")
        try:
            stored = self.store.get_by_exact(key.exact)
        except StoreUnavailable as exc:
            log.warning("entry store unavailable: %s", exc)
            degraded.append("store")
            return None
        if stored is None or self._expired(stored):
            return None
        found = CachedResponse(stored.entry_id, stored.response, stored.created_at)
        # Back into the exact tier for what is left of its lifetime, never for a fresh default one.
        self._put_exact(key.exact, found, None if stored.expires_at is None else stored.expires_at - self.clock())
        return found

    def embed_request(self, key: CacheKey) -> QueryVectors:
        """One embedding call per request: the last message, plus the relevant context for conversations unless
        its vector is memoised (the same context text was embedded or read from a stored entry before)."""
        if key.context_text is None:
            prompt = self.embedder.embed([key.prompt])[0]
            return QueryVectors(prompt, prompt, None)
        model, text = self.embedder.model_id, _context_input(key.context_text)
        context = self.context_memo.get(model, text)
        if context is None:
            prompt, context = self.embedder.embed([key.prompt, text])
            self.context_memo.put(model, text, context)
        else:
            prompt = self.embedder.embed([key.prompt])[0]
        return QueryVectors(combine(prompt, context), prompt, context)

    def _remember_context(self, stored: StoredEntry) -> None:
        """A candidate's stored context vector serves the next request with the same context text."""
        if (stored.context_text is not None and stored.context_vector is not None
                and stored.embedding_model == self.embedder.model_id):
            self.context_memo.put(stored.embedding_model, _context_input(stored.context_text), stored.context_vector)

    def _semantic(self, key: CacheKey, timings: dict[str, float], degraded: list[str]) -> Lookup:
        t0 = time.perf_counter()
        vectors = self.embed_request(key)
        t1 = time.perf_counter()
        request = MatchRequest(key.prompt, key.namespace, key.context_text)
        plan = self.matcher.plan(request)
        neighbors = self.index.search(vectors.index, key.scope, k=plan.selection.search)
        t2 = time.perf_counter()
        timings.update(embed=(t1 - t0) * 1000, search=(t2 - t1) * 1000)
        entries = self._candidates(neighbors, plan, vectors, degraded)
        t3 = time.perf_counter()
        decision = self.matcher.decide(request, [c for c, _ in entries], plan)
        timings.update(fetch=(t3 - t2) * 1000, decide=(time.perf_counter() - t3) * 1000)
        if decision.chosen is None:
            top = neighbors[0].similarity if neighbors else None
            return Lookup(Verdict.MISS, similarity=top, vector=vectors, timings_ms=timings, degraded=tuple(degraded))
        stored = entries[decision.chosen][1]
        hit = CachedResponse(stored.entry_id, stored.response, stored.created_at) if decision.hit else None
        return Lookup(Verdict.SEMANTIC_HIT if hit else Verdict.MISS, hit, decision.similarity, decision,
                      stored.prompt, stored.entry_id, vectors, timings, tuple(degraded),
                      candidate_response=stored.response)

    def _candidates(self, neighbors: Sequence[Neighbor], plan: Plan, vectors: QueryVectors,
                    degraded: list[str]) -> list[tuple[Candidate, StoredEntry]]:
        """The candidates the decision reads, most similar first, as the plan's selection chooses them; the cache
        fetches the rows and says which entries it may serve."""
        try:
            # Every neighbour the selection may reach, read in one query (the selection decides which it uses).
            rows = self.store.get_many(plan.selection.reachable(neighbors))
        except StoreUnavailable:
            degraded.append("store")
            return []

        def offer(neighbor: Neighbor) -> tuple[Candidate, StoredEntry] | None:
            stored = self._servable_candidate(rows.get(neighbor.entry_id))
            return None if stored is None else (self._candidate(stored, neighbor.similarity, vectors), stored)

        return plan.selection.select(neighbors, offer)

    def _servable_candidate(self, stored: StoredEntry | None) -> StoredEntry | None:
        """The entry behind a neighbour if this replica may serve it (present, fresh, comparable parts), else
        None."""
        if stored is None or self._expired(stored) or self._foreign_parts(stored):
            return None
        self._remember_context(stored)
        return stored

    def _foreign_parts(self, stored: StoredEntry) -> bool:
        """A conversation re-embedded for another model since it was indexed: its part vectors cannot be
        compared with this model's (single-turn entries need only their prompt, so they keep serving)."""
        return stored.context_vector is not None and stored.embedding_model != self.embedder.model_id

    @staticmethod
    def _candidate(stored: StoredEntry, similarity: float, query: QueryVectors) -> Candidate:
        """For conversations the index ranks by the combined vector; the rule compares the parts."""
        if query.context is None or stored.prompt_vector is None or stored.context_vector is None:
            return Candidate(stored.entry_id, stored.prompt, similarity)
        return Candidate(stored.entry_id, stored.prompt, float(query.prompt @ stored.prompt_vector),
                         stored.context_text or "", float(query.context @ stored.context_vector))

    def store_answer(self, key: CacheKey, response: dict[str, Any], vectors: QueryVectors | None = None,
                     ttl_seconds: float | None = None, usage: Usage | None = None) -> int | None:
        """Record a complete upstream answer (and what its call cost, `usage`). Returns the entry id, or None when
        the store is down or the lifetime is 0."""
        if key.mode is LookupMode.BYPASS:
            return None
        semantic = key.mode is LookupMode.FULL
        if semantic and vectors is None:
            try:
                vectors = self.embed_request(key)
            except Overloaded as exc:  # a failed cache write never fails the response
                log.warning("answer not cached, embedder overloaded: %s", exc)
                return None
        now = self.clock()
        ttl = ttl_seconds if ttl_seconds is not None else self.config.ttl_seconds
        if ttl is not None and not ttl > 0:  # a lifetime of 0 (`max-age=0`): expired before anyone asks
            return None
        conversation = semantic and vectors is not None and vectors.context is not None
        entry = CacheEntry(
            namespace=key.namespace, exact_key=key.exact, context_key=key.context, model=key.model,
            prompt=key.prompt, response=response, vector=vectors.index if semantic and vectors else None,
            created_at=now, expires_at=None if ttl is None else now + ttl,
            scope_key=key.scope if conversation else None,
            prompt_vector=vectors.prompt if conversation and vectors else None,
            context_vector=vectors.context if conversation and vectors else None,
            context_text=key.context_text if conversation else None,
            embedding_model=self.embedder.model_id if semantic else None, usage=usage,
        )
        try:
            entry_id = self.store.add(entry)
        except StoreUnavailable as exc:
            log.warning("answer not cached, entry store unavailable: %s", exc)
            return None
        self._put_exact(key.exact, CachedResponse(entry_id, response, now), ttl)
        if semantic and vectors is not None and self.config.shard.owns(key.namespace):
            try:
                self.index.add(entry_id, key.scope, vectors.index)
            except StoreUnavailable as exc:  # the entry is stored; start-up backfills vectors above the index's max
                log.warning("vector not indexed: %s", exc)
        return entry_id

    def _put_exact(self, exact_key: str, value: CachedResponse, ttl: float | None = None) -> None:
        try:
            self.exact.put(exact_key, value, ttl if ttl is not None else self.config.ttl_seconds)
        except StoreUnavailable as exc:
            log.warning("exact tier write skipped: %s", exc)

    def _expired(self, stored: StoredEntry) -> bool:
        return stored.expires_at is not None and stored.expires_at <= self.clock()


def _context_input(context_text: str) -> str:
    """The text embedded for a conversation's context (an empty context embeds as one space)."""
    return context_text or " "
