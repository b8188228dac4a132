"""What each stage of a request took, as the gateway tells the caller (`Server-Timing`) and as `bench.hit_cost`
reads it; and that an exact hit in the in-process tier takes the short path (no thread, no semantic lookup)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from bench.hit_cost import stages
from service.observer import server_timing
from support.inprocess import InProcessGateway, inprocess_gateway

pytestmark = pytest.mark.asyncio

PROMPT = "how do i reset my password"
PARAPHRASE = "how do i reset my password please"


@pytest_asyncio.fixture
async def gw(tmp_path: Path) -> AsyncIterator[InProcessGateway]:
    async with inprocess_gateway(tmp_path) as gateway:
        yield gateway


async def test_the_header_reads_back_as_written() -> None:
    header = server_timing({"parse": 0.0411, "key": 0.012, "total": 1.5})
    assert header == "parse;dur=0.041, key;dur=0.012, total;dur=1.500"
    assert stages(header) == {"parse": 0.041, "key": 0.012, "total": 1.5}


def _disjoint_within_total(timed: dict[str, float]) -> bool:
    """The stages are consecutive stretches of the request: together they fit in its total."""
    parts = sum(ms for stage, ms in timed.items() if stage != "total")
    return all(ms >= 0 for ms in timed.values()) and parts <= timed["total"] + 1e-3


async def test_an_exact_hit_names_its_stages_and_never_reaches_the_semantic_tier(gw: InProcessGateway,
                                                                                 monkeypatch: pytest.MonkeyPatch
                                                                                 ) -> None:
    await gw.chat(PROMPT)

    def no_lookup(*_: object, **__: object) -> None:
        raise AssertionError("an exact hit in the in-process tier went to Cache.lookup")

    monkeypatch.setattr(gw.runtime.cache, "lookup", no_lookup)
    again = await gw.chat(PROMPT)
    assert again.headers["x-deja-cache"] == "hit-exact"
    timed = stages(again.headers["server-timing"])
    assert set(timed) == {"auth", "parse", "key", "exact", "log", "respond", "total"}
    assert _disjoint_within_total(timed)


async def test_a_semantic_hit_names_the_embedding_the_search_and_the_decision(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    hit = await gw.chat(PARAPHRASE)
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    timed = stages(hit.headers["server-timing"])
    assert {"auth", "parse", "key", "exact", "pool", "embed", "search", "fetch", "decide", "log", "respond",
            "total"} <= set(timed)
    assert _disjoint_within_total(timed)


async def test_a_miss_names_the_lookups_stages_before_the_upstream_call(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    miss = await gw.chat("what is the capital city of peru")
    assert miss.headers["x-deja-cache"] == "miss"
    timed = stages(miss.headers["server-timing"])
    assert {"auth", "parse", "key", "exact", "embed", "search", "log"} <= set(timed)
    assert "respond" not in timed and all(ms >= 0 for ms in timed.values())
