"""The gateway inside the test process: the real app and `Runtime`, an upstream behind an httpx `MockTransport`
(the same answers as the loopback stub), the lexical embedder, a SQLite file and a clock the test moves."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from index.embedding.embedder import HashEmbedder
from service.app import create_app
from service.gateway import Gateway
from service.runtime import Parts, Runtime
from service.settings import Settings
from support.label_stub import LabelStub, is_label_call
from support.stub_dialects import CUT_AFTER, ChatApi, MessagesApi, ResponsesApi, StubApi

CHAT = "/v1/chat/completions"
ADMIN_TOKEN = "admin-secret"


class MockUpstream:
    """The upstreams (Chat Completions, Anthropic Messages, OpenAI Responses) as one httpx `MockTransport`:
    answers `answer n to: <prompt>` (the n-th call to that API), plain or streamed, and fails on demand
    (`failures`: "500", "429", "timeout", "unreachable", "cut", "no-done" (a stream that ends cleanly without its
    last event), "truncate" (a 200 whose JSON body is cut in half), "unfinished" (an answer not to store))."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.failures: deque[str] = deque()
        self.transport = httpx.MockTransport(self._handle)
        self.apis: dict[str, StubApi] = {api.path: api for api in (ChatApi(), MessagesApi(), ResponsesApi())}
        # When set, answers wait until the test opens it: requests stay upstream for as long as the test needs.
        self.gate: asyncio.Event | None = None
        self.labels = LabelStub()

    @property
    def chat_calls(self) -> int:
        return self.calls_to(CHAT)

    def calls_to(self, path: str) -> int:
        return sum(1 for r in self.requests if r.url.path == path and r.method == "POST")

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        if self.gate is not None:
            await self.gate.wait()
        api = self.apis.get(request.url.path)
        if api is None or request.method != "POST":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
        failure = self.failures.popleft() if self.failures else None
        if failure == "timeout":
            raise httpx.ReadTimeout("stub timeout", request=request)
        if failure == "unreachable":
            raise httpx.ConnectError("stub refused", request=request)
        if failure in ("500", "429"):
            return httpx.Response(int(failure), json=api.error(int(failure), f"stub {failure}"))
        body = json.loads(request.content)
        n = self.calls_to(api.path)
        if isinstance(api, ChatApi) and is_label_call(body):
            return httpx.Response(200, json=api.answer(body, n, self.labels.content(body), "ok"))
        text = f"answer {n} to: {api.last_text(body)}"
        outcome = failure or "ok"
        if body.get("stream"):
            events = api.events(body, n, text, outcome)
            chunks = events[:CUT_AFTER] if failure == "cut" else events[:-1] if failure == "no-done" else events
            return httpx.Response(200, headers={"content-type": "text/event-stream"},
                                  content=_chunks(chunks, cut=failure == "cut"))
        answer = api.answer(body, n, text, outcome)
        if failure == "truncate":
            whole = json.dumps(answer).encode()
            return httpx.Response(200, content=whole[: len(whole) // 2], headers={"content-type": "application/json"})
        return httpx.Response(200, json=answer, headers={"x-request-id": "stub"})


async def _chunks(chunks: list[bytes], cut: bool) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
    if cut:
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


class Clock:
    """Wall-clock seconds that move only when the test says so."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class InProcessGateway:
    client: httpx.AsyncClient
    upstream: MockUpstream
    clock: Clock
    runtime: Runtime
    gateway: Gateway

    async def chat(self, content: str, key: str | None = "sk-test", stream: bool = False,
                   headers: dict[str, str] | None = None) -> httpx.Response:
        body: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}
        if stream:
            body["stream"] = True
        auth = {"Authorization": f"Bearer {key}"} if key is not None else {}
        return await self.client.post(CHAT, json=body, headers={**auth, **(headers or {})})

    async def metric(self, sample: str) -> float:
        """The value of one sample line of `/metrics` (0 when absent), e.g. `deja_vetoes_total{stage="values"}`."""
        for line in (await self.client.get("/metrics")).text.splitlines():
            if line.startswith(sample + " "):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    async def upkeep(self) -> None:
        """Run the budget's upkeep pass now (tallies, differences, learned thresholds), as the background loop
        does every `DEJA_THRESHOLD_INTERVAL_SECONDS`: what `/deja/budget` and the overview page then show."""
        await asyncio.to_thread(self.runtime.upkeep.refresh_budget)


@asynccontextmanager
async def inprocess_gateway(tmp_path: Path, parts: Parts | None = None, **settings: Any
                            ) -> AsyncIterator[InProcessGateway]:
    """The app with its lifespan, reached through `httpx.ASGITransport`; `settings` override `Settings` fields;
    `parts` (its embedder, transport and clock are always the test's own) passes fixed draws."""
    upstream, clock = MockUpstream(), Clock()
    config = Settings(**{"data_dir": tmp_path, "namespace_secret": "test-secret", "admin_token": ADMIN_TOKEN,
                         "upstream_url": "http://upstream.test", "anthropic_upstream_url": "http://anthropic.test",
                         # Deja's defaults, except audits: they send a random share of hits upstream, so tests of
                         # them set their rate (and fixed draws) themselves.
                         "audit_rate": 0.0,
                         **settings})
    base = parts or Parts()
    app = create_app(config, dataclasses.replace(base, embedder=HashEmbedder(dim=256), transport=upstream.transport,
                                                 clock=clock))
    async with app.router.lifespan_context(app):
        await asyncio.to_thread(app.state.runtime.ready.wait, 30)  # the index loads in the background
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://deja.test") as client:
            yield InProcessGateway(client, upstream, clock, app.state.runtime, app.state.gateway)
