"""FastAPI dependencies, in one place: each route asks for the narrow part it uses, never for more."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from index.decision_log import DecisionLog
from index.maintenance import Maintainer
from index.settings import Settings
from index.store import EntryStore
from index.vector_index import VectorIndex
from service.credentials import namespace_of
from service.errors import Unauthorized
from service.gateway import Gateway
from service.metrics import Metrics
from service.requests import bearer_token
from service.runtime import Runtime

ADMIN_COOKIE = "deja_admin"  # set by the labelling page, read by `require_admin`


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(_runtime)]


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


def _settings(rt: RuntimeDep) -> Settings:
    return rt.settings


async def _decisions(rt: RuntimeDep) -> DecisionLog:
    """The decision log with every buffered decision written, so a request id just answered is found."""
    await run_in_threadpool(rt.flush_decisions)
    return rt.decisions


def _namespace(request: Request, rt: RuntimeDep) -> str | None:
    """The caller's namespace, from the credential the upstream sees (None: no credential)."""
    return namespace_of(request.headers, rt.credentials, rt.secret)


def _entries(rt: RuntimeDep) -> EntryStore:
    return rt.store


def _index(rt: RuntimeDep) -> VectorIndex:
    return rt.index


def _maintainer(rt: RuntimeDep) -> Maintainer:
    return rt.maintainer


def _metrics(rt: RuntimeDep) -> Metrics:
    return rt.metrics


GatewayDep = Annotated[Gateway, Depends(_gateway)]
SettingsDep = Annotated[Settings, Depends(_settings)]
DecisionLogDep = Annotated[DecisionLog, Depends(_decisions)]
EntryStoreDep = Annotated[EntryStore, Depends(_entries)]
IndexDep = Annotated[VectorIndex, Depends(_index)]
MaintainerDep = Annotated[Maintainer, Depends(_maintainer)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
NamespaceDep = Annotated[str | None, Depends(_namespace)]


def is_admin_token(settings: Settings, given: str) -> bool:
    """Constant-time check of `given` against the configured admin token (none configured: nobody is admin)."""
    expected = settings.admin_token.get_secret_value() if settings.admin_token else ""
    return bool(expected) and hmac.compare_digest(given.encode(), expected.encode())


def require_admin(request: Request, settings: SettingsDep) -> None:
    """The admin token as a bearer header or as the labelling page's cookie."""
    given = bearer_token(request.headers.get("authorization")) or request.cookies.get(ADMIN_COOKIE) or ""
    if not is_admin_token(settings, given):
        raise Unauthorized("A valid admin bearer token is required.")
