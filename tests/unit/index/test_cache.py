"""The pipeline with a fake embedder and a real SQLite store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from index.cache import Cache, CacheConfig
from index.embedding.embedder import HashEmbedder
from index.errors import StoreUnavailable
from index.guards.stages import StepResult
from index.match.candidates import CandidateRule
from index.match.decide import Deciders
from index.match.matcher import Matcher
from index.match.policy import MatchPolicy
from index.records import Verdict
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: Any) -> Any:
        self.calls += 1
        return super().embed(texts)


class VetoWord:
    name = "veto-word"

    def check(self, query: str, cached: str) -> StepResult:
        return StepResult(self.name, ("not" in query.split()) == ("not" in cached.split()), "not")


def make_cache(tmp_path: Path, clock: Any = None, ttl: float | None = None) -> tuple[Cache, CountingEmbedder]:
    embedder = CountingEmbedder()
    store = EntryStore(make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))
    store.create_schema()
    kwargs = {"clock": clock} if clock else {}
    cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder,
                  CacheConfig(MatchPolicy(0.7), ttl_seconds=ttl), Deciders((VetoWord(),)), **kwargs)
    return cache, embedder


def body(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def answer(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


def test_miss_embeds_once_and_store_reuses_the_vector(tmp_path: Path) -> None:
    cache, embedder = make_cache(tmp_path)
    cache.store_answer(build_key("ns", body("is the api rate limited")), answer("yes"))
    assert embedder.calls == 1
    key = build_key("ns", body("is the api rate limited today"))
    lookup = cache.lookup(key)
    assert embedder.calls == 2 and lookup.vector is not None
    cache.store_answer(key, answer("no"), lookup.vector)
    assert embedder.calls == 2


def test_exact_hit_costs_no_embedding(tmp_path: Path) -> None:
    cache, embedder = make_cache(tmp_path)
    key = build_key("ns", body("hello there"))
    cache.store_answer(key, answer("hi"))
    calls = embedder.calls
    assert cache.lookup(key).verdict is Verdict.EXACT_HIT
    assert embedder.calls == calls


def test_first_request_in_a_context_is_not_embedded_until_stored(tmp_path: Path) -> None:
    cache, embedder = make_cache(tmp_path)
    assert cache.lookup(build_key("ns", body("brand new question"))).verdict is Verdict.MISS
    assert embedder.calls == 0


def test_semantic_hit_and_stage_veto(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path)
    cache.store_answer(build_key("ns", body("is the api rate limited for free users")), answer("yes"))
    hit = cache.lookup(build_key("ns", body("is the api rate limited for free users ?")))
    assert hit.verdict is Verdict.SEMANTIC_HIT and hit.response is not None
    veto = cache.lookup(build_key("ns", body("is the api not rate limited for free users")))
    assert veto.verdict is Verdict.MISS and veto.decision is not None
    assert veto.decision.vetoed_by == "veto-word"


def test_other_namespace_never_hits(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path)
    cache.store_answer(build_key("a", body("what is dns")), answer("x"))
    assert cache.lookup(build_key("b", body("what is dns"))).verdict is Verdict.MISS


def test_warm_rebuilds_the_index_from_sql(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path)
    cache.store_answer(build_key("ns", body("how do I reset my password")), answer("x"))
    fresh, _ = make_cache(tmp_path)
    assert fresh.warm() == 1
    assert fresh.lookup(build_key("ns", body("how do I reset my password ?"))).verdict is Verdict.SEMANTIC_HIT


def test_expired_entries_are_not_served(tmp_path: Path) -> None:
    now = [1000.0]
    cache, _ = make_cache(tmp_path, clock=lambda: now[0], ttl=60)
    key = build_key("ns", body("what time is it in tokyo"))
    cache.store_answer(key, answer("x"))
    cache.exact.clear()
    now[0] += 61
    assert cache.lookup(key).verdict is Verdict.MISS
    assert cache.lookup(build_key("ns", body("what time is it in tokyo ?"))).verdict is Verdict.MISS


def conversation(first: str, last: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": first},
                                       {"role": "assistant", "content": "noted"},
                                       {"role": "user", "content": last}]}


def test_a_conversation_costs_one_embedding_call_and_reuses_it_on_store(tmp_path: Path) -> None:
    cache, embedder = make_cache(tmp_path)
    cache.store_answer(build_key("ns", conversation("my plan is the team plan", "how much is it")), answer("x"))
    calls = embedder.calls
    key = build_key("ns", conversation("my plan is the team plan ok", "how much is it"))
    lookup = cache.lookup(key)
    assert embedder.calls == calls + 1 and lookup.vector is not None and lookup.vector.context is not None
    assert lookup.verdict is Verdict.SEMANTIC_HIT
    other = build_key("ns", conversation("my plan is the family plan", "how much is it"))
    missed = cache.lookup(other)
    assert missed.verdict is Verdict.MISS and missed.decision is not None
    assert missed.decision.vetoed_by == "context:content"  # the context rule names the difference
    cache.store_answer(other, answer("y"), missed.vector)
    assert embedder.calls == calls + 2


def test_a_failed_sql_call_is_store_unavailable_naming_what_failed(tmp_path: Path) -> None:
    store = EntryStore(make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))  # no schema: every read fails
    with pytest.raises(StoreUnavailable, match=r"^cannot read entry: "):
        store.get(1)
    with pytest.raises(StoreUnavailable, match=r"^cannot count entries: "):
        store.count()
    # The two reads on every lookup's path go through the DB-API cursor: the same error, the same words.
    with pytest.raises(StoreUnavailable, match=r"^cannot read entry: "):
        store.get_by_exact("0" * 64)
    with pytest.raises(StoreUnavailable, match=r"^cannot read entries: "):
        store.get_many([1, 2])


def _guarded_cache(tmp_path: Path) -> Cache:
    """The default decision with the hash embedder: the pipeline, not the model, is under test (a threshold of 0
    lets every candidate through the cosine step)."""
    store = EntryStore(make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))
    store.create_schema()
    embedder = HashEmbedder()
    return Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(MatchPolicy(0.0)),
                 Deciders())


CACHED, ASKED = "How do I enable gzip compression in nginx?", "enabling gzip in the nginx config"


def test_the_default_decision_serves_on_the_cosine_and_reads_no_learned_score(tmp_path: Path) -> None:
    cache = _guarded_cache(tmp_path)
    cache.store_answer(build_key("ns", body(CACHED)), answer("cached"))
    lookup = cache.lookup(build_key("ns", body(ASKED)))
    assert lookup.verdict is Verdict.SEMANTIC_HIT and lookup.response is not None
    assert lookup.decision is not None and lookup.decision.basis == "cosine"
    assert all(result.stage != "learned" for result in lookup.decision.stages)


class CountingStore(EntryStore):
    """The real SQLite store, counting the entry reads a lookup makes."""

    def __init__(self, path: Path) -> None:
        super().__init__(make_engine(f"sqlite:///{path}"))
        self.reads: list[int] = []

    def get_many(self, entry_ids: Any) -> Any:
        self.reads.append(len(entry_ids))
        return super().get_many(entry_ids)


def test_a_lookup_reads_all_its_candidates_in_one_query(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    store = CountingStore(tmp_path / "db.sqlite")
    store.create_schema()
    policy = MatchPolicy(0.5, guarded_candidates=3)
    cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(policy),
                  matcher=Matcher(policy, Deciders((VetoWord(),)), rule=CandidateRule(candidates=3)))
    for text in ("is the api rate limited", "is the api rate limited now", "is the api rate limited here"):
        cache.store_answer(build_key("ns", body(text)), answer(text))
    lookup = cache.lookup(build_key("ns", body("is the api rate limited today")))
    assert lookup.verdict is Verdict.SEMANTIC_HIT
    assert store.reads == [3]
