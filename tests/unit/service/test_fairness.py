"""One namespace's heavy requests cannot hold every worker: beyond its share (DEJA_HEAVY_REQUESTS_PER_NAMESPACE) a
semantic lookup is matched exactly only, and a large body gets 429 with Retry-After in the API's own error shape,
while other namespaces go on as usual (in-process gateway, an embedder held shut to keep requests in flight)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from service.fairness import LARGE_BODY_BYTES, NamespaceGate
from support.inprocess import CHAT, InProcessGateway, inprocess_gateway
from tests.unit.service.test_overload import Gate, until

LONG = "background " * (LARGE_BODY_BYTES // 10)  # makes the body large (and the prompt exact-only)


def long_prompt(question: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": LONG + question}]}


def test_gate_admits_up_to_its_limit_per_namespace_and_forgets_idle_ones() -> None:
    gate = NamespaceGate(2)
    with gate.enter("a") as one, gate.enter("a") as two, gate.enter("a") as three, gate.enter("b") as other:
        assert (one, two, three, other) == (True, True, False, True)
        assert gate.in_flight("a") == 2
    assert gate.in_flight("a") == gate.in_flight("b") == 0


async def _hold_one_lookup(gw: InProcessGateway) -> tuple[Gate, asyncio.Task[object]]:
    assert (await gw.chat("what is the capital of germany")).status_code == 200  # the scope is not empty
    gate = Gate(gw.runtime.embedder.inner)
    gw.runtime.embedder.inner = gate
    held: asyncio.Task[object] = asyncio.create_task(gw.chat("what is the capital of france"))
    await until(gate.entered.is_set)
    return gate, held


@pytest.mark.asyncio
async def test_namespace_over_its_share_is_matched_exactly_while_others_embed(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, heavy_requests_per_namespace=1) as gw:
        gate, held = await _hold_one_lookup(gw)
        try:
            busy = await gw.chat("what is the capital of spain")
            assert busy.status_code == 200 and busy.headers["x-deja-cache"] == "miss"
            assert busy.headers["x-deja-policy"] == "exact_only: namespace busy"
            other = asyncio.create_task(gw.chat("what is the capital of spain", key="sk-other"))
            await until(lambda: gw.runtime.embedder.queued() == 1)  # admitted: waiting for the embedder
        finally:
            gate.open.set()
        assert (await held).status_code == 200  # type: ignore[attr-defined]
        assert "x-deja-policy" not in (await other).headers


@pytest.mark.asyncio
async def test_large_body_over_the_share_is_a_429_with_retry_after(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, heavy_requests_per_namespace=1) as gw:
        gate, held = await _hold_one_lookup(gw)
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
            other = await gw.client.post(CHAT, json=long_prompt("and of italy?"),
                                         headers={"Authorization": "Bearer sk-other"})
            assert other.status_code == 200
        finally:
            gate.open.set()
        assert (await held).status_code == 200  # type: ignore[attr-defined]
