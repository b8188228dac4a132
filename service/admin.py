"""Admin API (bearer admin token, constant-time compare) and the feedback endpoint."""

from __future__ import annotations

import hmac
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from index.decision_log import Label, LabelSource
from index.errors import StoreUnavailable
from index.keys import namespace_for
from service.credentials import namespace_of
from service.errors import NotFound, Unauthorized
from service.requests import bearer_token
from service.runtime import Runtime


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


RuntimeDep = Annotated[Runtime, Depends(runtime)]


def admin_token_of(request: Request) -> str:
    return bearer_token(request.headers.get("authorization")) or request.cookies.get("deja_admin") or ""


def require_admin(request: Request, rt: RuntimeDep) -> None:
    expected = rt.settings.admin_token.get_secret_value() if rt.settings.admin_token else ""
    given = admin_token_of(request)
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthorized("A valid admin bearer token is required.")


class Feedback(BaseModel):
    request_id: str
    correct: bool
    detail: str | None = None


class Invalidate(BaseModel):
    """Select entries by namespace (the hash, or an API key to hash) and/or model."""

    namespace: str | None = None
    api_key: str | None = None
    model: str | None = None


feedback_router = APIRouter()
admin_router = APIRouter(prefix="/deja", dependencies=[Depends(require_admin)])


@feedback_router.post("/v1/deja/feedback")
async def feedback(body: Feedback, request: Request, rt: RuntimeDep) -> dict[str, Any]:
    """An application's verdict on a served answer; the same request twice keeps the latest."""
    await run_in_threadpool(rt.flush_decisions)
    decision = await run_in_threadpool(rt.decisions.get, body.request_id)
    namespace = namespace_of(request.headers, rt.credentials, rt.secret)
    # Another tenant's id is as unknown as a bad one.
    if decision is None or namespace is None or decision.namespace != namespace:
        raise NotFound(f"No semantic decision with request_id {body.request_id!r}.")
    label = Label(body.request_id, LabelSource.FEEDBACK, body.correct, time.time(), body.detail)
    await run_in_threadpool(rt.decisions.label, label)
    return {"request_id": body.request_id, "recorded": True}


@admin_router.get("/stats")
async def stats(rt: RuntimeDep) -> dict[str, Any]:
    def collect() -> dict[str, Any]:
        try:
            entries = rt.cache.store.count()
            labels = rt.decisions.label_counts()
        except StoreUnavailable:
            entries, labels = -1, {}
        return {
            "entries": entries, "indexed": len(rt.cache.index), "evictions": rt.maintainer.evictions,
            "min_similarity": rt.thresholds.default,
            "thresholds": {ns: {"min_similarity": v, "labels": n} for ns, (v, n) in rt.thresholds.by_namespace.items()},
            "stages": [s.name for s in rt.cache.stages], "labels": labels,
        }

    return await run_in_threadpool(collect)


@admin_router.get("/entries/{entry_id}")
async def get_entry(entry_id: int, rt: RuntimeDep) -> dict[str, Any]:
    entry = await run_in_threadpool(rt.cache.store.get, entry_id)
    if entry is None:
        raise NotFound(f"No entry {entry_id}.")
    return {"id": entry.entry_id, "namespace": entry.namespace, "model": entry.model, "prompt": entry.prompt,
            "response": entry.response, "created_at": entry.created_at, "expires_at": entry.expires_at,
            "hits": entry.hits, "indexed": entry.entry_id in rt.cache.index}


@admin_router.delete("/entries/{entry_id}")
async def delete_entry(entry_id: int, rt: RuntimeDep) -> dict[str, Any]:
    if await run_in_threadpool(rt.maintainer.delete, [entry_id]) == 0:
        raise NotFound(f"No entry {entry_id}.")
    return {"deleted": 1}


@admin_router.post("/invalidate")
async def invalidate(body: Invalidate, rt: RuntimeDep) -> dict[str, Any]:
    namespace = body.namespace or (namespace_for(body.api_key, rt.secret) if body.api_key else None)
    if namespace is None and body.model is None:
        raise NotFound("Give a namespace, an api_key or a model (use /deja/flush to drop everything).")
    deleted = await run_in_threadpool(rt.maintainer.invalidate, namespace, body.model)
    return {"deleted": deleted}


@admin_router.post("/flush")
async def flush(rt: RuntimeDep) -> dict[str, Any]:
    deleted = await run_in_threadpool(rt.maintainer.invalidate, None, None)
    return {"deleted": deleted}
