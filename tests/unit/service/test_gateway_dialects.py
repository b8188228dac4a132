"""Anthropic Messages and OpenAI Responses through the in-process gateway (ASGI app, `MockTransport` upstreams,
lexical embedder): the same pipeline as chat, in each API's own shapes. The SDK-level tests are in
tests/integration/test_dialects.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from support.inprocess import ADMIN_TOKEN, InProcessGateway, inprocess_gateway

pytestmark = pytest.mark.asyncio

MESSAGES, RESPONSES = "/v1/messages", "/v1/responses"
# Under the lexical embedder these share 6 of 7 words: cosine 0.926, above the default 0.90.
PROMPT = "how do i reset my password"
PARAPHRASE = "how do i reset my password please"
CLAUDE = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
GPT = {"Authorization": "Bearer sk-test"}


@pytest_asyncio.fixture
async def gw(tmp_path: Path) -> AsyncIterator[InProcessGateway]:
    async with inprocess_gateway(tmp_path) as gateway:
        yield gateway


async def claude(gw: InProcessGateway, text: str, headers: dict[str, str] | None = None,
                 **extra: Any) -> httpx.Response:
    body = {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": text}], **extra}
    return await gw.client.post(MESSAGES, json=body, headers={**CLAUDE, **(headers or {})})


async def gpt(gw: InProcessGateway, text: str, headers: dict[str, str] | None = None, **extra: Any) -> httpx.Response:
    return await gw.client.post(RESPONSES, json={"model": "gpt-test", "input": text, **extra},
                                headers={**GPT, **(headers or {})})


def events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of every server-sent event."""
    found = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            found.append((lines.get("event", ""), json.loads(lines["data"])))
    return found


def verdict(response: httpx.Response) -> str:
    return response.headers["x-deja-cache"]


async def test_messages_repeat_and_paraphrase_hit_in_anthropics_shape(gw: InProcessGateway) -> None:
    first = await claude(gw, PROMPT)
    again, para = await claude(gw, PROMPT), await claude(gw, PARAPHRASE)
    assert [verdict(r) for r in (first, again, para)] == ["miss", "hit-exact", "hit-semantic"]
    assert again.json()["content"] == para.json()["content"] == first.json()["content"]
    assert again.json()["type"] == "message" and again.json()["id"].startswith("msg_deja_")
    assert gw.upstream.calls_to(MESSAGES) == 1 and gw.upstream.chat_calls == 0


async def test_messages_stream_is_relayed_then_replayed_event_by_event(gw: InProcessGateway) -> None:
    relayed = await claude(gw, PROMPT, stream=True)
    replayed = await claude(gw, PROMPT, stream=True)
    assert (verdict(relayed), verdict(replayed)) == ("miss", "hit-exact")
    names = [name for name, _ in events(replayed)]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(names)

    def text(response: httpx.Response) -> str:
        return "".join(d["delta"].get("text", "") for n, d in events(response) if n == "content_block_delta")

    assert text(replayed) == text(relayed) == f"answer 1 to: {PROMPT}"


@pytest.mark.parametrize("failure", ["500", "unfinished", "truncate"])
async def test_messages_failed_or_unfinished_answers_are_not_stored(gw: InProcessGateway, failure: str) -> None:
    gw.upstream.failures.append(failure)
    failed = await claude(gw, PROMPT)
    if failure == "truncate":  # a broken 200 is Deja's own 502, in Anthropic's shape
        assert failed.status_code == 502 and failed.json()["type"] == "error"
    assert verdict(await claude(gw, PROMPT)) == "miss"


@pytest.mark.parametrize("failure", ["cut", "no-done"])
async def test_messages_cut_stream_ends_with_an_anthropic_error_event_and_is_not_stored(
        gw: InProcessGateway, failure: str) -> None:
    gw.upstream.failures.append(failure)
    cut = await claude(gw, PROMPT, stream=True)
    name, data = events(cut)[-1]
    assert (name, data["type"]) == ("error", "error") and data["error"]["type"] == "api_error"
    assert verdict(await claude(gw, PROMPT)) == "miss"


async def test_messages_bad_input_and_unknown_routes_answer_in_anthropics_shape(gw: InProcessGateway) -> None:
    bad = await gw.client.post(MESSAGES, json={"model": "m", "messages": []}, headers=CLAUDE)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert bad.json()["type"] == "error" and gw.upstream.calls_to(MESSAGES) == 0
    control = await gw.client.get(MESSAGES + "/batches%07", headers=CLAUDE)  # refused before any upstream call
    assert control.status_code == 400 and control.json()["type"] == "error"
    assert control.headers["x-deja-cache"] == "error"


async def test_anthropic_routes_pass_through_to_the_anthropic_upstream(gw: InProcessGateway) -> None:
    await gw.client.post(MESSAGES + "/count_tokens", json={"model": "m", "messages": []}, headers=CLAUDE)
    await gw.client.get("/v1/models", headers=CLAUDE)
    await gw.client.get("/v1/models", headers=GPT)
    assert [r.url.host for r in gw.upstream.requests] == ["anthropic.test", "anthropic.test", "upstream.test"]


async def test_version_headers_are_forwarded_and_change_the_scope(gw: InProcessGateway) -> None:
    await claude(gw, PROMPT)
    other = await claude(gw, PROMPT, headers={"anthropic-beta": "some-beta-2025-01-01"})
    assert verdict(other) == "miss"
    assert gw.upstream.requests[-1].headers["anthropic-beta"] == "some-beta-2025-01-01"


async def test_answers_never_cross_apis(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    assert verdict(await claude(gw, PROMPT)) == "miss"
    assert verdict(await gpt(gw, PROMPT)) == "miss"


async def test_decisions_are_logged_with_their_api(gw: InProcessGateway) -> None:
    await claude(gw, PROMPT)
    hit = await claude(gw, PARAPHRASE)
    await gpt(gw, PROMPT)
    near = await gpt(gw, PARAPHRASE)
    gw.runtime.flush_decisions()
    apis = {r.headers["x-deja-request-id"]: gw.runtime.decisions.get(r.headers["x-deja-request-id"])
            for r in (hit, near)}
    assert [d.api if d else None for d in apis.values()] == ["messages", "responses"]
    assert await gw.metric('deja_requests_total{api="messages",verdict="hit-semantic"}') == 1


async def test_responses_hit_keeps_the_upstream_id_and_echoes_this_requests_metadata(gw: InProcessGateway) -> None:
    first = await gpt(gw, PROMPT, metadata={"run": "1"})
    again = await gpt(gw, PROMPT, metadata={"run": "2"}, store=True)
    assert (verdict(first), verdict(again)) == ("miss", "hit-exact")
    assert again.json()["id"] == first.json()["id"] and again.json()["metadata"] == {"run": "2"}


async def test_responses_stream_replay_numbers_its_events(gw: InProcessGateway) -> None:
    relayed = await gpt(gw, PROMPT, stream=True)
    replayed = await gpt(gw, PROMPT, stream=True)
    assert (verdict(relayed), verdict(replayed)) == ("miss", "hit-exact")
    found = events(replayed)
    assert [d["sequence_number"] for _, d in found] == list(range(len(found)))
    assert found[0][0] == "response.created" and found[-1][0] == "response.completed"
    deltas = "".join(d["delta"] for n, d in found if n == "response.output_text.delta")
    assert deltas == f"answer 1 to: {PROMPT}"


async def test_responses_chained_are_exact_only_and_conversations_bypass(gw: InProcessGateway) -> None:
    await gpt(gw, PROMPT, previous_response_id="resp_1")
    chained = await gpt(gw, PARAPHRASE, previous_response_id="resp_1")
    assert verdict(chained) == "miss" and chained.headers["x-deja-policy"] == "exact_only: previous_response_id"
    assert verdict(await gpt(gw, PROMPT, previous_response_id="resp_1")) == "hit-exact"
    for _ in range(2):
        assert verdict(await gpt(gw, PROMPT, conversation="conv_1")) == "bypass"


async def test_unstored_response_is_not_served_to_a_caller_that_wants_it_stored(gw: InProcessGateway) -> None:
    await gpt(gw, PROMPT, store=False)
    assert verdict(await gpt(gw, PROMPT, store=False)) == "hit-exact"
    assert verdict(await gpt(gw, PROMPT)) == "miss"  # its id would not resolve upstream
    assert verdict(await gpt(gw, PROMPT)) == "hit-exact"  # the stored one replaced it


@pytest.mark.parametrize("failure", ["unfinished", "cut"])
async def test_responses_incomplete_or_cut_are_not_stored(gw: InProcessGateway, failure: str) -> None:
    gw.upstream.failures.append(failure)
    first = await gpt(gw, PROMPT, stream=True)
    if failure == "cut":
        assert events(first)[-1][0] == "error"
    assert verdict(await gpt(gw, PROMPT)) == "miss"


async def test_responses_get_and_delete_pass_through(gw: InProcessGateway) -> None:
    await gw.client.get(RESPONSES + "/resp_1", headers=GPT)
    await gw.client.delete(RESPONSES + "/resp_1", headers=GPT)
    assert [(r.method, r.url.path, r.url.host) for r in gw.upstream.requests] == [
        ("GET", "/v1/responses/resp_1", "upstream.test"), ("DELETE", "/v1/responses/resp_1", "upstream.test")]


async def test_labelling_page_shows_the_cached_answer_of_any_api(gw: InProcessGateway) -> None:
    await claude(gw, PROMPT)
    await claude(gw, PARAPHRASE)
    gw.runtime.flush_decisions()
    page = await gw.client.get("/deja/api/pending", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    (item,) = page.json()["items"]
    assert (item["api"], item["cached_answer"]) == ("messages", f"answer 1 to: {PROMPT}")
