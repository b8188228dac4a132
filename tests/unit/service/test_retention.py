"""The upkeep loop forgets on schedule: a tick after the retention period forgets what the settings say."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from index.forgetting import DAY_SECONDS
from support.inprocess import ADMIN_TOKEN, inprocess_gateway

pytestmark = pytest.mark.asyncio

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PROMPT = "how do i reset my password"
PARAPHRASE = "how do i reset my password please"


async def pending_prompts(client: httpx.AsyncClient) -> list[str]:
    response = await client.get("/deja/api/pending", headers=ADMIN)
    return [d["prompt"] for d in response.json()["items"]]


async def test_an_upkeep_tick_past_the_retention_forgets_old_decisions(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, decision_log_days=2, label_days=5, tombstone_days=1) as gw:
        await gw.chat(PROMPT)
        assert (await gw.chat(PARAPHRASE)).headers["x-deja-cache"] == "hit-semantic"
        assert await pending_prompts(gw.client) == [PARAPHRASE]
        gw.clock.now += 1 * DAY_SECONDS
        await asyncio.to_thread(gw.runtime.tick, True)
        assert await pending_prompts(gw.client) == [PARAPHRASE]  # younger than 2 days: kept
        gw.clock.now += 1.5 * DAY_SECONDS
        await asyncio.to_thread(gw.runtime.tick, True)
        assert await pending_prompts(gw.client) == []
        assert gw.runtime.decisions.pending() == [] and gw.runtime.decisions.labeled() == []
