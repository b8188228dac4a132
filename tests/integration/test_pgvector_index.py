"""The pgvector semantic tier against a real PostgreSQL 16 + pgvector (`pgserver`), and what the migration says on
databases that cannot hold it (the machine's plain PostgreSQL 15, SQLite)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, text

from index.cache import Cache, CacheConfig
from index.embedding.embedder import HashEmbedder
from index.errors import VectorIndexUnavailable
from index.match.policy import MatchPolicy
from index.records import CacheEntry, Verdict
from index.request.keys import build_key
from index.search.pgvector import DIM, PgVectorIndex, PgVectorParams, check
from index.settings import Settings
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache
from support.caches import ANSWER, chat_body
from support.pgvector_server import PgVectorServer
from support.services import PgDatabase

pytestmark = pytest.mark.integration


@pytest.fixture
def engine(pgvector_server: PgVectorServer) -> Iterator[Engine]:
    with pgvector_server.database() as db:
        engine = make_engine(db.url)
        EntryStore(engine).create_schema()
        yield engine
        engine.dispose()


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def store_entries(engine: Engine, count: int, start: int = 0) -> list[int]:
    store = EntryStore(engine)
    return [store.add(CacheEntry(namespace="ns", exact_key=f"{i:064x}", context_key="c", model="m",
                                 prompt=f"prompt {i}", response=ANSWER, vector=None, created_at=0.0))
            for i in range(start, start + count)]


def test_migration_creates_the_vector_table_with_a_cosine_hnsw_index(engine: Engine) -> None:
    with engine.connect() as conn:
        definitions = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE tablename = 'deja_vectors'")).scalars()
        assert any("USING hnsw (embedding vector_cosine_ops)" in d for d in definitions)
    check(engine, DIM)


@pytest.mark.parametrize(("ef_search", "searched"), [(300, ("big", "small")), (3, ("small",))],
                         ids=["graph-walk", "short-walk-then-exact-scan"])
def test_search_finds_the_brute_force_nearest_within_the_scope(engine: Engine, ef_search: int,
                                                               searched: tuple[str, ...]) -> None:
    ids = store_entries(engine, 300)
    vectors = unit_rows(300, seed=1)
    index = PgVectorIndex(engine, DIM, "model-a", PgVectorParams(ef_search=ef_search))
    scopes = ["big" if i % 10 else "small" for i in range(300)]
    index.add_many(ids, scopes, vectors)
    with engine.begin() as conn:  # statistics, so that the planner prices the HNSW walk like a deployment would
        conn.execute(text("ANALYZE deja_vectors"))
    queries = unit_rows(20, seed=2)
    for scope in searched:
        members = np.array([s == scope for s in scopes])
        for query in queries:
            found = index.search(query, scope, k=3)
            sims = vectors[members] @ query
            assert [n.entry_id for n in found] == [ids[i] for i in np.flatnonzero(members)[np.argsort(-sims)[:3]]]
            assert found[0].similarity == pytest.approx(float(np.max(sims)), abs=1e-5)


def test_a_scope_holds_only_its_own_entries_of_the_serving_model(engine: Engine) -> None:
    ids = store_entries(engine, 3)
    vector = unit_rows(1, seed=3)
    PgVectorIndex(engine, DIM, "model-a").add_many(ids[:2], ["s1", "s2"], np.repeat(vector, 2, axis=0))
    PgVectorIndex(engine, DIM, "model-b").add(ids[2], "s1", vector[0])
    index = PgVectorIndex(engine, DIM, "model-a")
    assert [n.entry_id for n in index.search(vector[0], "s1", k=5)] == [ids[0]]
    assert index.count("s1") == 1 and index.count("none") == 0
    assert len(index) == 3 and ids[0] in index and index.max_id() == ids[2]


def test_deleting_an_entry_deletes_its_vector(engine: Engine) -> None:
    ids = store_entries(engine, 2)
    index = PgVectorIndex(engine, DIM, "model-a")
    index.add_many(ids, ["s", "s"], unit_rows(2, seed=4))
    EntryStore(engine).delete([ids[0]], at=1.0)
    assert ids[0] not in index and [n.entry_id for n in index.search(unit_rows(1, 5)[0], "s", k=5)] == [ids[1]]
    index.add(ids[0], "s", unit_rows(1, 6)[0])  # an entry evicted before its vector was written: skipped
    assert ids[0] not in index


def test_a_paraphrase_stored_by_one_replica_is_a_hit_on_another_at_once(engine: Engine) -> None:
    embedder = HashEmbedder(DIM)

    def replica() -> Cache:
        index = PgVectorIndex(engine, DIM, embedder.model_id)
        return Cache(LruExactCache(), EntryStore(engine), index, embedder, CacheConfig(MatchPolicy(0.7)))

    writer, reader = replica(), replica()
    writer.store_answer(build_key("ns", chat_body("how do I reset my router password")), ANSWER)
    found = reader.lookup(build_key("ns", chat_body("how do I reset my router password please")))
    assert found.verdict is Verdict.SEMANTIC_HIT
    assert reader.lookup(build_key("other", chat_body("how do I reset my router password please"))).verdict \
        is Verdict.MISS


def test_a_database_without_pgvector_is_named_at_migration_and_refused_at_start(
        caplog: pytest.LogCaptureFixture) -> None:
    with PgDatabase() as db, caplog.at_level(logging.INFO, logger="deja.migrations"):
        engine = make_engine(db.url)
        try:
            EntryStore(engine).create_schema()
            assert "pgvector is not available on this database" in caplog.text
            assert "no pgvector extension" in caplog.text
            with pytest.raises(VectorIndexUnavailable, match="no pgvector extension"):
                check(engine, DIM)
        finally:
            engine.dispose()


def test_pgvector_on_sqlite_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs DEJA_DATABASE_URL to name a PostgreSQL"):
        Settings(vector_index="pgvector", data_dir=tmp_path)  # type: ignore[arg-type]
