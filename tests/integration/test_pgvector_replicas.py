"""Stateless replicas on one PostgreSQL + pgvector (`DEJA_VECTOR_INDEX=pgvector`): real uvicorn gateways, the real
MiniLM and the default decision (which serves these paraphrases), one database for all."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from support.pgvector_server import PgVectorDatabase, PgVectorServer
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration
FILLED = 1000


@pytest.fixture(scope="module")
def database(pgvector_server: PgVectorServer) -> Iterator[PgVectorDatabase]:
    with pgvector_server.database() as db:
        yield db


def replica(stub: StubUpstream, database: PgVectorDatabase, folder: Path) -> GatewayProcess:
    folder.mkdir()
    env = base_env(stub, folder) | {
        "DEJA_DECISION": "guarded",  # the default, stated so the test says it
        "DEJA_VECTOR_INDEX": "pgvector",
        "DEJA_DATABASE_URL": database.url,
        "DEJA_NAMESPACE_SECRET": "shared-by-the-replicas",  # namespaces (and so scopes) agree across replicas
        "DEJA_LOG_LEVEL": "info",  # the start-up line says how the index came up
    }
    return GatewayProcess(env, folder / "gateway.log")


@pytest.fixture(scope="module")
def first(stub: StubUpstream, database: PgVectorDatabase,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gateway = replica(stub, database, tmp_path_factory.mktemp("pgvector") / "first").start()
    yield gateway
    gateway.stop()


@pytest.fixture(scope="module")
def second(stub: StubUpstream, database: PgVectorDatabase, first: GatewayProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gateway = replica(stub, database, tmp_path_factory.mktemp("pgvector") / "second").start()
    yield gateway
    gateway.stop()


def chat(url: str, api_key: str, content: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=60,
                      headers={"Authorization": f"Bearer {api_key}", **(headers or {})},
                      json={"model": "m", "messages": [{"role": "user", "content": content}]})


def test_a_paraphrase_stored_through_one_replica_is_a_hit_on_the_other_at_once(
        first: GatewayProcess, second: GatewayProcess, stub: StubUpstream) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    stored = chat(first.url, key, "How do I cancel my subscription?")
    assert stored.headers["x-deja-cache"] == "miss"
    served = chat(second.url, key, "how do i cancel my subscription")  # no sync round in between
    assert served.headers["x-deja-cache"] == "hit-semantic"
    assert served.json()["choices"][0]["message"]["content"] == stored.json()["choices"][0]["message"]["content"]
    assert len(stub.state.chat_calls()) == 1


def test_a_replica_started_after_a_thousand_entries_loads_nothing_and_serves_them(
        first: GatewayProcess, stub: StubUpstream, database: PgVectorDatabase,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    stored = chat(first.url, key, "What is the best way to learn French quickly?")
    no_lookup = {"Cache-Control": "no-cache"}  # each filler is stored, never served from another

    def fill(i: int) -> str:
        return chat(first.url, key, f"Inventory note {i}: shelf {i % 37} holds {i} units", no_lookup).headers[
            "x-deja-cache"]

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(fill, range(FILLED - 1))) <= {"miss", "bypass"}
    late = replica(stub, database, tmp_path_factory.mktemp("pgvector") / "late").start()
    try:
        ready = httpx.get(late.url + "/readyz", timeout=5).json()
        assert ready["indexed"] >= FILLED
        log = late.log_path.read_text()
        assert "(pgvector, shared, 0 caught up from SQL)" in log  # nothing read or built at start-up
        served = chat(late.url, key, "what is the best way to learn french quickly")
        assert served.headers["x-deja-cache"] == "hit-semantic"
        assert served.json()["choices"][0]["message"]["content"] == stored.json()["choices"][0]["message"]["content"]
        assert not (late.data_dir / "snapshot").exists() or not any((late.data_dir / "snapshot").iterdir())
    finally:
        late.stop()


def test_the_shared_vectors_have_an_hnsw_index(first: GatewayProcess, database: PgVectorDatabase) -> None:
    engine = create_engine(database.url)
    try:
        with engine.connect() as conn:
            definitions = list(conn.execute(text(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'deja_vectors'")).scalars())
    finally:
        engine.dispose()
    assert any("USING hnsw (embedding vector_cosine_ops)" in d for d in definitions), definitions
