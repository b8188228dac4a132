from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from index.cache import Cache, CacheConfig
from index.embedding.embedder import HashEmbedder
from index.maintenance import Maintainer
from index.match.policy import MatchPolicy
from index.records import Verdict
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.search.sharding import Shard, shard_of
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache
from support.caches import ANSWER, chat_body

NAMESPACES = [f"{i:064x}" for i in range(4000)]


def test_namespaces_spread_evenly_and_adding_a_shard_moves_few() -> None:
    four = [shard_of(ns, 4) for ns in NAMESPACES]
    assert all(900 < n < 1100 for n in Counter(four).values())
    five = [shard_of(ns, 5) for ns in NAMESPACES]
    moved = sum(a != b for a, b in zip(four, five, strict=True))
    assert moved < len(NAMESPACES) * 0.25  # ideal: 1/5 move, all of them to the new shard
    assert all(b == 4 for a, b in zip(four, five, strict=True) if a != b)


@pytest.mark.parametrize(("index", "count"), [(2, 2), (-1, 3), (0, 0)], ids=["too-high", "negative", "no-shards"])
def test_shard_out_of_range_is_refused(index: int, count: int) -> None:
    with pytest.raises(ValueError):
        Shard(index, count)


def test_a_replica_indexes_and_serves_only_its_shard(tmp_path: Path) -> None:
    store = EntryStore(make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))
    store.create_schema()
    embedder = HashEmbedder()
    writer = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(MatchPolicy(0.7)))
    ours, theirs = next(ns for ns in NAMESPACES if shard_of(ns, 2) == 0), next(
        ns for ns in NAMESPACES if shard_of(ns, 2) == 1)
    for ns in (ours, theirs):
        writer.store_answer(build_key(ns, chat_body("how do i reset my account password today")), ANSWER)

    replica = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder,
                    CacheConfig(MatchPolicy(0.7), shard=Shard(0, 2)))
    assert Maintainer(replica, None).start().added == 1
    paraphrase = "how do i reset my account password now"
    assert replica.lookup(build_key(ours, chat_body(paraphrase))).verdict is Verdict.SEMANTIC_HIT
    assert replica.lookup(build_key(theirs, chat_body(paraphrase))).verdict is Verdict.MISS
    # The exact tier and SQL still answer every namespace.
    assert replica.lookup(build_key(theirs, chat_body("how do i reset my account password today"))).verdict \
        is Verdict.EXACT_HIT
