"""One labelling allowance per deployment: three gateways (the real app and `Runtime`, in this process) on one
PostgreSQL, each sending every semantic hit to an extra audit, spend `DEJA_AUDIT_CALLS_PER_HOUR` once between them,
counted at the loopback stub upstream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import pytest

from index.embedding.embedder import HashEmbedder
from service.app import create_app
from service.runtime import Parts, Runtime
from service.settings import Settings
from support.services import PgDatabase
from support.stub_upstream import StubUpstream

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
CALLS_PER_HOUR = 60
STORED = "how do i reset my password"
# One word added to the stored prompt: a semantic hit under the lexical embedder (cosine about 0.93).
WORDS = ["today", "quickly", "again", "now", "online", "safely", "myself", "here", "first", "soon", "later",
         "tonight", "properly", "remotely", "easily"]


@pytest.fixture
def database() -> Iterator[PgDatabase]:
    with PgDatabase() as db:
        yield db


@asynccontextmanager
async def gateway(folder: Path, stub: StubUpstream, database: PgDatabase) -> AsyncIterator[httpx.AsyncClient]:
    """A replica: every semantic hit is drawn for an extra audit (a young entry at 5x a 10% share, the draw 0.3),
    which re-asks the upstream twice, within the shared allowance."""
    folder.mkdir()
    settings = Settings(data_dir=folder, database_url=database.url, namespace_secret="shared", upstream_url=stub.url,
                        audit_rate=0.1, audit_calls_per_hour=CALLS_PER_HOUR, audit_concurrency=64,
                        shadow_labels=False)
    app = create_app(settings, Parts(embedder=HashEmbedder(dim=256), audit_draw=lambda: 0.3))
    async with app.router.lifespan_context(app):
        runtime: Runtime = app.state.runtime
        await asyncio.to_thread(runtime.ready.wait, 30)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://deja.test") as client:
            client.runtime = runtime  # type: ignore[attr-defined]
            yield client


async def _settled(runtime: Runtime) -> None:
    while runtime.background:
        await asyncio.sleep(0.02)


async def test_three_replicas_spend_one_hourly_allowance_between_them(tmp_path: Path, database: PgDatabase) -> None:
    with StubUpstream() as stub:
        async with AsyncExitStack() as stack:
            replicas = [await stack.enter_async_context(gateway(tmp_path / f"r{i}", stub, database)) for i in range(3)]
            hits = 0
            for n, client in enumerate(replicas):
                headers = {"Authorization": f"Bearer sk-replica-{n}"}  # a namespace each: one miss each
                body = {"model": "m", "messages": [{"role": "user", "content": STORED}]}
                assert (await client.post("/v1/chat/completions", json=body, headers=headers)).headers[
                    "x-deja-cache"] == "miss"
                for word in WORDS:
                    body = {"model": "m", "messages": [{"role": "user", "content": f"{STORED} {word}"}]}
                    response = await client.post("/v1/chat/completions", json=body, headers=headers)
                    hits += response.headers["x-deja-cache"] == "hit-semantic"
                    await _settled(client.runtime)  # type: ignore[attr-defined]
            extra = len(stub.state.chat_calls()) - len(replicas)
    # Each replica alone would spend its own 60 (45 hits, 2 calls an audit: 90 wanted): between them, 60 at most.
    assert hits == 3 * len(WORDS)
    assert CALLS_PER_HOUR - 2 < extra <= CALLS_PER_HOUR
