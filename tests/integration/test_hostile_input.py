"""Malformed and hostile requests get a clear 4xx (or are forwarded safely), never a 500; broken upstream answers
are never stored. Each test is a case that produced a 500 or a wrong answer before (issue 12)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer admin-secret"}
DEEP = 5000  # far beyond the ~970 levels that exhausted Python's recursion limit


def chat_body(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}], **extra}


def post_raw(deployment: Deployment, path: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(deployment.url + path, content=content, timeout=30,
                      headers={"Content-Type": "application/json", **headers})


def key_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer sk-{uuid.uuid4().hex}"}


def assert_openai_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"] and error["type"]


def deep_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/deja/feedback",
                                  "/deja/invalidate", "/deja/api/label"])
def test_deeply_nested_json_is_a_400_not_a_500(deployment: Deployment, path: str) -> None:
    chat = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":' + deep_json(DEEP) + b"}"
    for body in (chat, deep_json(DEEP), b'{"request_id":' + deep_json(DEEP) + b"}"):
        assert_openai_error(post_raw(deployment, path, body, **ADMIN), 400)


LONE_SURROGATES = {
    "escaped": b'"\\ud800"',
    "escaped-low": b'"a\\udfffb"',
    "raw-bytes": b'"\xed\xa0\x80"',
}


@pytest.mark.parametrize("encoding", LONE_SURROGATES)
@pytest.mark.parametrize(("path", "template"), [
    pytest.param("/v1/chat/completions",
                 b'{"model":"m","messages":[{"role":"user","content":%s}]}', id="chat-content"),
    pytest.param("/v1/chat/completions",
                 b'{"model":%s,"messages":[{"role":"user","content":"hi?"}]}', id="chat-model"),
    pytest.param("/v1/chat/completions",
                 b'{"model":"m","messages":[{"role":"user","content":"hi?"}],%s:1}', id="chat-key"),
    pytest.param("/v1/messages",
                 b'{"model":"m","max_tokens":9,"messages":[{"role":"user","content":%s}]}', id="messages-content"),
    pytest.param("/v1/responses", b'{"model":"m","input":%s}', id="responses-input"),
    pytest.param("/v1/deja/feedback", b'{"request_id":%s,"correct":true}', id="feedback"),
    pytest.param("/v1/deja/feedback", b'{"request_id":"x","correct":true,"detail":%s}', id="feedback-detail"),
    pytest.param("/v1/deja/feedback", b'{"request_id":%s}', id="feedback-invalid"),
    pytest.param("/deja/invalidate", b'{"api_key":%s}', id="admin-invalidate"),
    pytest.param("/deja/api/label", b'{"request_id":%s,"same":true}', id="admin-label"),
])
def test_lone_surrogate_is_a_400_not_a_500(deployment: Deployment, path: str, template: bytes,
                                           encoding: str) -> None:
    body = template % LONE_SURROGATES[encoding]
    headers = ADMIN if path.startswith("/deja/") else key_headers()
    assert_openai_error(post_raw(deployment, path, body, **headers), 400)


def test_surrogate_pair_is_ordinary_text(deployment: Deployment) -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"Is \\ud83d\\ude00 a smile?"}]}'
    response = post_raw(deployment, "/v1/chat/completions", body, **key_headers())
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("route", ["miss", "pass-through"])
def test_non_ascii_header_byte_is_forwarded_unchanged(deployment: Deployment, stub: StubUpstream,
                                                      route: str) -> None:
    headers = {**key_headers(), "X-Client-Name": "caf\xe9".encode("latin-1")}
    if route == "miss":
        response = httpx.post(deployment.url + "/v1/chat/completions", headers=headers, timeout=30,
                              json=chat_body(f"Which river runs through Paris? {uuid.uuid4().hex}"))
    else:
        response = httpx.get(deployment.url + "/v1/models", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert stub.state.calls[-1]["headers"]["x-client-name"] == "caf\xe9"


@pytest.mark.parametrize(("method", "path"), [("GET", "/%06"), ("POST", "/v1/files%0D"), ("GET", "/v1/a%00b"),
                                              ("DELETE", "/v1/files/%7F")])
def test_control_character_in_pass_through_path_is_a_400(deployment: Deployment, stub: StubUpstream,
                                                         method: str, path: str) -> None:
    response = httpx.request(method, deployment.url + path, headers=key_headers(), timeout=30)
    assert_openai_error(response, 400)
    assert stub.state.calls == []


@pytest.mark.parametrize(("method", "path"), [("GET", "/deja/entriez"), ("POST", "/deja/label"), ("GET", "/deja")])
def test_unknown_deja_route_is_a_404_and_never_forwards_the_admin_token(
        deployment: Deployment, stub: StubUpstream, method: str, path: str) -> None:
    response = httpx.request(method, deployment.url + path, headers=ADMIN, timeout=30)
    assert_openai_error(response, 404)
    assert stub.state.calls == []


@pytest.mark.parametrize("max_age", ["inf", "1e999", "nan", "-1", "1.5", "0x10", ""])
def test_unusable_cache_control_max_age_is_a_400(deployment: Deployment, max_age: str) -> None:
    response = httpx.post(deployment.url + "/v1/chat/completions", timeout=30,
                          headers={**key_headers(), "Cache-Control": f"max-age={max_age}"},
                          json=chat_body(f"What is the speed of light? {uuid.uuid4().hex}"))
    assert_openai_error(response, 400)
    assert response.json()["error"]["param"] == "Cache-Control"


def test_huge_cache_control_max_age_is_stored_and_served(deployment: Deployment) -> None:
    headers = {**key_headers(), "Cache-Control": "max-age=" + "9" * 40}
    body = chat_body(f"What is the tallest mountain on Earth? {uuid.uuid4().hex}")
    verdicts = [httpx.post(deployment.url + "/v1/chat/completions", timeout=30, headers=headers, json=body)
                .headers["x-deja-cache"] for _ in range(2)]
    assert verdicts == ["miss", "hit-exact"]


def test_max_age_zero_answer_is_never_served(deployment: Deployment, stub: StubUpstream) -> None:
    headers = key_headers()
    body = chat_body(f"What is the chemical symbol for gold? {uuid.uuid4().hex}")
    first = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, json=body,
                       headers={**headers, "Cache-Control": "max-age=0"})
    assert first.status_code == 200
    again = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, json=body, headers=headers)
    assert again.headers["x-deja-cache"] == "miss"
    assert len(stub.state.chat_calls()) == 2


@pytest.mark.parametrize("entry_id", [2**63, 2**64, 10**30])
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_entry_id_beyond_64_bits_is_not_a_500(deployment: Deployment, method: str, entry_id: int) -> None:
    response = httpx.request(method, f"{deployment.url}/deja/entries/{entry_id}", headers=ADMIN, timeout=30)
    assert response.status_code in (400, 404), response.text
    assert response.json()["error"]["message"]


def sse_events(response: httpx.Response) -> list[str]:
    return [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]


def test_stream_ending_without_done_gets_an_error_event_and_is_not_stored(
        deployment: Deployment, stub: StubUpstream) -> None:
    headers = key_headers()
    body = chat_body(f"Name three primary colours. {uuid.uuid4().hex}", stream=True)
    stub.state.failures.append("no-done")
    response = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, json=body, headers=headers)
    events = sse_events(response)
    assert "[DONE]" not in events
    assert "error" in json.loads(events[-1])
    again = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, json=body, headers=headers)
    assert again.headers["x-deja-cache"] == "miss"
    assert sse_events(again)[-1] == "[DONE]"


@pytest.mark.parametrize("failure", ["truncate", "short"])
def test_truncated_upstream_body_is_a_502_and_not_stored(deployment: Deployment, stub: StubUpstream,
                                                         failure: str) -> None:
    headers = key_headers()
    body = chat_body(f"How many legs does a spider have? {uuid.uuid4().hex}")
    stub.state.failures.append(failure)
    response = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, json=body, headers=headers)
    assert_openai_error(response, 502)
    assert response.headers["x-deja-cache"] == "error"
    again = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, json=body, headers=headers)
    assert again.status_code == 200 and again.headers["x-deja-cache"] == "miss"


def test_upstream_timeout_is_a_504_that_says_it_was_not_cached(deployment: Deployment, stub: StubUpstream) -> None:
    stub.state.failures.append("hang")
    response = httpx.post(deployment.url + "/v1/chat/completions", timeout=30, headers=key_headers(),
                          json=chat_body(f"What is the capital of Peru? {uuid.uuid4().hex}"))
    assert_openai_error(response, 504)
    assert response.headers["x-deja-cache"] == "error"
