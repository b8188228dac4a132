"""Through the gateway: Unicode spellings and number spellings of one request share an entry, the caller's bytes
go upstream unchanged, and a word changed by its accent is never served for the other (in-process gateway)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.inprocess import CHAT, inprocess_gateway

pytestmark = pytest.mark.asyncio
AUTH = {"Authorization": "Bearer sk-test"}


async def test_nfd_and_invisible_characters_hit_the_nfc_entry_and_go_upstream_unchanged(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path) as gw:
        first = await gw.chat("Where is the caf\u00e9 near the station?")
        assert first.headers["x-deja-cache"] == "miss"
        hit = await gw.chat("Where is the cafe\u0301 near\u00a0the\u200b station?")
        assert hit.headers["x-deja-cache"] == "hit-exact"
        await gw.chat("Where is the cafe\u0301 near\u00a0the\u200b station on Sundays?")  # a miss: forwarded
        sent = json.loads(gw.upstream.requests[-1].content)["messages"][0]["content"]
        assert sent == "Where is the cafe\u0301 near\u00a0the\u200b station on Sundays?"


async def test_number_spellings_share_an_entry(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path) as gw:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What is DNS?"}]}
        first = await gw.client.post(CHAT, json={**body, "temperature": 0, "top_p": 1, "max_tokens": 100},
                                     headers=AUTH)
        again = await gw.client.post(CHAT, json={**body, "temperature": 0.0, "top_p": 1.0, "max_tokens": 100.0},
                                     headers=AUTH)
        assert (first.headers["x-deja-cache"], again.headers["x-deja-cache"]) == ("miss", "hit-exact")


async def test_word_changed_by_its_accent_is_not_served(tmp_path: Path) -> None:
    # Threshold mode, where the lexical embedder puts the pair above the threshold; judge mode's veto is tested
    # with the shipped judge and a control candidate in tests/unit/index/guards/test_safety.py.
    async with inprocess_gateway(tmp_path, decision="threshold") as gw:
        await gw.chat("how long should i rest the pate dough before rolling it out")
        changed = await gw.chat("how long should i rest the p\u00e2t\u00e9 dough before rolling it out")
        assert changed.headers["x-deja-cache"] == "miss"
        assert gw.upstream.chat_calls == 2
        assert changed.headers["x-deja-veto"] == "accents"
        assert float(changed.headers["x-deja-similarity"]) >= 0.9
