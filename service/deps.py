"""FastAPI dependencies, in one place: each route asks for the narrow part it uses, never for more."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from index.forgetting import Forgetting
from index.maintenance import Maintainer
from index.search.hnsw import SemanticIndex
from index.settings import Settings
from index.storage.decision_log import DecisionLog
from index.storage.entries import EntryStore
from service.admin_auth import check_admin, check_metrics
from service.credentials import namespace_of
from service.gateway import Gateway
from service.metrics import Metrics
from service.runtime import Runtime


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


def _index(rt: RuntimeDep) -> SemanticIndex:
    return rt.index


def _maintainer(rt: RuntimeDep) -> Maintainer:
    return rt.maintainer


async def _forgetting(rt: RuntimeDep) -> Forgetting:
    """Forgetting with every buffered decision written first, so what an invalidation covers is in SQL."""
    await run_in_threadpool(rt.flush_decisions)
    return rt.forgetting


def _metrics(rt: RuntimeDep) -> Metrics:
    return rt.metrics


GatewayDep = Annotated[Gateway, Depends(_gateway)]
SettingsDep = Annotated[Settings, Depends(_settings)]
DecisionLogDep = Annotated[DecisionLog, Depends(_decisions)]
EntryStoreDep = Annotated[EntryStore, Depends(_entries)]
IndexDep = Annotated[SemanticIndex, Depends(_index)]
MaintainerDep = Annotated[Maintainer, Depends(_maintainer)]
ForgettingDep = Annotated[Forgetting, Depends(_forgetting)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
NamespaceDep = Annotated[str | None, Depends(_namespace)]


def require_admin(request: Request, rt: RuntimeDep) -> None:
    """The admin token as a bearer header, or a label-page session (with its CSRF token to change state)."""
    check_admin(request, rt.settings, rt.clock())


def require_metrics(request: Request, settings: SettingsDep) -> None:
    check_metrics(request, settings)
