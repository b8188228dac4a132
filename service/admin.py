"""Admin API (bearer admin token, constant-time compare) and the feedback endpoint."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from index.request.keys import namespace_for
from index.storage.decision_log import Label, LabelSource
from service.budget import BudgetReport, Evidence
from service.deps import (
    DecisionLogDep,
    EntryStoreDep,
    ForgettingDep,
    IndexDep,
    NamespaceDep,
    RuntimeDep,
    require_admin,
)
from service.errors import NotFound
from service.evidence import teach
from service.json_input import JsonBodyRoute
from service.ledger import row_json


class Feedback(BaseModel):
    request_id: str
    correct: bool
    detail: str | None = None


class Invalidate(BaseModel):
    """Select entries by namespace (the hash, or an API key to hash) and/or model."""

    namespace: str | None = None
    api_key: str | None = None
    model: str | None = None


feedback_router = APIRouter(route_class=JsonBodyRoute)
admin_router = APIRouter(prefix="/deja", dependencies=[Depends(require_admin)], route_class=JsonBodyRoute)
# SQL integer columns are signed 64-bit: a larger id names no entry and must not reach the driver.
EntryId = Annotated[int, Path(ge=0, le=2**63 - 1, description="Entry id")]


@feedback_router.post("/v1/deja/feedback")
async def feedback(
    body: Feedback, decisions: DecisionLogDep, namespace: NamespaceDep, rt: RuntimeDep
) -> dict[str, Any]:
    """An application's verdict on a served answer; the same request twice keeps the latest."""
    decision = await run_in_threadpool(decisions.get, body.request_id)
    # Another tenant's id is as unknown as a bad one.
    if decision is None or namespace is None or decision.namespace != namespace:
        raise NotFound(f"No semantic decision with request_id {body.request_id!r}.")
    label = Label(body.request_id, LabelSource.FEEDBACK, body.correct, rt.clock(), body.detail)
    await run_in_threadpool(decisions.label, label)
    await run_in_threadpool(teach, rt, decision, body.correct)
    return {"request_id": body.request_id, "recorded": True}


@admin_router.get("/stats")
async def stats(rt: RuntimeDep) -> dict[str, Any]:
    """The store and the thresholds, and per (namespace, API, model) on this replica since it started: what hits
    saved and labelling spent, by token kind and in USD ("no price" for a model the price table lacks), and the
    share of forwarded input the provider's prompt cache served."""
    found = await run_in_threadpool(rt.stats)
    return {**found, "savings": [row_json(row) for row in rt.ledger.rows()]}


@admin_router.get("/reuse")
async def reuse(rt: RuntimeDep) -> dict[str, Any]:
    """What stops reuse, per namespace, from the shapes of the requests this replica saw: system prompts that
    vary only by a volatile span, tool lists sent in several orders, sampling parameters split across values, one
    system prompt sent to several models; each with the share of requests affected and the fix. A report only."""
    report = await run_in_threadpool(rt.reuse.report)
    return {"namespaces": [{"namespace": ns.namespace, "requests": ns.requests,
                            "findings": [{"obstacle": f.obstacle.value, "requests": f.requests,
                                          "share": round(f.share, 6), "variants": f.variants, "where": f.where,
                                          "fix": f.fix} for f in ns.findings]} for ns in report]}


@admin_router.get("/budget")
async def budget(rt: RuntimeDep) -> BudgetReport:
    """The false-hit budget on this deployment's traffic: the tallies per (namespace, API) and the learner's
    statistic per namespace and kind, as the last upkeep pass stored them (a read computes nothing)."""
    return await run_in_threadpool(lambda: rt.budget.report(rt.threshold_keeper.view()))


@admin_router.get("/budget/evidence")
async def budget_evidence(rt: RuntimeDep) -> Evidence:
    """The remembered differences with the counts behind each (wrong and right label weights, decayed; whether it
    vetoes) and the decisions it changed, and the latest moves of the learned thresholds, as last synced."""
    return await run_in_threadpool(lambda: rt.budget.evidence(rt.threshold_keeper.moves()))


@admin_router.get("/entries/{entry_id}")
async def get_entry(entry_id: EntryId, entries: EntryStoreDep, index: IndexDep) -> dict[str, Any]:
    entry = await run_in_threadpool(entries.get, entry_id)
    if entry is None:
        raise NotFound(f"No entry {entry_id}.")
    return {"id": entry.entry_id, "namespace": entry.namespace, "model": entry.model, "prompt": entry.prompt,
            "response": entry.response, "created_at": entry.created_at, "expires_at": entry.expires_at,
            "hits": entry.hits, "indexed": entry.entry_id in index,
            "usage": None if entry.usage is None else {kind.value: n for kind, n in entry.usage.by_kind().items()}}


@admin_router.delete("/entries/{entry_id}")
async def delete_entry(entry_id: EntryId, forgetting: ForgettingDep) -> dict[str, Any]:
    """Delete an entry, and forget the logged decisions that offered it or asked its prompt."""
    if await run_in_threadpool(forgetting.delete, [entry_id]) == 0:
        raise NotFound(f"No entry {entry_id}.")
    return {"deleted": 1}


@admin_router.post("/invalidate")
async def invalidate(body: Invalidate, forgetting: ForgettingDep, rt: RuntimeDep) -> dict[str, Any]:
    """Delete a namespace's and/or model's entries, and forget their decisions (labels keep hashes and numbers)."""
    namespace = body.namespace or (namespace_for(body.api_key, rt.secret) if body.api_key else None)
    if namespace is None and body.model is None:
        raise NotFound("Give a namespace, an api_key or a model (use /deja/flush to drop everything).")
    deleted = await run_in_threadpool(forgetting.invalidate, namespace, body.model)
    return {"deleted": deleted}


@admin_router.post("/flush")
async def flush(forgetting: ForgettingDep) -> dict[str, Any]:
    """Delete every entry and forget every decision (labels keep hashes and numbers)."""
    deleted = await run_in_threadpool(forgetting.invalidate, None, None)
    return {"deleted": deleted}
