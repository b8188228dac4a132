"""Fixtures for integration tests: a stub upstream on loopback and gateways on two storage backends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.pgvector_server import PgVectorServer
from support.services import GatewayProcess, PgDatabase
from support.stub_upstream import StubUpstream

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def stub() -> Iterator[StubUpstream]:
    with StubUpstream() as upstream:
        yield upstream


@dataclass
class Deployment:
    gateway: GatewayProcess
    backend: str

    @property
    def url(self) -> str:
        return self.gateway.url


def base_env(stub: StubUpstream, data_dir: Path) -> dict[str, str]:
    return {
        "DEJA_UPSTREAM_URL": stub.url,
        "DEJA_ANTHROPIC_UPSTREAM_URL": stub.url,
        "DEJA_DATA_DIR": str(data_dir),
        "DEJA_UPSTREAM_READ_TIMEOUT": "1.5",
        "DEJA_ADMIN_TOKEN": "admin-secret",
        "DEJA_LOG_LEVEL": "warning",
        # Audits send a random share of hits upstream in the background, where they land on the session's shared
        # stub during a later test and break its call counts; their tests set the rate themselves.
        "DEJA_AUDIT_RATE": "0",
    }


@pytest.fixture(scope="module", params=["sqlite-lru", "postgres-redis"])
def deployment(request: pytest.FixtureRequest, stub: StubUpstream,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    data_dir = tmp_path_factory.mktemp("deja")
    env = base_env(stub, data_dir)
    if request.param == "sqlite-lru":
        gateway = GatewayProcess(env, data_dir / "gateway.log").start()
        yield Deployment(gateway, request.param)
        gateway.stop()
        return
    with PgDatabase() as db:
        env |= {"DEJA_DATABASE_URL": db.url, "DEJA_REDIS_URL": "redis://127.0.0.1:6379/0"}
        gateway = GatewayProcess(env, data_dir / "gateway.log").start()
        yield Deployment(gateway, request.param)
        gateway.stop()


@pytest.fixture
def api_key() -> str:
    """Each test owns its namespace: a fresh API key."""
    return f"sk-test-{uuid.uuid4().hex}"


@pytest.fixture(autouse=True)
def _reset_stub(stub: StubUpstream) -> None:
    stub.reset()


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PgVectorServer]:
    """PostgreSQL 16 + pgvector (PyPI `pgserver`) for the session; see support/pgvector_server.py."""
    server = PgVectorServer().start()
    yield server
    server.stop()
