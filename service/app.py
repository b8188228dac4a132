"""App factory: builds every component from one `Settings` in the lifespan and wires the routes."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import httpx
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response

from index.cache import Cache, CacheConfig
from index.decision import MatchPolicy
from index.embedder import MiniLMEmbedder
from index.errors import StoreUnavailable, Unauthorized
from index.exact import ExactCache, LruExactCache, RedisExactCache
from index.hnsw import SemanticIndex
from index.stages import Stage
from index.store import EntryStore, make_engine
from service import errors
from service.gateway import Gateway
from service.settings import Settings
from service.upstream import Upstream

log = logging.getLogger("deja")


def build_stages(settings: Settings) -> tuple[Stage, ...]:
    if not (settings.guard_polarity or settings.guard_values):
        return ()
    from index.guards import rule_stages

    return rule_stages(polarity=settings.guard_polarity, values=settings.guard_values)


def build_cache(settings: Settings) -> Cache:
    """Every storage component, from settings; the index is warmed from SQL."""
    exact: ExactCache = (
        RedisExactCache(settings.redis_url) if settings.redis_url else LruExactCache(settings.exact_max_items)
    )
    store = EntryStore(make_engine(settings.sql_url))
    store.create_schema()
    embedder = MiniLMEmbedder(threads=settings.embed_threads or None)
    config = CacheConfig(MatchPolicy(settings.min_similarity), settings.ttl_seconds, settings.candidates)
    cache = Cache(exact, store, SemanticIndex(embedder.dim), embedder, config, build_stages(settings))
    added = cache.warm()
    log.info("index warmed with %d entries from %s", added, store.engine.url.render_as_string())
    return cache


def build_upstream(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> Upstream:
    timeout = httpx.Timeout(connect=settings.upstream_connect_timeout, read=settings.upstream_read_timeout,
                            write=30.0, pool=10.0)
    limits = httpx.Limits(max_connections=settings.upstream_max_connections,
                          max_keepalive_connections=settings.upstream_max_connections)
    return Upstream(settings.upstream_url, timeout, limits, transport)


def _gateway(request: Request) -> Gateway:
    gw: Gateway = request.app.state.gateway
    return gw


GatewayDep = Annotated[Gateway, Depends(_gateway)]


def create_app(settings: Settings) -> FastAPI:
    """The ASGI app. Heavy components are built in the lifespan, never at import."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        cache = build_cache(settings)
        upstream = build_upstream(settings)
        app.state.gateway = Gateway(cache, upstream, settings.secret_bytes(), settings.max_body_bytes)
        try:
            yield
        finally:
            await upstream.aclose()
            cache.store.engine.dispose()

    app = FastAPI(title="Deja", lifespan=lifespan, docs_url=None, redoc_url=None)
    errors.install(app)

    def admin(request: Request) -> None:
        expected = settings.admin_token.get_secret_value() if settings.admin_token else None
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            raise Unauthorized("A valid admin bearer token is required.")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/chat/completions")
    async def chat(request: Request, gw: GatewayDep) -> Response:
        return await gw.chat(request)

    @app.get("/deja/stats", dependencies=[Depends(admin)])
    async def stats(gw: GatewayDep) -> dict[str, Any]:
        try:
            entries = gw.cache.store.count()
        except StoreUnavailable:
            entries = -1
        return {"entries": entries, "indexed": len(gw.cache.index),
                "min_similarity": gw.cache.config.policy.min_similarity,
                "stages": [s.name for s in gw.cache.stages]}

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
    async def passthrough(path: str, request: Request, gw: GatewayDep) -> Response:
        return await gw.passthrough(request, path)

    @app.exception_handler(404)
    async def not_found(_request: Request, _exc: Exception) -> JSONResponse:
        return JSONResponse(errors.error_body("Unknown route.", "invalid_request_error"), status_code=404)

    return app
