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
from contextlib import aclosing, nullcontext
from typing import Any

import httpx
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from index import jsonio
from index.match.outcome import Lookup
from index.records import CachedResponse, QueryVectors, Verdict
from index.request.keys import CacheKey, LookupMode, key_for
from index.storage.exact import LruExactCache
from service.credentials import NO_CREDENTIAL, namespace_of
from service.dialects import Dialect, speaks_anthropic
from service.dialects.base import UpstreamName
from service.errors import BadRequest, NotFound, TooManyRequests, UpstreamError, UpstreamTimeout
from service.exchange import Exchange, read_body
from service.fairness import BUSY_REASON, LARGE_BODY_BYTES
from service.labelling import Labelling
from service.ledger import Account
from service.observer import Observer, deja_headers, server_timing
from service.requests import parse_cache_control
from service.runtime import Runtime
from service.single_flight import Flight, SharedAnswer, SingleFlight
from service.upstream import response_headers

log = logging.getLogger("deja.gateway")


class Gateway:
    """The request pipeline; owns nothing, everything lives in the `Runtime`."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.cache = runtime.cache
        self.observer = Observer(runtime.metrics, runtime.log_decision, runtime.clock, runtime.policy.min_similarity)
        self.labelling = Labelling(runtime)
        # A follower waits as long as its own upstream call could stay silent before timing out.
        self.flights = SingleFlight(runtime.settings.upstream_read_timeout)

    async def handle(self, request: Request, dialect: Dialect) -> Response:
        arrived = time.perf_counter()
        namespace = namespace_of(request.headers, self.rt.credentials, self.rt.secret)
        gate = namespace or ""
        with self.rt.heavy.active(gate):  # other namespaces' heavy work yields to this one while it runs
            declared = request.headers.get("content-length", "")
            if not (declared.isdigit() and int(declared) > LARGE_BODY_BYTES):
                return await self._handle(request, dialect, namespace, arrived, holding=False)
            # A large body is heavy by itself: it takes one of its namespace's slots before it is even read.
            with self.rt.heavy.enter(gate) as admitted:
                if not admitted:
                    raise TooManyRequests("Too many large requests in flight for this API key; retry shortly.")
                return await self._handle(request, dialect, namespace, arrived, holding=True)

    async def _handle(self, request: Request, dialect: Dialect, namespace: str | None, arrived: float,
                      holding: bool) -> Response:
        """`namespace`: the caller's (None: no credential); `arrived`: when the gateway took the request (its
        `perf_counter`); `holding`: the request already holds one of its namespace's heavy slots (a large body)."""
        exchange = await self._parse(request, dialect, namespace, arrived)
        timings = exchange.timings
        coalesces = exchange.coalesces
        if coalesces and (joined := await self._join(exchange)) is not None:
            return joined
        lookup = Lookup(Verdict.BYPASS)
        if exchange.key.mode is not LookupMode.BYPASS and exchange.directives.lookup:
            # An exact hit in the in-process tier needs nothing else: no policy, no slot, no thread. A semantic
            # decision's policy is the Matcher's, and rides on the lookup (`Decision.policy`).
            inline = self._inline_exact(exchange.key)
            if inline is not None:
                lookup = inline
            else:
                lookup, exchange = await self._lookup(exchange, holding)
            timings.update(lookup.timings_ms)
            started = time.perf_counter()
            self.observer.lookup(exchange, lookup)
            timings["log"] = (time.perf_counter() - started) * 1000
            served = self._servable(exchange, lookup.response)
            if lookup.response is not None and served is not None:
                return self._answer_from_cache(exchange, lookup, lookup.response, served)
            if lookup.response is not None:  # too old for the caller's max-age, or cannot stand in
                lookup = dataclasses.replace(lookup, verdict=Verdict.MISS, response=None)
        self.rt.metrics.requests.labels(dialect.name, exchange.forward_verdict.value).inc()
        if coalesces and (joined := await self._join(exchange)) is not None:  # one left for upstream meanwhile
            return joined
        headers = deja_headers(exchange, lookup, exchange.forward_verdict)
        headers["Server-Timing"] = server_timing(timings)  # a miss: the lookup's stages before the upstream call
        flight = self.flights.lead(exchange.key.exact) if coalesces else None
        try:
            if exchange.stream:
                return await self._forward_stream(exchange, lookup, headers, flight)
            return await self._forward(exchange, lookup, headers, flight)
        except BaseException:
            if flight is not None:
                flight.settle(None)
            raise

    async def _lookup(self, exchange: Exchange, holding: bool) -> tuple[Lookup, Exchange]:
        """The lookup on the thread pool (Redis, SQL, the semantic tier), and the exchange as it then stands (exact
        only when its namespace is over its share of the CPU)."""
        # Semantic lookups embed and decide; exact-only ones are cheap. A held slot covers its own lookup.
        heavy = exchange.key.mode is LookupMode.FULL and not holding
        with self.rt.heavy.enter(exchange.key.namespace) if heavy else nullcontext(True) as admitted:
            if not admitted:  # over its namespace's share of the CPU: exact only, never waiting
                exchange = _exact_only(exchange, BUSY_REASON)
            started = time.perf_counter()
            lookup = await run_in_threadpool(self.cache.lookup, exchange.key)
        # The hops to the thread pool and back: the lookup's wall time its own stages do not account for.
        exchange.timings["pool"] = (time.perf_counter() - started) * 1000 - sum(lookup.timings_ms.values())
        return lookup, exchange

    async def _join(self, exchange: Exchange) -> Response | None:
        """The answer of an identical request already upstream, once it arrives; None when there is none in
        flight, or when it ended without an answer to share (this request then goes upstream itself)."""
        flight = self.flights.follow(exchange.key.exact)
        if flight is None:
            return None
        timeout = self.flights.max_age
        try:
            shared = await flight.wait(timeout)
        except TimeoutError:
            raise UpstreamTimeout(
                f"upstream timed out: the identical request in flight took over {timeout:g} s") from None
        served = None if shared is None else exchange.dialect.serve(shared.body, exchange.body, self.rt.clock())
        if shared is None or served is None:
            return None
        verdict = Verdict.COALESCED
        self.rt.metrics.requests.labels(exchange.dialect.name, verdict.value).inc()
        usage = exchange.dialect.usage(shared.body)
        if usage is not None:  # answered by another request's trip upstream: one call saved
            self.rt.ledger.saved(_account(exchange), usage)
        self.observer.time(exchange, verdict)
        headers = deja_headers(exchange, Lookup(verdict), verdict)
        if shared.entry_id is not None:
            headers["X-Deja-Entry"] = str(shared.entry_id)
        if exchange.stream:
            return StreamingResponse(_aiter(exchange.dialect.replay(served, exchange.body)),
                                     media_type="text/event-stream", headers=headers)
        return Response(jsonio.dumps(served), media_type="application/json", headers=headers)

    async def _parse(self, request: Request, dialect: Dialect, namespace: str | None, arrived: float) -> Exchange:
        started = time.perf_counter()
        raw = await read_body(request, self.rt.settings.max_body_bytes)
        body = dialect.parse(raw)
        directives = parse_cache_control(request.headers.get("cache-control"))
        parsed = time.perf_counter()
        canonical = dialect.canonical(body, request.headers)
        key = key_for(namespace or "", canonical, self.rt.policy.context_match, self.rt.policy.max_decision_chars)
        if namespace is None:  # never file an answer under "nobody": every such caller would share it
            key = dataclasses.replace(key, mode=LookupMode.BYPASS, mode_reason=NO_CREDENTIAL)
        else:  # what stops reuse: the request's shape, never its text
            self.rt.reuse.observe(namespace, canonical, key.exact)
        keyed = time.perf_counter()
        timings = {"auth": (started - arrived) * 1000, "parse": (parsed - started) * 1000,
                   "key": (keyed - parsed) * 1000}
        return Exchange(uuid.uuid4().hex, dialect, raw, body, key, directives, dict(request.headers), arrived,
                        timings)

    def _inline_exact(self, key: CacheKey) -> Lookup | None:
        """An exact hit in the in-process tier, read on the event loop: it never blocks, and the hop to the
        thread pool was the largest share of an exact hit's time under load (py-spy, bench.load). Anything else
        (Redis, SQL, the semantic tier) goes through `Cache.lookup` on the pool."""
        if not isinstance(self.cache.exact, LruExactCache):
            return None
        started = time.perf_counter()
        hit = self.cache.exact.get(key.exact)
        if hit is None:
            return None
        return Lookup(Verdict.EXACT_HIT, hit, similarity=1.0,
                      timings_ms={"exact": (time.perf_counter() - started) * 1000})

    def _servable(self, exchange: Exchange, cached: CachedResponse | None) -> dict[str, Any] | None:
        max_age = exchange.directives.max_age
        if cached is None or (max_age is not None and self.rt.clock() - cached.created_at > max_age):
            return None
        return exchange.dialect.serve(cached.body, exchange.body, self.rt.clock())

    def _answer_from_cache(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse,
                           served: dict[str, Any]) -> Response:
        started = time.perf_counter()
        self._count_hit(exchange, lookup, cached)
        headers = deja_headers(exchange, lookup, lookup.verdict)
        if lookup.verdict is Verdict.SEMANTIC_HIT:
            self.labelling.audit(exchange, lookup, cached)
        if exchange.stream:
            return StreamingResponse(_aiter(exchange.dialect.replay(served, exchange.body)),
                                     media_type="text/event-stream", headers=_timed(headers, exchange, started))
        content = jsonio.dumps(served)
        return Response(content, media_type="application/json", headers=_timed(headers, exchange, started))

    def _count_hit(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse) -> None:
        metrics = self.rt.metrics
        metrics.requests.labels(exchange.dialect.name, lookup.verdict.value).inc()
        self.observer.time(exchange, lookup.verdict)
        self.rt.maintainer.touch(cached.entry_id)
        usage = exchange.dialect.usage(cached.body)
        if usage is not None:  # the upstream call this hit replaced would have cost what the stored one did
            self.rt.ledger.saved(_account(exchange), usage)

    async def _send(self, exchange: Exchange) -> httpx.Response:
        started = time.perf_counter()
        try:
            upstream = self.rt.upstream_for(exchange.dialect.upstream)
            return await upstream.send("POST", exchange.dialect.path, exchange.headers, exchange.raw)
        finally:
            self.rt.metrics.stage_seconds.labels("upstream").observe(time.perf_counter() - started)

    async def _forward(self, exchange: Exchange, lookup: Lookup, headers: dict[str, str],
                       flight: Flight | None) -> Response:
        response = await self._send(exchange)
        content = await self.rt.upstream_for(exchange.dialect.upstream).read(response)
        if response.status_code == 200:
            body = _upstream_json(content, exchange)
            self._forwarded(exchange, body)
            answer = exchange.dialect.stored_answer(body)
            if answer is not None and exchange.storable and self._worth_storing(exchange, answer):
                self.labelling.near_miss(exchange, answer, lookup)
                entry_id = await self._store(exchange, answer, lookup)
                if entry_id is not None:
                    headers["X-Deja-Entry"] = str(entry_id)
                if flight is not None:
                    flight.settle(SharedAnswer(answer, entry_id))
        if flight is not None:
            flight.settle(None)
        self.observer.time(exchange, exchange.forward_verdict)
        return Response(content, status_code=response.status_code,
                        headers={**response_headers(response.headers), **headers})

    async def _forward_stream(self, exchange: Exchange, lookup: Lookup, headers: dict[str, str],
                              flight: Flight | None) -> Response:
        response = await self._send(exchange)
        is_sse = response.headers.get("content-type", "").startswith("text/event-stream")
        if response.status_code != 200 or not is_sse:
            if flight is not None:
                flight.settle(None)
            content = await self.rt.upstream_for(exchange.dialect.upstream).read(response)
            if response.status_code == 200:
                _upstream_json(content, exchange)
            self.observer.time(exchange, exchange.forward_verdict)
            return Response(content, status_code=response.status_code,
                            headers={**response_headers(response.headers), **headers})
        return StreamingResponse(self._relay(exchange, response, lookup, flight), status_code=200,
                                 headers={**response_headers(response.headers), **headers},
                                 media_type="text/event-stream")

    async def _relay(self, exchange: Exchange, response: httpx.Response, lookup: Lookup,
                     flight: Flight | None) -> AsyncIterator[bytes]:
        """Pass events through as they arrive; store once the dialect sees a clean, storable end (before the
        client gets the last bytes, so a request sent right after the stream ends already finds the entry), and
        hand the answer to the identical requests waiting on `flight`."""
        accumulator = exchange.dialect.accumulator()
        stored = False
        upstream = self.rt.upstream_for(exchange.dialect.upstream)
        try:
            async with aclosing(upstream.stream(response)) as chunks:
                async for chunk in chunks:
                    accumulator.feed(chunk)
                    if not stored and accumulator.complete:
                        stored = True
                        answer = accumulator.answer()
                        self._forwarded(exchange, answer)
                        if not exchange.storable:
                            yield chunk
                            continue
                        if not self._worth_storing(exchange, answer):
                            yield chunk
                            continue
                        self.labelling.near_miss(exchange, answer, lookup)
                        entry_id = await self._store(exchange, answer, lookup)
                        if flight is not None:
                            flight.settle(SharedAnswer(answer, entry_id))
                    yield chunk
            if not accumulator.ended:  # ended cleanly at the HTTP level, but the answer is unfinished
                log.warning("upstream stream ended before its last event (request %s)", exchange.request_id)
                yield exchange.dialect.stream_error(
                    "The upstream stream ended before its last event; the answer is incomplete.", UpstreamError.kind)
        except UpstreamError as exc:
            log.warning("upstream stream cut (request %s): %s", exchange.request_id, exc)
            yield exchange.dialect.stream_error(f"The upstream stream was interrupted: {exc}", exc.kind)
        finally:
            if flight is not None:
                flight.settle(None)
            self.observer.time(exchange, exchange.forward_verdict)

    def _forwarded(self, exchange: Exchange, answer: Any) -> None:
        """What the forwarded call cost, by kind (the provider's prompt-cache share among it)."""
        usage = exchange.dialect.usage(answer) if isinstance(answer, dict) else None
        if usage is not None:
            self.rt.ledger.forwarded(_account(exchange), usage)

    def _worth_storing(self, exchange: Exchange, answer: dict[str, Any]) -> bool:
        """A refusal, an empty answer or one of only failed tools is relayed, never stored (unless
        `DEJA_STORE_REFUSALS`): served again for a whole TTL, it would repeat a failure as if it were the answer."""
        reason = None if self.rt.settings.store_refusals else exchange.dialect.non_answer(answer)
        if reason is not None:
            self.rt.metrics.not_stored.labels(reason).inc()
            log.info("answer not cached (request %s): %s", exchange.request_id, reason)
        return reason is None

    async def _store(self, exchange: Exchange, answer: dict[str, Any], lookup: Lookup) -> int | None:
        vector: QueryVectors | None = lookup.vector
        try:
            return await run_in_threadpool(self.cache.store_answer, exchange.key, answer, vector,
                                           exchange.directives.max_age, exchange.dialect.usage(answer))
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
        # A read (no body to stream) is sent as bytes, so that a stale pooled connection may be retried once.
        content = await request.body() if request.method in ("GET", "HEAD", "OPTIONS") else request.stream()
        response = await upstream.send(request.method, "/" + path, dict(request.headers), content,
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


def _account(exchange: Exchange) -> Account:
    return Account(exchange.key.namespace, exchange.dialect.name, exchange.key.model)


def _upstream_json(content: bytes, exchange: Exchange) -> Any:
    """The JSON of an upstream 200; a body that is not JSON (cut short, or garbage) is an upstream failure."""
    try:
        return json.loads(content)
    except (ValueError, RecursionError) as exc:
        log.warning("upstream 200 with a broken JSON body (request %s): %s", exchange.request_id, exc)
        raise UpstreamError("The upstream answer was cut short or is not valid JSON; nothing was cached.") from exc


def _timed(headers: dict[str, str], exchange: Exchange, respond_started: float) -> dict[str, str]:
    """`headers` with `Server-Timing`: each stage of the request in ms, `respond` (counting, headers, the body)
    from `respond_started`, and `total` (the gateway's own time from the first byte of the body it read)."""
    now = time.perf_counter()
    exchange.timings["respond"] = (now - respond_started) * 1000
    exchange.timings["total"] = (now - exchange.started) * 1000
    headers["Server-Timing"] = server_timing(exchange.timings)
    return headers


def _exact_only(exchange: Exchange, reason: str) -> Exchange:
    key = dataclasses.replace(exchange.key, mode=LookupMode.EXACT_ONLY, mode_reason=reason)
    return dataclasses.replace(exchange, key=key)


async def _aiter(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
