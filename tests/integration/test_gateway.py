"""The gateway end to end: real uvicorn process, real model, stub upstream on loopback, OpenAI SDK client."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration


def client(deployment: Deployment, api_key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=deployment.url + "/v1", api_key=api_key, max_retries=0, timeout=20)


def ask(deployment: Deployment, api_key: str, content: str, **kwargs: Any) -> tuple[str, str, dict[str, str]]:
    """One non-stream request; returns (answer text, X-Deja-Cache, headers)."""
    messages = kwargs.pop("messages", None) or [{"role": "user", "content": content}]
    with client(deployment, api_key) as c:
        raw = c.chat.completions.with_raw_response.create(
            model=kwargs.pop("model", "gpt-4o-mini"), messages=messages, **kwargs)
        completion = raw.parse()
    return completion.choices[0].message.content or "", raw.headers["x-deja-cache"], dict(raw.headers)


def test_same_request_twice_is_an_exact_hit(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first, verdict1, _ = ask(deployment, api_key, "What is the capital of France?")
    second, verdict2, headers = ask(deployment, api_key, "What is the capital of France?")
    assert (verdict1, verdict2) == ("miss", "hit-exact")
    assert first == second
    assert headers["x-deja-entry"]
    assert len(stub.state.chat_calls()) == 1


def test_paraphrase_is_a_semantic_hit(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first, _, _ = ask(deployment, api_key, "How do I reset my password?")
    second, verdict, headers = ask(deployment, api_key, "How can I reset my password?")
    assert verdict == "hit-semantic"
    assert second == first
    assert 0.8 < float(headers["x-deja-similarity"]) <= 1.0
    assert len(stub.state.chat_calls()) == 1


def test_hit_gets_a_fresh_id(deployment: Deployment, api_key: str) -> None:
    with client(deployment, api_key) as c:
        one, two = _twice(c)
    assert one.id != two.id and two.id.startswith("chatcmpl-deja-")


def _twice(c: openai.OpenAI) -> tuple[Any, Any]:
    one = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Name a prime number."}])
    two = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Name a prime number."}])
    return one, two


BASE: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [
    {"role": "system", "content": "You are a support bot."},
    {"role": "user", "content": "My account is on the Free plan of the invoicing app."},
    {"role": "assistant", "content": "Thanks, I see your Free plan account."},
    {"role": "user", "content": "How do I export my invoices as PDF?"}]}


@pytest.mark.parametrize("change", [
    pytest.param({"model": "gpt-4o"}, id="model"),
    pytest.param({"temperature": 1.3}, id="temperature"),
    pytest.param({"messages": [{"role": "system", "content": "You are a pirate."}, *BASE["messages"][1:]]},
                 id="system-prompt"),
    pytest.param({"messages": [BASE["messages"][0],
                               {"role": "user", "content": "My account is on the Enterprise plan of the app."},
                               *BASE["messages"][2:]]}, id="earlier-turn"),
])
def test_same_last_message_in_another_context_is_a_miss(
        deployment: Deployment, stub: StubUpstream, api_key: str, change: dict[str, Any]) -> None:
    _, first, _ = ask(deployment, api_key, "", **dict(BASE))
    _, verdict, _ = ask(deployment, api_key, "", **{**BASE, **change})
    assert (first, verdict) == ("miss", "miss")
    assert len(stub.state.chat_calls()) == 2


def test_two_api_keys_never_share_a_hit(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    other = api_key + "-other"
    ask(deployment, api_key, "How do I rotate my API key?")
    _, exact, _ = ask(deployment, other, "How do I rotate my API key?")
    _, semantic, _ = ask(deployment, other + "2", "How can I rotate my API key?")
    assert (exact, semantic) == ("miss", "miss")
    assert len(stub.state.chat_calls()) == 3


def test_streaming_miss_arrives_before_the_upstream_finishes(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    stub.state.chunk_delay = 0.15
    finished_when_first_seen = None
    parts = []
    with client(deployment, api_key) as c:
        stream = c.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Tell me a long story about a lighthouse."}],
            stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content and finished_when_first_seen is None:
                finished_when_first_seen = stub.state.streams_finished
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
    assert finished_when_first_seen == 0
    assert "".join(parts) == "answer 1 to: Tell me a long story about a lighthouse."


def stream_text(deployment: Deployment, api_key: str, content: str) -> tuple[str, str]:
    with client(deployment, api_key) as c, c.chat.completions.with_streaming_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": content}], stream=True) as raw:
        verdict = raw.headers["x-deja-cache"]
        text = "".join(ch.choices[0].delta.content or "" for ch in raw.parse() if ch.choices)
    return text, verdict


def test_streaming_hit_replays_sse_the_sdk_parses(deployment: Deployment, stub: StubUpstream,
                                                 api_key: str) -> None:
    first, v1 = stream_text(deployment, api_key, "Explain TCP slow start.")
    second, v2 = stream_text(deployment, api_key, "Explain TCP slow start.")
    assert (v1, v2) == ("miss", "hit-exact")
    assert first == second
    assert len(stub.state.chat_calls()) == 1


def test_stream_and_non_stream_requests_share_entries(deployment: Deployment, stub: StubUpstream,
                                                      api_key: str) -> None:
    text, _, _ = ask(deployment, api_key, "What does HTTP 418 mean?")
    replayed, verdict = stream_text(deployment, api_key, "What does HTTP 418 mean?")
    assert (replayed, verdict) == (text, "hit-exact")
    streamed, _ = stream_text(deployment, api_key, "What does HTTP 451 mean?")
    answer, verdict2, _ = ask(deployment, api_key, "What does HTTP 451 mean?")
    assert (answer, verdict2) == (streamed, "hit-exact")
    assert len(stub.state.chat_calls()) == 2


@pytest.mark.parametrize("status", ["500", "429"])
def test_upstream_errors_pass_through_and_are_not_stored(
        deployment: Deployment, stub: StubUpstream, api_key: str, status: str) -> None:
    stub.state.failures.append(status)
    with pytest.raises(openai.APIStatusError) as err:
        ask(deployment, api_key, "Is the build green?")
    assert err.value.status_code == int(status)
    assert err.value.response.json()["error"]["message"] == f"stub failure {status}"
    _, verdict, _ = ask(deployment, api_key, "Is the build green?")
    assert verdict == "miss"
    assert len(stub.state.chat_calls()) == 2


def test_upstream_timeout_is_a_504_in_openai_shape_and_not_stored(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    stub.state.failures.append("hang")
    response = httpx.post(deployment.url + "/v1/chat/completions", timeout=20,
                          headers={"Authorization": f"Bearer {api_key}"},
                          json={"model": "m", "messages": [{"role": "user", "content": "Slow question?"}]})
    assert response.status_code == 504
    assert response.json()["error"]["type"] == "upstream_timeout"
    _, verdict, _ = ask(deployment, api_key, "Slow question?", model="m")
    assert verdict == "miss"


def test_stream_cut_midway_fails_for_the_client_and_is_not_stored(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    stub.state.failures.append("cut")
    with pytest.raises(openai.APIError):
        stream_text(deployment, api_key, "Summarise the incident report.")
    text, verdict = stream_text(deployment, api_key, "Summarise the incident report.")
    assert verdict == "miss"
    assert text.startswith("answer 2 to:")


def post_raw(deployment: Deployment, content: bytes, api_key: str = "sk-x") -> httpx.Response:
    return httpx.post(deployment.url + "/v1/chat/completions", content=content, timeout=20,
                      headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"})


@pytest.mark.parametrize("payload, param", [
    pytest.param(b"{not json", None, id="malformed-json"),
    pytest.param(b"[1, 2]", None, id="not-an-object"),
    pytest.param(json.dumps({"model": "m", "messages": "hi"}).encode(), "messages", id="messages-not-a-list"),
    pytest.param(json.dumps({"model": 5, "messages": [{"role": "user", "content": "x"}]}).encode(), "model",
                 id="model-not-a-string"),
    pytest.param(json.dumps({"model": "m", "messages": []}).encode(), "messages", id="no-messages"),
    pytest.param(json.dumps({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}).encode(),
                 "messages.0.role", id="bad-role"),
    pytest.param(json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}],
                             "temperature": "hot"}).encode(), "temperature", id="temperature-type"),
])
def test_bad_input_is_a_400_in_openai_shape_and_upstream_is_not_called(
        deployment: Deployment, stub: StubUpstream, payload: bytes, param: str | None) -> None:
    response = post_raw(deployment, payload)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    if param:
        assert error["param"] == param
    assert stub.state.chat_calls() == []


def test_huge_body_is_a_413(deployment: Deployment, stub: StubUpstream) -> None:
    big = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * (5 * 1024 * 1024)}]})
    response = post_raw(deployment, big.encode())
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert stub.state.chat_calls() == []


def test_other_routes_pass_through_uncached(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    with client(deployment, api_key) as c:
        models = c.models.list()
    assert [m.id for m in models.data] == ["stub-model"]
    for _ in range(2):
        response = httpx.post(deployment.url + "/v1/embeddings", json={"model": "e", "input": "hi"},
                              headers={"Authorization": f"Bearer {api_key}"})
        assert response.status_code == 200 and response.headers["x-deja-cache"] == "bypass"
    assert [c["path"] for c in stub.state.calls] == ["/v1/models", "/v1/embeddings", "/v1/embeddings"]
    assert stub.state.calls[0]["headers"]["authorization"] == f"Bearer {api_key}"
    missing = httpx.get(deployment.url + "/v1/nope?x=1")
    assert missing.status_code == 404 and stub.state.calls[-1]["path"] == "/v1/nope?x=1"


def test_no_cache_skips_lookup_but_stores_and_no_store_stores_nothing(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    msgs = [{"role": "user", "content": "List three sorting algorithms."}]
    other = [{"role": "user", "content": "Name two graph algorithms."}]
    with client(deployment, api_key) as c:
        c.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
        raw = c.chat.completions.with_raw_response.create(model="m", messages=msgs,  # type: ignore[arg-type]
                                                          extra_headers={"Cache-Control": "no-cache"})
        assert raw.headers["x-deja-cache"] == "miss"
        fresh = raw.parse().choices[0].message.content
        c.chat.completions.create(model="m", messages=other,  # type: ignore[arg-type]
                                  extra_headers={"Cache-Control": "no-store"})
    _, verdict, _ = ask(deployment, api_key, "List three sorting algorithms.", model="m")
    assert verdict == "hit-exact"
    _, verdict2, _ = ask(deployment, api_key, "Name two graph algorithms.", model="m")
    assert verdict2 == "miss"
    assert fresh == "answer 2 to: List three sorting algorithms."


def test_n_greater_than_one_and_images_are_exact_only(deployment: Deployment, stub: StubUpstream,
                                                      api_key: str) -> None:
    _, v1, h1 = ask(deployment, api_key, "Give me a name for a cat.", n=2)
    _, v2, _ = ask(deployment, api_key, "Give me a name for a cat.", n=2)
    _, v3, _ = ask(deployment, api_key, "Suggest a name for a cat.", n=2)
    assert (v1, v2, v3) == ("miss", "hit-exact", "miss")
    assert h1["x-deja-policy"].startswith("exact_only")
    image = [{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                          {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}]
    image2 = [{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                           {"type": "image_url", "image_url": {"url": "data:image/png;base64,BB"}}]}]
    assert ask(deployment, api_key, "", messages=image)[1] == "miss"
    assert ask(deployment, api_key, "", messages=image2)[1] == "miss"
    assert ask(deployment, api_key, "", messages=image)[1] == "hit-exact"


def test_restart_keeps_entries(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    ask(deployment, api_key, "How do I enable dark mode in the dashboard?")
    deployment.gateway.restart()
    _, exact, _ = ask(deployment, api_key, "How do I enable dark mode in the dashboard?")
    _, semantic, _ = ask(deployment, api_key, "How can I enable dark mode in the dashboard?")
    assert (exact, semantic) == ("hit-exact", "hit-semantic")
    assert len(stub.state.chat_calls()) == 1


def test_admin_endpoints_need_the_token(deployment: Deployment) -> None:
    assert httpx.get(deployment.url + "/deja/stats").status_code == 401
    assert httpx.get(deployment.url + "/deja/stats", headers={"Authorization": "Bearer nope"}).status_code == 401
    ok = httpx.get(deployment.url + "/deja/stats", headers={"Authorization": "Bearer admin-secret"})
    assert ok.status_code == 200 and ok.json()["entries"] >= 0


def test_negated_prompt_above_the_threshold_is_a_miss_and_goes_upstream(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    ask(deployment, api_key, "Is the API rate limited?")
    answer, verdict, headers = ask(deployment, api_key, "Is the API not rate limited?")
    assert float(headers["x-deja-similarity"]) >= 0.9  # above any threshold we would ship
    # At the defaults (guarded) the polarity rule vetoes the negation before any learned score is read.
    assert (verdict, headers["x-deja-reason"], headers["x-deja-veto"]) == ("miss", "vetoed", "polarity")
    assert answer == "answer 2 to: Is the API not rate limited?"
    assert len(stub.state.chat_calls()) == 2
