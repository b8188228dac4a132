"""The gateway in-process: the real app and pipeline through `httpx.ASGITransport`, an upstream behind
`MockTransport`, the lexical embedder, a SQLite file and a clock the test moves. No network, model or server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from support.inprocess import ADMIN_TOKEN, InProcessGateway, inprocess_gateway

pytestmark = pytest.mark.asyncio

# Under the lexical embedder these share 6 of 7 words: cosine 0.926, above the default 0.90.
PROMPT = "how do i reset my password"
PARAPHRASE = "how do i reset my password please"


@pytest_asyncio.fixture(params=["defaults"])
async def gw(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[InProcessGateway]:
    async with inprocess_gateway(tmp_path, **({} if request.param == "defaults" else {"decision": request.param})
                                 ) as gateway:
        yield gateway


def sse_text(body: str) -> str:
    """The assistant text carried by an SSE body."""
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))


async def test_repeat_is_an_exact_hit_with_a_fresh_id(gw: InProcessGateway) -> None:
    first = await gw.chat(PROMPT)
    again = await gw.chat(PROMPT)
    assert (first.headers["x-deja-cache"], again.headers["x-deja-cache"]) == ("miss", "hit-exact")
    assert again.json()["choices"] == first.json()["choices"] and again.json()["id"] != first.json()["id"]
    assert again.headers["x-deja-entry"] == first.headers["x-deja-entry"]
    assert gw.upstream.chat_calls == 1


async def test_paraphrase_is_a_semantic_hit(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    hit = await gw.chat(PARAPHRASE)
    assert hit.headers["x-deja-cache"] == "hit-semantic" and float(hit.headers["x-deja-similarity"]) >= 0.9
    assert hit.json()["choices"][0]["message"]["content"] == f"answer 1 to: {PROMPT}"
    assert gw.upstream.chat_calls == 1


async def test_another_tenant_never_gets_the_answer(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT, key="sk-a")
    other = await gw.chat(PROMPT, key="sk-b")
    assert other.headers["x-deja-cache"] == "miss" and gw.upstream.chat_calls == 2


# Threshold mode, for the tests of the cosine rule's own vetoes and threshold.
@pytest.mark.parametrize("gw", ["threshold"], indirect=True)
async def test_negated_prompt_is_vetoed_and_counted_as_a_veto(gw: InProcessGateway) -> None:
    await gw.chat("is the api rate limited")
    vetoed = await gw.chat("is the api not rate limited")
    assert (vetoed.headers["x-deja-cache"], vetoed.headers["x-deja-veto"]) == ("miss", "polarity")
    assert await gw.metric('deja_vetoes_total{stage="polarity"}') == 1
    assert await gw.metric('deja_semantic_misses_total{reason="vetoed"}') == 1


@pytest.mark.parametrize("gw", ["threshold"], indirect=True)
async def test_below_threshold_is_a_counted_miss_and_not_a_veto(gw: InProcessGateway) -> None:
    await gw.chat("what is the capital city of france")
    miss = await gw.chat("what is the capital city of peru today")
    assert (miss.headers["x-deja-cache"], miss.headers["x-deja-reason"]) == ("miss", "below_threshold")
    assert "x-deja-veto" not in miss.headers  # a miss below the threshold is not a veto
    assert await gw.metric('deja_semantic_misses_total{reason="below_threshold"}') == 1
    assert "deja_vetoes_total{" not in (await gw.client.get("/metrics")).text


async def test_miss_stores_the_answer_for_the_next_request(gw: InProcessGateway) -> None:
    miss = await gw.chat(PROMPT)
    entry = await gw.client.get(f"/deja/entries/{miss.headers['x-deja-entry']}",
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert entry.json()["prompt"] == PROMPT and entry.json()["indexed"] is True


async def test_stream_is_relayed_stored_and_replayed_as_a_stream(gw: InProcessGateway) -> None:
    relayed = await gw.chat(PROMPT, stream=True)
    assert relayed.headers["x-deja-cache"] == "miss" and relayed.headers["content-type"].startswith("text/event-stream")
    assert sse_text(relayed.text) == f"answer 1 to: {PROMPT}" and relayed.text.endswith("data: [DONE]\n\n")
    replayed = await gw.chat(PROMPT, stream=True)
    assert replayed.headers["x-deja-cache"] == "hit-exact" and sse_text(replayed.text) == sse_text(relayed.text)
    assert replayed.text.endswith("data: [DONE]\n\n") and gw.upstream.chat_calls == 1
    assert await gw.metric('deja_request_seconds_count{api="chat",verdict="miss"}') == 1  # a streamed request is timed


async def test_a_cut_stream_ends_with_an_error_event_and_is_not_stored(gw: InProcessGateway) -> None:
    gw.upstream.failures.append("cut")
    cut = await gw.chat(PROMPT, stream=True)
    assert cut.status_code == 200 and '"type": "upstream_error"' in cut.text and "[DONE]" not in cut.text
    assert (await gw.chat(PROMPT)).headers["x-deja-cache"] == "miss"


@pytest.mark.parametrize(("failure", "status", "kind"), [
    pytest.param("500", 500, "server_error", id="upstream-500-passes-through"),
    pytest.param("429", 429, "server_error", id="upstream-429-passes-through"),
    pytest.param("timeout", 504, "upstream_timeout", id="timeout-is-504"),
    pytest.param("unreachable", 502, "upstream_error", id="unreachable-is-502"),
])
async def test_upstream_failures_answer_in_openai_shape_and_are_not_stored(
    gw: InProcessGateway, failure: str, status: int, kind: str
) -> None:
    gw.upstream.failures.append(failure)
    failed = await gw.chat(PROMPT)
    assert (failed.status_code, failed.json()["error"]["type"]) == (status, kind)
    assert (await gw.chat(PROMPT)).headers["x-deja-cache"] == "miss"


async def test_no_store_bypasses_and_is_timed_as_a_bypass(gw: InProcessGateway) -> None:
    first = await gw.chat(PROMPT, headers={"Cache-Control": "no-store"})
    assert first.headers["x-deja-cache"] == "bypass"
    assert (await gw.chat(PROMPT)).headers["x-deja-cache"] == "miss"
    assert await gw.metric('deja_request_seconds_count{api="chat",verdict="bypass"}') == 1
    assert await gw.metric('deja_request_seconds_count{api="chat",verdict="miss"}') == 1


async def test_no_cache_skips_the_lookup_but_stores(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    fresh = await gw.chat(PROMPT, headers={"Cache-Control": "no-cache"})
    assert fresh.headers["x-deja-cache"] == "miss" and gw.upstream.chat_calls == 2


async def test_max_age_refuses_an_entry_older_than_asked(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    gw.clock.now += 120
    assert (await gw.chat(PROMPT, headers={"Cache-Control": "max-age=300"})).headers["x-deja-cache"] == "hit-exact"
    assert (await gw.chat(PROMPT, headers={"Cache-Control": "max-age=60"})).headers["x-deja-cache"] == "miss"


async def test_a_request_without_credential_is_not_cached(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT, key=None)
    assert (await gw.chat(PROMPT, key=None)).headers["x-deja-cache"] == "bypass"


@pytest.mark.parametrize(("body", "param"), [
    pytest.param(b"{not json", None, id="not-json"),
    pytest.param(b"[]", None, id="not-an-object"),
    pytest.param(b'{"model": "m"}', "messages", id="no-messages"),
])
async def test_bad_input_is_a_400_in_openai_shape(gw: InProcessGateway, body: bytes, param: str | None) -> None:
    response = await gw.client.post("/v1/chat/completions", content=body,
                                    headers={"Authorization": "Bearer sk-test", "Content-Type": "application/json"})
    assert (response.status_code, response.json()["error"]["type"]) == (400, "invalid_request_error")
    assert response.json()["error"]["param"] == param and gw.upstream.chat_calls == 0


async def test_too_large_a_body_is_a_413(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, max_body_bytes=2048) as gw:
        response = await gw.chat("x " * 2000)
        assert response.status_code == 413 and response.json()["error"]["type"] == "invalid_request_error"


async def test_bad_cache_control_is_a_400(gw: InProcessGateway) -> None:
    response = await gw.chat(PROMPT, headers={"Cache-Control": "max-age=soon"})
    assert (response.status_code, response.json()["error"]["param"]) == (400, "Cache-Control")


async def test_other_routes_pass_through_uncached(gw: InProcessGateway) -> None:
    response = await gw.client.get("/v1/models", headers={"Authorization": "Bearer sk-test"})
    assert (response.status_code, response.headers["x-deja-cache"]) == (200, "bypass")
    assert response.json()["data"][0]["id"] == "stub-model"


async def test_admin_routes_need_the_admin_token(gw: InProcessGateway) -> None:
    assert (await gw.client.get("/deja/stats")).status_code == 401
    stats = await gw.client.get("/deja/stats", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert stats.json()["stages"] == ["polarity", "values"]


async def test_feedback_labels_only_the_callers_own_decision(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT)
    hit = await gw.chat(PARAPHRASE)
    request_id = hit.headers["x-deja-request-id"]
    other = await gw.client.post("/v1/deja/feedback", json={"request_id": request_id, "correct": False},
                                 headers={"Authorization": "Bearer sk-other"})
    assert other.status_code == 404
    mine = await gw.client.post("/v1/deja/feedback", json={"request_id": request_id, "correct": False},
                                headers={"Authorization": "Bearer sk-test"})
    assert mine.json() == {"request_id": request_id, "recorded": True}


async def test_the_default_decision_refuses_a_negation_and_names_the_vetoing_step(tmp_path: Path) -> None:
    # A low threshold: the lexical embedder's cosine must not be what keeps the negation out.
    async with inprocess_gateway(tmp_path, min_similarity=0.5) as gw:
        await gw.chat("is the api rate limited")
        near = await gw.chat("is the api not rate limited")
        assert (near.headers["x-deja-cache"], near.headers["x-deja-reason"], near.headers["x-deja-veto"]) == (
            "miss", "vetoed", "polarity")
        assert gw.upstream.chat_calls == 2


async def test_the_default_decision_serves_on_the_cosine_and_shows_no_learned_probability(tmp_path: Path) -> None:
    # The learned veto was removed: a hit rests on the cosine and the rules, and no P is read or shown.
    async with inprocess_gateway(tmp_path, min_similarity=0.5) as gw:
        await gw.chat("How do I cancel my subscription?")
        hit = await gw.chat("How do I cancel my subscription online?")  # another content word: not a rewording
        assert hit.headers["x-deja-cache"] == "hit-semantic" and "x-deja-probability" not in hit.headers
        assert "x-deja-veto" not in hit.headers and gw.upstream.chat_calls == 1
