"""App factory: builds the runtime from one `Settings` (and any `Parts` passed in) in the lifespan and wires the
routes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service import access_log, errors
from service.admin import admin_router, feedback_router
from service.deps import GatewayDep, MetricsDep, require_admin, require_metrics
from service.dialects import CHAT, MESSAGES, RESPONSES, error_dialect
from service.gateway import Gateway
from service.label_page import label_router
from service.overview_page import overview_router
from service.runtime import Parts, Runtime
from service.settings import Settings

log = logging.getLogger("deja.app")


def create_app(settings: Settings, parts: Parts | None = None) -> FastAPI:
    """The ASGI app. Heavy components are built in the lifespan, never at import; `parts` replaces any of
    them (tests pass a lexical embedder, a `MockTransport` upstream, a clock)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        access_log.install()
        runtime = Runtime(settings, parts)
        log.info("%s", runtime.describe())
        runtime.start()
        app.state.runtime = runtime
        app.state.gateway = Gateway(runtime)
        try:
            yield
        finally:
            await runtime.close()

    # No /docs pages; the schema is admin-only (it maps every admin route), served below.
    app = FastAPI(title="Deja", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    errors.install(app, lambda request: error_dialect(request.url.path, request.headers).error_body)

    # The three cached APIs come first: the router tries routes in order, and every admin route matched before
    # them was a share of an exact hit's time. The gateway is read from the app state rather than through a
    # dependency: solving one on every request cost as much again (cProfile over the ASGI app).
    @app.post(CHAT.path)
    async def chat(request: Request) -> Response:
        return await _gateway(request).handle(request, CHAT)

    @app.post(MESSAGES.path)
    async def messages(request: Request) -> Response:
        return await _gateway(request).handle(request, MESSAGES)

    @app.post(RESPONSES.path)
    async def responses(request: Request) -> Response:
        return await _gateway(request).handle(request, RESPONSES)

    app.include_router(feedback_router)
    app.include_router(admin_router)
    app.include_router(label_router)
    app.include_router(overview_router)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers (the index may still be loading)."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        """Readiness: the semantic index is loaded (from a snapshot or rebuilt), so traffic may be sent."""
        runtime: Runtime | None = getattr(request.app.state, "runtime", None)
        if runtime is None or not runtime.ready.is_set():
            return JSONResponse({"status": "loading"}, status_code=503)
        return JSONResponse({"status": "ready", "indexed": runtime.indexed()})

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_admin)])
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/metrics", dependencies=[Depends(require_metrics)])
    async def metrics(metrics: MetricsDep) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def passthrough(path: str, request: Request, gw: GatewayDep) -> Response:
        return await gw.passthrough(request, path)

    # One route per method, each with its own operation id (one route for all would repeat its id in the schema).
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"):
        app.add_api_route("/{path:path}", passthrough, methods=[method], operation_id=f"passthrough_{method.lower()}")

    return app


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway
