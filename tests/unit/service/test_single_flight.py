"""Single-flight: identical requests arriving while one is upstream share its one upstream call. The flights on
their own, then through the in-process gateway with an upstream held open until every request has arrived."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from service.single_flight import SharedAnswer, SingleFlight
from support.inprocess import InProcessGateway, inprocess_gateway

BURST = 20
MESSAGES, RESPONSES = "/v1/messages", "/v1/responses"
CLAUDE = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
GPT = {"Authorization": "Bearer sk-test"}


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_settled_flight_is_gone_and_a_stale_one_is_replaced() -> None:
    clock = Ticks()
    flights = SingleFlight(max_age=10, clock=clock)
    first = flights.lead("k")
    assert flights.follow("k") is first and flights.follow("other") is None
    first.settle(SharedAnswer({"a": 1}, 7))
    first.settle(None)  # the leader's clean-up path after a shared answer changes nothing
    assert flights.follow("k") is None and len(flights) == 0
    flights.lead("k")
    clock.now = 11  # its leader never settled (a stream whose client left before the first byte)
    assert flights.follow("k") is None and len(flights) == 0


@pytest.mark.asyncio
async def test_followers_get_the_leaders_answer_and_none_when_it_has_none() -> None:
    flights = SingleFlight(max_age=10)
    flight = flights.lead("k")
    waiter = asyncio.ensure_future(flight.wait(5))
    await asyncio.sleep(0)
    assert flights.waiting == 1
    flight.settle(SharedAnswer({"a": 1}, None))
    assert await waiter == SharedAnswer({"a": 1}, None)
    failed = flights.lead("k")
    waiter = asyncio.ensure_future(failed.wait(5))
    failed.settle(None)
    assert await waiter is None


@pytest.mark.asyncio
async def test_a_follower_stops_waiting_at_its_timeout() -> None:
    flight = SingleFlight(max_age=10).lead("k")
    with pytest.raises(TimeoutError):
        await flight.wait(0)


@pytest_asyncio.fixture
async def gw(tmp_path: Path) -> AsyncIterator[InProcessGateway]:
    async with inprocess_gateway(tmp_path) as gateway:
        yield gateway


async def burst(gw: InProcessGateway, send: Callable[[], Awaitable[httpx.Response]],
                arrived: Callable[[InProcessGateway], bool] | None = None) -> list[httpx.Response]:
    """`BURST` identical requests at once; the upstream answers once all have `arrived` (by default: all but the
    first wait on it)."""
    arrived = arrived or (lambda gw: gw.gateway.flights.waiting >= BURST - 1)
    gw.upstream.gate = asyncio.Event()
    tasks = [asyncio.ensure_future(send()) for _ in range(BURST)]
    for _ in range(2000):  # each turn lets the requests move on; lookups run on the thread pool
        if arrived(gw) or all(t.done() for t in tasks):
            break
        await asyncio.sleep(0.005)
    gw.upstream.gate.set()
    return list(await asyncio.gather(*tasks))


def verdicts(responses: list[httpx.Response]) -> list[str]:
    return sorted(r.headers["x-deja-cache"] for r in responses)


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_burst_of_identical_chat_requests_makes_one_upstream_call(gw: InProcessGateway,
                                                                           stream: bool) -> None:
    responses = await burst(gw, lambda: gw.chat("what is the capital of peru", stream=stream))
    assert gw.upstream.chat_calls == 1
    assert verdicts(responses) == ["hit-coalesced"] * (BURST - 1) + ["miss"]
    assert all(r.status_code == 200 for r in responses)
    if stream:
        texts = {sse_text(r.text) for r in responses}
    else:
        texts = {r.json()["choices"][0]["message"]["content"] for r in responses}
        assert len({r.json()["id"] for r in responses}) == BURST  # each its own id, as a hit gets
    assert texts == {"answer 1 to: what is the capital of peru"}
    # a streamed miss sends its headers before its answer is stored: only the followers name the entry
    assert len({r.headers["x-deja-entry"] for r in responses if r.headers["x-deja-cache"] != "miss"}) == 1
    assert await gw.metric('deja_requests_total{api="chat",verdict="hit-coalesced"}') == BURST - 1
    if not stream:  # each follower saved a call of the stub's 10 input and 5 output tokens (a stream reports none)
        [saved] = gw.runtime.ledger.rows()
        assert (saved.hits, saved.saved.input_tokens, saved.saved.output_tokens) == (BURST - 1, 10 * (BURST - 1),
                                                                                     5 * (BURST - 1))
    assert (await gw.chat("what is the capital of peru")).headers["x-deja-cache"] == "hit-exact"


def sse_text(body: str) -> str:
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))


@pytest.mark.asyncio
@pytest.mark.parametrize("path", [MESSAGES, RESPONSES], ids=["messages", "responses"])
async def test_a_burst_on_the_other_apis_makes_one_upstream_call(gw: InProcessGateway, path: str) -> None:
    body: dict[str, Any]
    if path == MESSAGES:
        body = {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": "why is sky blue"}]}
        headers = CLAUDE
    else:
        body, headers = {"model": "gpt-test", "input": "why is the sky blue"}, GPT
    responses = await burst(gw, lambda: gw.client.post(path, json=body, headers=headers))
    assert gw.upstream.calls_to(path) == 1
    assert verdicts(responses) == ["hit-coalesced"] * (BURST - 1) + ["miss"]
    assert all(r.status_code == 200 and "answer 1 to: why is" in r.text for r in responses)


@pytest.mark.asyncio
async def test_an_upstream_error_is_not_shared_the_followers_go_upstream_themselves(gw: InProcessGateway) -> None:
    gw.upstream.failures.append("500")
    responses = await burst(gw, lambda: gw.chat("what is the capital of chile"))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * (BURST - 1) + [500]
    assert "hit-coalesced" not in verdicts(responses)
    assert gw.upstream.chat_calls == BURST


@pytest.mark.asyncio
@pytest.mark.parametrize("directive", ["no-cache", "no-store", "max-age=0"])
async def test_cache_control_opts_out_of_coalescing(gw: InProcessGateway, directive: str) -> None:
    responses = await burst(gw, lambda: gw.chat("what is the capital of bolivia",
                                                headers={"Cache-Control": directive}),
                             arrived=lambda gw: len(gw.upstream.requests) >= BURST)
    assert gw.upstream.chat_calls == BURST and "hit-coalesced" not in verdicts(responses)


@pytest.mark.asyncio
async def test_a_follower_that_waits_past_its_timeout_gets_a_504(tmp_path: Path) -> None:
    # The timeout is the upstream read timeout, shortened so the follower gives up while the leader is held.
    async with inprocess_gateway(tmp_path, upstream_read_timeout=0.2) as gw:
        gw.upstream.gate = asyncio.Event()
        leader = asyncio.ensure_future(gw.chat("what is the capital of ecuador"))
        for _ in range(2000):
            if len(gw.gateway.flights) == 1:  # the leader is upstream
                break
            await asyncio.sleep(0.005)
        follower = await gw.chat("what is the capital of ecuador")
        gw.upstream.gate.set()
        assert (follower.status_code, follower.headers["x-deja-cache"]) == (504, "error")
        assert "identical request in flight" in follower.json()["error"]["message"]
        assert (await leader).headers["x-deja-cache"] == "miss" and gw.upstream.chat_calls == 1
