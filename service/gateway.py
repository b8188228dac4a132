"""The gateway pipeline, the same for every API dialect: validate, key, look up, answer or forward and store.

The dialect (`service.dialects`) knows the API's shapes; this module knows the order of things and never looks
inside a request or an answer.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from index import jsonio
from index.match.outcome import Lookup, Reason
from index.records import CachedResponse, QueryVectors, Verdict
from index.request.keys import CacheKey, LookupMode, key_for
from index.storage.decision_log import DecisionRecord, LabelSource
from service.credentials import NO_CREDENTIAL, namespace_of
from service.dialects import Dialect, speaks_anthropic
from service.dialects.base import UpstreamName
from service.errors import BadRequest, NotFound, PayloadTooLarge, UpstreamError
from service.labeler import Labeler
from service.requests import CacheDirectives, parse_cache_control
from service.runtime import Runtime
from service.upstream import response_headers

log = logging.getLogger("deja.gateway")


@dataclass(frozen=True)
class Exchange:
    """One request after parsing: its API, what the caller sent, and where it lives in the cache."""

    request_id: str
    dialect: Dialect
    raw: bytes
    body: dict[str, Any]
    key: CacheKey
    directives: CacheDirectives
    headers: dict[str, str]
    started: float

    @property
    def stream(self) -> bool:
        return self.dialect.streams(self.body)

    @property
    def storable(self) -> bool:
        return self.key.mode is not LookupMode.BYPASS and self.directives.store

    @property
    def forward_verdict(self) -> Verdict:
        """What a request answered upstream counts as: a miss when its answer may be stored, else a bypass."""
        return Verdict.MISS if self.storable else Verdict.BYPASS


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"Request body of {declared} bytes exceeds the limit of {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"Request body exceeds the limit of {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


class Gateway:
    """The request pipeline; owns nothing, everything lives in the `Runtime`."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.cache = runtime.cache
        self.labeler = Labeler(runtime)

    async def handle(self, request: Request, dialect: Dialect) -> Response:
        exchange = await self._parse(request, dialect)
        lookup = Lookup(Verdict.BYPASS)
        if exchange.key.mode is not LookupMode.BYPASS and exchange.directives.lookup:
            policy = self.rt.thresholds.policy_for(exchange.key.namespace)
            lookup = await run_in_threadpool(self.cache.lookup, exchange.key, policy)
            self._observe_lookup(exchange, lookup, policy.min_similarity)
            served = self._servable(exchange, lookup.response)
            if lookup.response is not None and served is not None:
                return self._answer_from_cache(exchange, lookup, lookup.response, served)
            if lookup.response is not None:  # too old for the caller's max-age, or cannot stand in
                lookup = dataclasses.replace(lookup, verdict=Verdict.MISS, response=None)
        self.rt.metrics.requests.labels(dialect.name, exchange.forward_verdict.value).inc()
        headers = self._headers(exchange, lookup, exchange.forward_verdict)
        if exchange.stream:
            return await self._forward_stream(exchange, lookup, headers)
        return await self._forward(exchange, lookup, headers)

    async def _parse(self, request: Request, dialect: Dialect) -> Exchange:
        started = time.perf_counter()
        raw = await read_body(request, self.rt.settings.max_body_bytes)
        body = dialect.parse(raw)
        directives = parse_cache_control(request.headers.get("cache-control"))
        namespace = namespace_of(request.headers, self.rt.credentials, self.rt.secret)
        key = key_for(namespace or "", dialect.canonical(body, request.headers), self.rt.policy.context_match)
        if namespace is None:  # never file an answer under "nobody": every such caller would share it
            key = dataclasses.replace(key, mode=LookupMode.BYPASS, mode_reason=NO_CREDENTIAL)
        return Exchange(uuid.uuid4().hex, dialect, raw, body, key, directives, dict(request.headers), started)

    def _servable(self, exchange: Exchange, cached: CachedResponse | None) -> dict[str, Any] | None:
        max_age = exchange.directives.max_age
        if cached is None or (max_age is not None and self.rt.clock() - cached.created_at > max_age):
            return None
        return exchange.dialect.serve(cached.body, exchange.body, self.rt.clock())

    def _observe_lookup(self, exchange: Exchange, lookup: Lookup, min_similarity: float) -> None:
        metrics = self.rt.metrics
        for stage, ms in lookup.timings_ms.items():
            metrics.stage_seconds.labels(stage).observe(ms / 1000)
        for backend in lookup.degraded:
            metrics.degraded.labels(backend).inc()
        decision = lookup.decision
        if decision is None or lookup.candidate_prompt is None:
            return
        if decision.vetoed_by is not None:
            metrics.vetoes.labels(decision.vetoed_by).inc()
        if not decision.hit:
            metrics.misses.labels(decision.reason.value).inc()
        self.rt.log_decision(DecisionRecord(
            exchange.request_id, exchange.key.namespace, exchange.key.model, exchange.key.prompt,
            lookup.candidate_id, lookup.candidate_prompt, decision.similarity, min_similarity, decision.logged_stages(),
            lookup.verdict.value, decision.reason, decision.vetoed_by, self.rt.clock(), exchange.dialect.name))

    def _observe_time(self, exchange: Exchange, verdict: Verdict) -> None:
        self.rt.metrics.request_seconds.labels(exchange.dialect.name, verdict.value).observe(
            time.perf_counter() - exchange.started)

    @staticmethod
    def _headers(exchange: Exchange, lookup: Lookup, verdict: Verdict) -> dict[str, str]:
        headers = {"X-Deja-Cache": verdict.value, "X-Deja-Request-Id": exchange.request_id}
        if lookup.similarity is not None:
            headers["X-Deja-Similarity"] = f"{lookup.similarity:.4f}"
        decision = lookup.decision
        if decision is not None:
            headers["X-Deja-Reason"] = decision.reason.value
            if decision.probability is not None and decision.bar is not None:
                headers["X-Deja-Probability"] = f"{decision.probability:.4f}"
            if not decision.hit:  # kept for older clients: the vetoing stage, or the reason (X-Deja-Reason)
                headers["X-Deja-Veto"] = decision.vetoed_by or decision.reason.value
        if lookup.response is not None:
            headers["X-Deja-Entry"] = str(lookup.response.entry_id)
        if exchange.key.mode_reason:
            headers["X-Deja-Policy"] = f"{exchange.key.mode.value}: {exchange.key.mode_reason}"
        return headers

    def _answer_from_cache(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse,
                           served: dict[str, Any]) -> Response:
        self._count_hit(exchange, lookup, cached)
        headers = self._headers(exchange, lookup, lookup.verdict)
        if lookup.verdict is Verdict.SEMANTIC_HIT and self.rt.audit_draw() < self.rt.settings.audit_rate:
            self.labeler.audit(exchange.request_id, exchange.dialect, exchange.body, exchange.headers, cached.body)
        if exchange.stream:
            return StreamingResponse(_aiter(exchange.dialect.replay(served, exchange.body)),
                                     media_type="text/event-stream", headers=headers)
        return Response(jsonio.dumps(served), media_type="application/json", headers=headers)

    def _count_hit(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse) -> None:
        metrics = self.rt.metrics
        metrics.requests.labels(exchange.dialect.name, lookup.verdict.value).inc()
        self._observe_time(exchange, lookup.verdict)
        self.rt.maintainer.touch(cached.entry_id)
        tokens = exchange.dialect.tokens(cached.body)
        if tokens is not None:
            model = exchange.key.model
            metrics.tokens_saved.labels(model).inc(tokens)
            price = self.rt.settings.prices_per_1k_tokens.get(model)
            if price:
                metrics.cost_saved.labels(model).inc(tokens / 1000 * price)

    async def _send(self, exchange: Exchange) -> httpx.Response:
        started = time.perf_counter()
        try:
            upstream = self.rt.upstream_for(exchange.dialect.upstream)
            return await upstream.send("POST", exchange.dialect.path, exchange.headers, exchange.raw)
        finally:
            self.rt.metrics.stage_seconds.labels("upstream").observe(time.perf_counter() - started)

    async def _forward(self, exchange: Exchange, lookup: Lookup, headers: dict[str, str]) -> Response:
        response = await self._send(exchange)
        content = await self.rt.upstream_for(exchange.dialect.upstream).read(response)
        if response.status_code == 200:
            answer = exchange.dialect.stored_answer(_upstream_json(content, exchange))
            if answer is not None and exchange.storable:
                self._label_near_miss(exchange, answer, lookup)
                entry_id = await self._store(exchange, answer, lookup)
                if entry_id is not None:
                    headers["X-Deja-Entry"] = str(entry_id)
        self._observe_time(exchange, exchange.forward_verdict)
        return Response(content, status_code=response.status_code,
                        headers={**response_headers(response.headers), **headers})

    async def _forward_stream(self, exchange: Exchange, lookup: Lookup, headers: dict[str, str]) -> Response:
        response = await self._send(exchange)
        is_sse = response.headers.get("content-type", "").startswith("text/event-stream")
        if response.status_code != 200 or not is_sse:
            content = await self.rt.upstream_for(exchange.dialect.upstream).read(response)
            if response.status_code == 200:
                _upstream_json(content, exchange)
            self._observe_time(exchange, exchange.forward_verdict)
            return Response(content, status_code=response.status_code,
                            headers={**response_headers(response.headers), **headers})
        return StreamingResponse(self._relay(exchange, response, lookup), status_code=200,
                                 headers={**response_headers(response.headers), **headers},
                                 media_type="text/event-stream")

    async def _relay(self, exchange: Exchange, response: httpx.Response, lookup: Lookup) -> AsyncIterator[bytes]:
        """Pass events through as they arrive; store once the dialect sees a clean, storable end (before the
        client gets the last bytes, so a request sent right after the stream ends already finds the entry)."""
        accumulator = exchange.dialect.accumulator()
        stored = False
        upstream = self.rt.upstream_for(exchange.dialect.upstream)
        try:
            async with aclosing(upstream.stream(response)) as chunks:
                async for chunk in chunks:
                    accumulator.feed(chunk)
                    if not stored and accumulator.complete and exchange.storable:
                        stored = True
                        answer = accumulator.answer()
                        self._label_near_miss(exchange, answer, lookup)
                        await self._store(exchange, answer, lookup)
                    yield chunk
            if not accumulator.ended:  # ended cleanly at the HTTP level, but the answer is unfinished
                log.warning("upstream stream ended before its last event (request %s)", exchange.request_id)
                yield exchange.dialect.stream_error(
                    "The upstream stream ended before its last event; the answer is incomplete.", UpstreamError.kind)
        except UpstreamError as exc:
            log.warning("upstream stream cut (request %s): %s", exchange.request_id, exc)
            yield exchange.dialect.stream_error(f"The upstream stream was interrupted: {exc}", exc.kind)
        finally:
            self._observe_time(exchange, exchange.forward_verdict)

    def _label_near_miss(self, exchange: Exchange, answer: dict[str, Any], lookup: Lookup) -> None:
        """A candidate was found and not served: compare its answer with the fresh one, in the background."""
        if lookup.candidate_response is not None and lookup.decision is not None:
            explored = lookup.decision.reason is Reason.EXPLORED
            source = LabelSource.EXPLORE if explored else LabelSource.SHADOW
            self.labeler.shadow(exchange.request_id, exchange.dialect, answer, lookup.candidate_response, source)

    async def _store(self, exchange: Exchange, answer: dict[str, Any], lookup: Lookup) -> int | None:
        vector: QueryVectors | None = lookup.vector
        try:
            return await run_in_threadpool(self.cache.store_answer, exchange.key, answer, vector,
                                           exchange.directives.max_age)
        except (OSError, ValueError, RuntimeError) as exc:  # a failed cache write never fails the response
            log.warning("answer not cached (request %s): %s", exchange.request_id, exc)
            return None

    async def passthrough(self, request: Request, path: str) -> Response:
        """Any other route: forwarded unchanged and uncached, bodies streamed both ways."""
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
            raise BadRequest("The request path contains a control character.", param="path")
        if path == "deja" or path.startswith("deja/"):  # Deja's own routes: a typo must not carry the admin
            raise NotFound("Unknown route.")  # token to the upstream
        anthropic = speaks_anthropic(path, request.headers)
        upstream = self.rt.upstream_for(UpstreamName.ANTHROPIC if anthropic else UpstreamName.OPENAI)
        response = await upstream.send(request.method, "/" + path, dict(request.headers), request.stream(),
                                       params=request.url.query)

        async def body() -> AsyncIterator[bytes]:
            try:
                async with aclosing(upstream.stream(response)) as chunks:
                    async for chunk in chunks:
                        yield chunk
            except UpstreamError as exc:
                log.warning("pass-through stream cut: %s", exc)

        return StreamingResponse(body(), status_code=response.status_code,
                                 headers={**response_headers(response.headers), "X-Deja-Cache": "bypass"})


def _upstream_json(content: bytes, exchange: Exchange) -> Any:
    """The JSON of an upstream 200; a body that is not JSON (cut short, or garbage) is an upstream failure."""
    try:
        return json.loads(content)
    except (ValueError, RecursionError) as exc:
        log.warning("upstream 200 with a broken JSON body (request %s): %s", exchange.request_id, exc)
        raise UpstreamError("The upstream answer was cut short or is not valid JSON; nothing was cached.") from exc


async def _aiter(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
