"""The gateway pipeline for `POST /v1/chat/completions`: validate, key, look up, answer or forward and store."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from index.cache import Cache
from index.embedder import Vector
from index.errors import UpstreamError
from index.keys import CacheKey, LookupMode, build_key, namespace_for
from index.records import CachedResponse, Lookup, Verdict
from service.errors import PayloadTooLarge, error_body
from service.requests import CacheDirectives, bearer_token, parse_cache_control, parse_chat_body
from service.sse import StreamAccumulator, replay, storable_finish
from service.upstream import Upstream, response_headers

log = logging.getLogger("deja.gateway")
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Exchange:
    """One chat request after parsing: what the caller sent and where it lives in the cache."""

    request_id: str
    raw: bytes
    body: dict[str, Any]
    key: CacheKey
    directives: CacheDirectives
    headers: dict[str, str]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


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
    """Owns the cache and the upstream client for the lifetime of the app."""

    def __init__(self, cache: Cache, upstream: Upstream, secret: bytes, max_body_bytes: int) -> None:
        self.cache = cache
        self.upstream = upstream
        self._secret = secret
        self._max_body = max_body_bytes

    async def chat(self, request: Request) -> Response:
        exchange = await self._parse(request)
        lookup = Lookup(Verdict.BYPASS)
        if exchange.key.mode is not LookupMode.BYPASS and exchange.directives.lookup:
            lookup = await run_in_threadpool(self.cache.lookup, exchange.key)
            if lookup.response is not None and self._fresh(lookup.response, exchange.directives):
                return self._answer_from_cache(exchange, lookup, lookup.response)
            if lookup.verdict is not Verdict.MISS:
                lookup = Lookup(Verdict.MISS, vector=lookup.vector, similarity=lookup.similarity)
        verdict = Verdict.MISS if self._storable(exchange) else Verdict.BYPASS
        headers = self._headers(exchange, lookup, verdict)
        if exchange.stream:
            return await self._forward_stream(exchange, lookup.vector, headers)
        return await self._forward(exchange, lookup.vector, headers)

    async def _parse(self, request: Request) -> Exchange:
        raw = await read_body(request, self._max_body)
        body = parse_chat_body(raw)
        directives = parse_cache_control(request.headers.get("cache-control"))
        namespace = namespace_for(bearer_token(request.headers.get("authorization")), self._secret)
        key = build_key(namespace, body)
        return Exchange(uuid.uuid4().hex, raw, body, key, directives, dict(request.headers))

    @staticmethod
    def _fresh(response: CachedResponse, directives: CacheDirectives) -> bool:
        return directives.max_age is None or time.time() - response.created_at <= directives.max_age

    def _storable(self, exchange: Exchange) -> bool:
        return exchange.key.mode is not LookupMode.BYPASS and exchange.directives.store

    @staticmethod
    def _headers(exchange: Exchange, lookup: Lookup, verdict: Verdict) -> dict[str, str]:
        headers = {"X-Deja-Cache": verdict.value, "X-Deja-Request-Id": exchange.request_id}
        if lookup.similarity is not None:
            headers["X-Deja-Similarity"] = f"{lookup.similarity:.4f}"
        if lookup.decision is not None and lookup.decision.vetoed_by:
            headers["X-Deja-Veto"] = lookup.decision.vetoed_by
        if lookup.response is not None:
            headers["X-Deja-Entry"] = str(lookup.response.entry_id)
        if exchange.key.mode_reason:
            headers["X-Deja-Policy"] = f"{exchange.key.mode.value}: {exchange.key.mode_reason}"
        return headers

    def _answer_from_cache(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse) -> Response:
        body = dict(cached.body)
        body["id"] = f"chatcmpl-deja-{uuid.uuid4().hex[:24]}"
        body["created"] = int(time.time())
        headers = self._headers(exchange, lookup, lookup.verdict)
        if exchange.stream:
            include_usage = bool((exchange.body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(_aiter(replay(body, include_usage)), media_type="text/event-stream",
                                     headers=headers)
        return Response(json.dumps(body), media_type="application/json", headers=headers)

    async def _forward(self, exchange: Exchange, vector: Vector | None, headers: dict[str, str]) -> Response:
        response = await self.upstream.send("POST", CHAT_PATH, exchange.headers, exchange.raw)
        content = await self.upstream.read(response)
        if response.status_code == 200 and self._storable(exchange):
            completion = _completion(content)
            if completion is not None:
                entry_id = await self._store(exchange, completion, vector)
                if entry_id is not None:
                    headers["X-Deja-Entry"] = str(entry_id)
        return Response(content, status_code=response.status_code,
                        headers={**response_headers(response.headers), **headers})

    async def _forward_stream(self, exchange: Exchange, vector: Vector | None,
                              headers: dict[str, str]) -> Response:
        response = await self.upstream.send("POST", CHAT_PATH, exchange.headers, exchange.raw)
        is_sse = response.headers.get("content-type", "").startswith("text/event-stream")
        if response.status_code != 200 or not is_sse:
            content = await self.upstream.read(response)
            return Response(content, status_code=response.status_code,
                            headers={**response_headers(response.headers), **headers})
        return StreamingResponse(self._relay(exchange, response, vector), status_code=200,
                                 headers={**response_headers(response.headers), **headers},
                                 media_type="text/event-stream")

    async def _relay(self, exchange: Exchange, response: httpx.Response,
                     vector: Vector | None) -> AsyncIterator[bytes]:
        """Pass chunks through as they arrive; store only after a clean `[DONE]` (before the client sees it,
        so a request sent right after the stream ends already finds the entry)."""
        accumulator = StreamAccumulator()
        try:
            async for chunk in response.aiter_bytes():
                accumulator.feed(chunk)
                if accumulator.done and accumulator.complete and self._storable(exchange):
                    await self._store(exchange, accumulator.completion(), vector)
                    accumulator = StreamAccumulator()  # stored once; later bytes are only passed through
                yield chunk
        except httpx.HTTPError as exc:
            log.warning("upstream stream cut (request %s): %s", exchange.request_id, type(exc).__name__)
            error = error_body(f"The upstream stream was interrupted: {type(exc).__name__}", "upstream_error")
            yield b"data: " + json.dumps(error).encode() + b"\n\n"
        finally:
            await response.aclose()

    async def _store(self, exchange: Exchange, completion: dict[str, Any], vector: Vector | None) -> int | None:
        ttl = exchange.directives.max_age
        try:
            return await run_in_threadpool(self.cache.store_answer, exchange.key, completion, vector, ttl)
        except (OSError, ValueError, RuntimeError) as exc:  # a failed cache write never fails the response
            log.warning("answer not cached (request %s): %s", exchange.request_id, exc)
            return None

    async def passthrough(self, request: Request, path: str) -> Response:
        """Any other route: forwarded unchanged and uncached, bodies streamed both ways."""
        response = await self.upstream.send(request.method, "/" + path, dict(request.headers),
                                            request.stream(), params=request.url.query)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.aiter_bytes():
                    yield chunk
            except httpx.HTTPError as exc:
                log.warning("pass-through stream cut: %s", type(exc).__name__)
            finally:
                await response.aclose()

        return StreamingResponse(body(), status_code=response.status_code,
                                 headers={**response_headers(response.headers), "X-Deja-Cache": "bypass"})


def _completion(content: bytes) -> dict[str, Any] | None:
    """The upstream body if it is a complete chat.completion worth storing."""
    try:
        body = json.loads(content)
    except ValueError:
        return None
    if not isinstance(body, dict) or not body.get("choices"):
        return None
    if not all(storable_finish(c.get("finish_reason")) for c in body["choices"]):
        return None
    return body


async def _aiter(chunks: Any) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


__all__ = ["CHAT_PATH", "Gateway", "UpstreamError"]
