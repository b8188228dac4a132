"""The labeling page `/deja/label` and its JSON API: an admin walks through pending semantic decisions (the
request's prompt against the cached one, with the cached answer) and records HUMAN labels, the labels that
`eval sweep --traffic` ranks above feedback, audits and shadows."""

from __future__ import annotations

import secrets
from functools import cache
from importlib.resources import files
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from index.records import StoredEntry
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource
from index.storage.entries import EntryStore
from service.admin_auth import SESSION_COOKIE, csrf_token, is_admin_token, new_session
from service.deps import DecisionLogDep, EntryStoreDep, RuntimeDep, require_admin
from service.dialects import dialect_named
from service.errors import NotFound, Unauthorized
from service.evidence import teach
from service.json_input import JsonBodyRoute

PAGE_PATH = "/deja/label"
COOKIE = SESSION_COOKIE
# Pending decisions counted per refresh; past this the page says "1000+" instead of counting the whole log.
COUNT_CAP = 1000


class StageView(BaseModel):
    stage: str
    passed: bool
    reason: str
    score: float | None


class PendingDecision(BaseModel):
    """One decision as the page shows it: the two prompts side by side and what each would be answered."""

    request_id: str
    created_at: float
    model: str
    api: str  # the API the request spoke: chat, messages, responses
    namespace: str
    verdict: str
    similarity: float
    min_similarity: float
    reason: str  # `hit`, `below_threshold`, `context_below_threshold` or `vetoed`
    vetoed_by: str | None  # the vetoing stage, for vetoes only
    prompt: str
    candidate_prompt: str | None
    entry_id: int | None
    cached_answer: str | None  # None when the entry is gone (evicted or invalidated)
    stages: list[StageView]


class Progress(BaseModel):
    labelled: int  # human labels recorded
    pending: int  # decisions with a candidate and no human label, counted up to COUNT_CAP
    pending_capped: bool  # True when there are more than `pending`
    total: int


class PendingPage(BaseModel):
    items: list[PendingDecision]
    progress: Progress


class HumanLabel(BaseModel):
    request_id: str
    same: bool  # would the cached answer have been right for this request?


class Recorded(BaseModel):
    request_id: str
    same: bool
    recorded: bool


@cache
def _page_template() -> str:
    return files("service").joinpath("static/label.html").read_text(encoding="utf-8")


def _view(decision: DecisionRecord, entry: StoredEntry | None) -> PendingDecision:
    return PendingDecision(
        request_id=decision.request_id, created_at=decision.created_at, model=decision.model, api=decision.api,
        namespace=decision.namespace, verdict=decision.verdict, similarity=decision.similarity,
        min_similarity=decision.min_similarity, reason=decision.reason.value, vetoed_by=decision.vetoed_by,
        prompt=decision.prompt, candidate_prompt=decision.candidate_prompt, entry_id=decision.entry_id,
        cached_answer=None if entry is None else dialect_named(decision.api).answer_text(entry.response),
        stages=[StageView(stage=s.stage, passed=s.passed, reason=s.reason, score=s.score) for s in decision.stages],
    )


def _pending_page(decisions: DecisionLog, store: EntryStore, limit: int) -> PendingPage:
    """Runs in a worker thread: reads pending decisions and their cached entries."""
    pending = decisions.pending(COUNT_CAP + 1)
    labelled = sum(decisions.label_counts().get(LabelSource.HUMAN.value, {}).values())
    entries: dict[int, StoredEntry | None] = {}
    items = []
    for decision in pending[:limit]:
        entry_id = decision.entry_id
        if entry_id is not None and entry_id not in entries:
            entries[entry_id] = store.get(entry_id)
        items.append(_view(decision, None if entry_id is None else entries[entry_id]))
    shown = min(len(pending), COUNT_CAP)
    progress = Progress(labelled=labelled, pending=shown, pending_capped=len(pending) > COUNT_CAP,
                        total=labelled + shown)
    return PendingPage(items=items, progress=progress)


def _record(decisions: DecisionLog, label: Label) -> DecisionRecord:
    decision = decisions.get(label.request_id)
    if decision is None:
        raise NotFound(f"No semantic decision with request_id {label.request_id!r}.")
    decisions.label(label)
    return decision


api_router = APIRouter(prefix="/deja/api", dependencies=[Depends(require_admin)], route_class=JsonBodyRoute)
label_router = APIRouter()


@label_router.get(PAGE_PATH, include_in_schema=False)
async def label_page(request: Request, rt: RuntimeDep, token: str | None = None) -> Response:
    """`?token=` trades the admin token for a session cookie (HttpOnly, SameSite=Strict, never the token) and
    redirects, so the token leaves the address and the history; without it the page needs the session (or a bearer
    header). The page carries its session's CSRF token, which its script sends with every label."""
    settings = rt.settings
    if token is not None:
        if not is_admin_token(settings, token):
            raise Unauthorized("A valid admin token is required.")
        redirect = RedirectResponse(PAGE_PATH, status_code=303, headers={"Cache-Control": "no-store"})
        redirect.set_cookie(COOKIE, new_session(settings, rt.clock()), max_age=int(settings.admin_session_seconds),
                            path="/deja", httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return redirect
    require_admin(request, rt)
    session = request.cookies.get(COOKIE)
    csrf = csrf_token(settings, session) if session else ""
    # Prompts are user text: the page only ever sets textContent, and the CSP admits our inline code alone.
    nonce = secrets.token_urlsafe(18)
    csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    html = (await run_in_threadpool(_page_template)).replace("{{nonce}}", nonce).replace("{{csrf}}", csrf)
    return HTMLResponse(html, headers={"Content-Security-Policy": csp, "Cache-Control": "no-store",
                                       "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"})


@api_router.get("/pending")
async def pending(
    decisions: DecisionLogDep, store: EntryStoreDep, limit: Annotated[int, Query(ge=1, le=200)] = 20
) -> PendingPage:
    """Decisions with a candidate and no human label yet, newest first, and the labelling progress."""
    return await run_in_threadpool(_pending_page, decisions, store, limit)


@api_router.post("/label")
async def label(body: HumanLabel, decisions: DecisionLogDep, rt: RuntimeDep) -> Recorded:
    """Record a human label; labelling the same decision again keeps the latest."""
    decision = await run_in_threadpool(_record, decisions,
                                       Label(body.request_id, LabelSource.HUMAN, body.same, rt.clock()))
    await run_in_threadpool(teach, rt, decision, body.same)
    return Recorded(request_id=body.request_id, same=body.same, recorded=True)


label_router.include_router(api_router)
