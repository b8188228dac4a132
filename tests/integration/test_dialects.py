"""Anthropic Messages and OpenAI Responses end to end: the official SDKs with only `base_url` changed, a real
gateway process, the stub upstream speaking both APIs on loopback."""

from __future__ import annotations

import uuid
from typing import Any

import anthropic
import httpx
import openai
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

MESSAGES, RESPONSES = "/v1/messages", "/v1/responses"


def claude(deployment: Deployment, api_key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=deployment.url, api_key=api_key, max_retries=0, timeout=20)


def gpt(deployment: Deployment, api_key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=deployment.url + "/v1", api_key=api_key, max_retries=0, timeout=20)


def ask_claude(deployment: Deployment, api_key: str, text: str, **extra: Any) -> tuple[str, dict[str, str]]:
    with claude(deployment, api_key) as client:
        raw = client.messages.with_raw_response.create(
            model="claude-test", max_tokens=200, messages=[{"role": "user", "content": text}], **extra)
        message = raw.parse()
    return "".join(b.text for b in message.content if b.type == "text"), dict(raw.headers)


def stream_claude(deployment: Deployment, api_key: str, text: str) -> tuple[str, str]:
    with claude(deployment, api_key) as client, client.messages.stream(
            model="claude-test", max_tokens=200, messages=[{"role": "user", "content": text}]) as stream:
        deltas = "".join(stream.text_stream)
        final = stream.get_final_message()
        verdict = stream.response.headers["x-deja-cache"]
    assert deltas == "".join(b.text for b in final.content if b.type == "text")
    assert final.stop_reason == "end_turn"
    return deltas, verdict


def ask_gpt(deployment: Deployment, api_key: str, text: str, **extra: Any) -> tuple[Any, dict[str, str]]:
    with gpt(deployment, api_key) as client:
        raw = client.responses.with_raw_response.create(model="gpt-test", input=text, **extra)
        return raw.parse(), dict(raw.headers)


def gpt_events(deployment: Deployment, api_key: str, text: str) -> tuple[list[Any], str]:
    with gpt(deployment, api_key) as client:
        raw = client.responses.with_raw_response.create(model="gpt-test", input=text, stream=True)
        with raw.parse() as events:
            return list(events), raw.headers["x-deja-cache"]


def stream_gpt(deployment: Deployment, api_key: str, text: str) -> tuple[str, str]:
    events, verdict = gpt_events(deployment, api_key, text)
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert events[-1].type == "response.completed" and events[-1].response.output_text == deltas
    return deltas, verdict


def prompt(text: str) -> str:
    """A prompt no other test asks (the stub upstream is shared by the module)."""
    return f"{text} [{uuid.uuid4().hex[:8]}]"


def asked(stub: StubUpstream, path: str, text: str) -> int:
    """Upstream calls for `text` (background audits of other tests' hits may reach the stub meanwhile)."""
    return sum(1 for call in stub.state.calls_to(path) if text.encode() in call["body"])


# Anthropic Messages

def test_messages_repeat_is_an_exact_hit_with_its_own_id(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("What is the capital of France?")
    first, h1 = ask_claude(deployment, api_key, text)
    second, h2 = ask_claude(deployment, api_key, text)
    assert (h1["x-deja-cache"], h2["x-deja-cache"]) == ("miss", "hit-exact")
    assert first == second
    assert asked(stub, MESSAGES, text) == 1
    assert stub.state.calls_to(MESSAGES)[0]["headers"]["anthropic-version"]


def test_messages_paraphrase_is_a_semantic_hit(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first, _ = ask_claude(deployment, api_key, "How do I reset my password?")
    second, headers = ask_claude(deployment, api_key, "How can I reset my password?")
    assert headers["x-deja-cache"] == "hit-semantic" and second == first


def test_messages_stream_is_relayed_then_replayed(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("Explain TCP slow start.")
    relayed, v1 = stream_claude(deployment, api_key, text)
    replayed, v2 = stream_claude(deployment, api_key, text)
    assert (v1, v2) == ("miss", "hit-exact") and replayed == relayed
    answer, headers = ask_claude(deployment, api_key, text)  # a streamed answer serves non-stream requests too
    assert (answer, headers["x-deja-cache"]) == (relayed, "hit-exact")
    assert asked(stub, MESSAGES, text) == 1


def test_messages_from_another_api_key_or_another_api_are_misses(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("What is the boiling point of water?")
    ask_claude(deployment, api_key, text)
    _, other_key = ask_claude(deployment, api_key + "-other", text)
    _, other_api = ask_gpt(deployment, api_key, text)
    assert other_key["x-deja-cache"] == "miss" and other_api["x-deja-cache"] == "miss"


@pytest.mark.parametrize("failure", ["500", "429", "unfinished"])
def test_messages_upstream_errors_and_refusals_are_not_stored(
        deployment: Deployment, stub: StubUpstream, api_key: str, failure: str) -> None:
    text = prompt("Summarise the incident report.")
    stub.state.failures.append(failure)
    if failure == "unfinished":
        ask_claude(deployment, api_key, text)
    else:
        with pytest.raises(anthropic.APIStatusError) as caught:
            ask_claude(deployment, api_key, text)
        assert caught.value.status_code == int(failure)
        assert caught.value.body["type"] == "error"  # type: ignore[index]
    _, headers = ask_claude(deployment, api_key, text)
    assert headers["x-deja-cache"] == "miss"
    assert asked(stub, MESSAGES, text) == 2


def test_messages_stream_cut_midway_fails_and_is_not_stored(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("List the steps of the deploy.")
    stub.state.failures.append("cut")
    with pytest.raises((anthropic.APIError, httpx.HTTPError)):
        stream_claude(deployment, api_key, text)
    _, verdict = stream_claude(deployment, api_key, text)
    assert verdict == "miss"


def test_messages_no_store_bypasses(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("Name a prime number.")
    for _ in range(2):
        _, headers = ask_claude(deployment, api_key, text, extra_headers={"Cache-Control": "no-cache, no-store"})
        assert headers["x-deja-cache"] == "bypass"
    assert asked(stub, MESSAGES, text) == 2


def test_messages_bad_input_is_a_400_in_anthropic_shape(deployment: Deployment, stub: StubUpstream) -> None:
    response = httpx.post(deployment.url + MESSAGES, headers={"x-api-key": "k"}, timeout=20,
                          json={"model": "claude-test", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in body["error"]["message"]
    assert stub.state.calls_to(MESSAGES) == []


# OpenAI Responses

def test_responses_repeat_is_an_exact_hit_that_keeps_the_upstream_id(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("What is the capital of Peru?")
    first, h1 = ask_gpt(deployment, api_key, text, metadata={"run": "1"})
    second, h2 = ask_gpt(deployment, api_key, text, metadata={"run": "2"})
    assert (h1["x-deja-cache"], h2["x-deja-cache"]) == ("miss", "hit-exact")
    assert second.output_text == first.output_text and second.id == first.id
    assert second.metadata == {"run": "2"}
    retrieved = gpt(deployment, api_key).responses.retrieve(second.id)  # passes through to the upstream
    assert retrieved.output_text == first.output_text
    assert asked(stub, RESPONSES, text) == 1


def test_responses_paraphrase_is_a_semantic_hit(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first, _ = ask_gpt(deployment, api_key, "How do I reset my password?")
    second, headers = ask_gpt(deployment, api_key, "How can I reset my password?")
    assert headers["x-deja-cache"] == "hit-semantic" and second.output_text == first.output_text


def test_responses_stream_is_relayed_then_replayed(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("Explain DNS caching.")
    relayed, v1 = stream_gpt(deployment, api_key, text)
    replayed, v2 = stream_gpt(deployment, api_key, text)
    assert (v1, v2) == ("miss", "hit-exact") and replayed == relayed
    with gpt(deployment, api_key).responses.stream(model="gpt-test", input=text) as stream:
        final = stream.get_final_response()
    assert final.output_text == relayed
    assert asked(stub, RESPONSES, text) == 1


def test_responses_chained_on_previous_response_are_exact_only(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first, _ = ask_gpt(deployment, api_key, prompt("Pick a colour."))
    follow = "Why that one?"
    _, h1 = ask_gpt(deployment, api_key, follow, previous_response_id=first.id)
    _, h2 = ask_gpt(deployment, api_key, follow, previous_response_id=first.id)
    assert h1["x-deja-policy"].startswith("exact_only: previous_response_id")
    assert (h1["x-deja-cache"], h2["x-deja-cache"]) == ("miss", "hit-exact")


def test_responses_in_a_conversation_bypass(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    text = prompt("And then?")
    for _ in range(2):
        _, headers = ask_gpt(deployment, api_key, text, conversation="conv_1")
        assert headers["x-deja-cache"] == "bypass"
    assert asked(stub, RESPONSES, text) == 2


@pytest.mark.parametrize("failure", ["500", "unfinished", "cut"])
def test_responses_errors_incomplete_and_cut_streams_are_not_stored(
        deployment: Deployment, stub: StubUpstream, api_key: str, failure: str) -> None:
    text = prompt("Summarise the changelog.")
    stub.state.failures.append(failure)
    if failure == "500":
        with pytest.raises(openai.InternalServerError):
            ask_gpt(deployment, api_key, text)
    elif failure == "cut":  # the Responses API reports a failed stream with an `error` event, not an HTTP error
        events, _ = gpt_events(deployment, api_key, text)
        assert events[-1].type == "error" and "response.completed" not in {e.type for e in events}
    else:
        ask_gpt(deployment, api_key, text)
    _, headers = ask_gpt(deployment, api_key, text)
    assert headers["x-deja-cache"] == "miss"


def test_responses_delete_passes_through(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first, _ = ask_gpt(deployment, api_key, prompt("Say hello."))
    deleted = gpt(deployment, api_key).responses.delete(first.id)
    assert deleted is None  # the SDK returns nothing for a 200 with the stub's deletion body
    assert [c["method"] for c in stub.state.calls if c["path"].startswith(RESPONSES + "/")] == ["DELETE"]


def test_responses_bad_input_is_a_400_in_openai_shape(deployment: Deployment, stub: StubUpstream) -> None:
    response = httpx.post(deployment.url + RESPONSES, headers={"Authorization": "Bearer k"}, timeout=20,
                          json={"model": "gpt-test", "input": "hi", "temperature": 7})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "temperature"
    assert stub.state.calls_to(RESPONSES) == []
