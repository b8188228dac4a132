"""One namespace's heavy requests cannot hold every worker: beyond its share (DEJA_HEAVY_REQUESTS_PER_NAMESPACE),
while another namespace is active, a semantic lookup is matched exactly only and a large body gets 429 with
Retry-After in the API's own error shape; a namespace alone is never limited (in-process gateway, an embedder
held shut to keep requests in flight)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from service.fairness import LARGE_BODY_BYTES, RECENT_SECONDS, NamespaceGate
from support.inprocess import CHAT, InProcessGateway, inprocess_gateway
from tests.unit.service.test_overload import Gate, until

LONG = "background " * (LARGE_BODY_BYTES // 10)  # makes the body large (and the prompt exact-only)


def long_prompt(question: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": LONG + question}]}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_gate_limits_a_namespace_only_while_another_is_present() -> None:
    clock = Clock()
    gate = NamespaceGate(2, clock)
    with gate.enter("a") as one, gate.enter("a") as two, gate.enter("a") as alone:
        assert (one, two, alone) == (True, True, True)  # nobody else is here: nothing to share
    with gate.active("b"), gate.enter("a") as one, gate.enter("a") as two, gate.enter("a") as three:
        assert (one, two, three) == (True, True, False)
        with gate.enter("b") as other:
            assert other
    assert gate.in_flight("a") == gate.in_flight("b") == 0
    assert gate.contended("a")  # b's last request ended just now: it will be back
    clock.now += RECENT_SECONDS
    assert not gate.contended("a")


async def _hold_lookups(gw: InProcessGateway, *keys: str) -> tuple[Gate, list[asyncio.Task[httpx.Response]]]:
    """One semantic lookup per key, each held inside the (shut) embedder."""
    assert (await gw.chat("what is the capital of germany")).status_code == 200  # the scope is not empty
    gate = Gate(gw.runtime.embedder.inner)
    gw.runtime.embedder.inner = gate
    held = [asyncio.create_task(gw.chat("what is the capital of france", key=keys[0]))]
    await until(gate.entered.is_set)
    for n, key in enumerate(keys[1:], start=1):
        held.append(asyncio.create_task(gw.chat(f"what is the capital of france, question {n}", key=key)))
        await until(lambda n=n: gw.runtime.embedder.queued() == n)  # type: ignore[misc]
    return gate, held


@pytest.mark.asyncio
async def test_namespace_over_its_share_is_matched_exactly_while_another_is_served(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, heavy_requests_per_namespace=1) as gw:
        gate, held = await _hold_lookups(gw, "sk-test", "sk-other")  # both admitted: one slot each
        try:
            busy = await gw.chat("what is the capital of spain")
            assert busy.status_code == 200 and busy.headers["x-deja-cache"] == "miss"
            assert busy.headers["x-deja-policy"] == "exact_only: namespace busy"
        finally:
            gate.open.set()
        answers = [await task for task in held]
        assert [a.status_code for a in answers] == [200, 200]
        assert not [a for a in answers if "x-deja-policy" in a.headers]


@pytest.mark.asyncio
async def test_namespace_alone_is_not_limited(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, heavy_requests_per_namespace=1) as gw:
        gate, held = await _hold_lookups(gw, "sk-test", "sk-test")  # the second one was admitted too
        gate.open.set()
        answers = [await task for task in held]
        assert not [a for a in answers if "x-deja-policy" in a.headers]


@pytest.mark.asyncio
async def test_large_body_over_the_share_is_a_429_with_retry_after(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, heavy_requests_per_namespace=1) as gw:
        gate, held = await _hold_lookups(gw, "sk-test", "sk-other")
        try:
            auth = {"Authorization": "Bearer sk-test"}
            refused = await gw.client.post(CHAT, json=long_prompt("and of italy?"), headers=auth)
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["type"] == "rate_limit_error"
            claude = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
            anthropic = await gw.client.post("/v1/messages", headers=claude,
                                             json={**long_prompt("and of italy?"), "max_tokens": 8})
            assert anthropic.status_code == 429
            assert anthropic.json() == {"type": "error", "error": {"type": "rate_limit_error",
                                                                   "message": anthropic.json()["error"]["message"]}}
            third = await gw.client.post(CHAT, json=long_prompt("and of italy?"),
                                         headers={"Authorization": "Bearer sk-third"})
            assert third.status_code == 200
        finally:
            gate.open.set()
        assert [(await task).status_code for task in held] == [200, 200]
