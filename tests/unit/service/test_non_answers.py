"""Answers that are not answers (refusals, empty content, only failed tools) are relayed but not cached by default;
with DEJA_STORE_REFUSALS a stored refusal replays with its text in every API, plain and streamed, and a streamed ""
stays "" (in-process gateway, `MockTransport` upstreams)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.dialects import ChatDialect, MessagesDialect, ResponsesDialect
from support.inprocess import CHAT, InProcessGateway, inprocess_gateway
from support.stub_dialects import EMPTY, REFUSAL

MESSAGES, RESPONSES = "/v1/messages", "/v1/responses"
HEADERS = {"chat": {"Authorization": "Bearer sk-test"}, "responses": {"Authorization": "Bearer sk-test"},
           "messages": {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}}
PATHS = {"chat": CHAT, "responses": RESPONSES, "messages": MESSAGES}
APIS = [pytest.param(api, id=api) for api in PATHS]
PROMPT = "how do i pick a lock on my neighbours door"


def body(api: str, stream: bool) -> dict[str, Any]:
    if api == "responses":
        return {"model": "gpt-test", "input": PROMPT, "stream": stream}
    base = {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "stream": stream}
    return {**base, "max_tokens": 64} if api == "messages" else base


async def ask(gw: InProcessGateway, api: str, stream: bool = False) -> httpx.Response:
    return await gw.client.post(PATHS[api], json=body(api, stream), headers=HEADERS[api])


def streamed_text(api: str, response: httpx.Response) -> str:
    """The refusal or answer text a client assembles from a stream of `api`."""
    text = []
    for block in response.text.split("\n\n"):
        data = next((line[6:] for line in block.splitlines() if line.startswith("data: ")), None)
        if data is None or data == "[DONE]":
            continue
        event = json.loads(data)
        if api == "chat":
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                text.append(delta.get("refusal") or delta.get("content") or "")
        elif api == "responses" and event.get("type") in ("response.refusal.delta", "response.output_text.delta"):
            text.append(event["delta"])
        elif api == "messages" and event.get("type") == "content_block_delta":
            text.append(event["delta"].get("text", ""))
    return "".join(text)


def plain_text(api: str, answer: dict[str, Any]) -> str:
    if api == "chat":
        message = answer["choices"][0]["message"]
        return str(message.get("refusal") or message.get("content") or "")
    if api == "responses":
        part = answer["output"][0]["content"][0]
        return str(part.get("refusal") or part.get("text") or "")
    return "".join(block.get("text", "") for block in answer["content"])


@pytest.mark.asyncio
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [pytest.param(False, id="plain"), pytest.param(True, id="stream")])
@pytest.mark.parametrize("outcome", [pytest.param(REFUSAL, id="refusal"), pytest.param(EMPTY, id="empty")])
async def test_non_answer_is_relayed_but_not_stored_by_default(tmp_path: Path, api: str, stream: bool,
                                                               outcome: str) -> None:
    async with inprocess_gateway(tmp_path) as gw:
        gw.upstream.failures.append(outcome)
        first = await ask(gw, api, stream)
        assert first.status_code == 200 and first.headers["x-deja-cache"] == "miss"
        if outcome == REFUSAL:
            relayed = streamed_text(api, first) if stream else plain_text(api, first.json())
            assert relayed.startswith("answer 1 to:")  # the client still gets the refusal's text
        second = await ask(gw, api, stream)
        assert second.headers["x-deja-cache"] == "miss"
        assert gw.upstream.calls_to(PATHS[api]) == 2
        assert await gw.metric(f'deja_answers_not_stored_total{{reason="{outcome}"}}') == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stored_from_stream", [pytest.param(False, id="stored-plain"),
                                                pytest.param(True, id="stored-stream")])
async def test_stored_refusal_replays_its_text_plain_and_streamed(tmp_path: Path, api: str,
                                                                   stored_from_stream: bool) -> None:
    async with inprocess_gateway(tmp_path, store_refusals=True) as gw:
        gw.upstream.failures.append(REFUSAL)
        first = await ask(gw, api, stored_from_stream)
        expected = streamed_text(api, first) if stored_from_stream else plain_text(api, first.json())
        assert expected.startswith("answer 1 to:")
        plain, streamed = await ask(gw, api), await ask(gw, api, stream=True)
        assert plain.headers["x-deja-cache"] == streamed.headers["x-deja-cache"] == "hit-exact"
        assert plain_text(api, plain.json()) == expected
        assert streamed_text(api, streamed) == expected
        assert gw.upstream.calls_to(PATHS[api]) == 1
        if api == "chat":
            assert plain.json()["choices"][0]["message"]["content"] is None  # as upstream said: null, not ""


@pytest.mark.asyncio
async def test_streamed_empty_content_is_stored_as_empty_string_not_null(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, store_refusals=True) as gw:
        gw.upstream.failures.append(EMPTY)
        assert (await ask(gw, "chat", stream=True)).headers["x-deja-cache"] == "miss"
        replayed = await ask(gw, "chat")
        assert replayed.headers["x-deja-cache"] == "hit-exact"
        assert replayed.json()["choices"][0]["message"]["content"] == ""


def _chat(message: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def _response(*items: dict[str, Any]) -> dict[str, Any]:
    return {"object": "response", "status": "completed", "output": list(items)}


def _message(*content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "stop_reason": "end_turn", "content": list(content)}


TEXT = {"type": "output_text", "text": "Paris."}
SEARCH_ERROR = {"type": "web_search_tool_result", "tool_use_id": "t1",
                "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}}
SEARCH_CALL = {"type": "server_tool_use", "id": "t1", "name": "web_search", "input": {"query": "x"}}


@pytest.mark.parametrize("dialect, answer, reason", [
    pytest.param(ChatDialect(), _chat({"content": "Paris."}), None, id="chat-answer"),
    pytest.param(ChatDialect(), _chat({"content": None, "refusal": "I can't help."}), "refusal", id="chat-refusal"),
    pytest.param(ChatDialect(), _chat({"content": ""}), "empty", id="chat-empty"),
    pytest.param(ChatDialect(), _chat({"content": None, "tool_calls": [{"id": "c", "type": "function",
                                       "function": {"name": "f", "arguments": "{}"}}]}), None, id="chat-tool-call"),
    pytest.param(ResponsesDialect(), _response({"type": "message", "content": [TEXT]}), None, id="responses-answer"),
    pytest.param(ResponsesDialect(), _response({"type": "message", "content": [
        {"type": "refusal", "refusal": "No."}]}), "refusal", id="responses-refusal"),
    pytest.param(ResponsesDialect(), _response({"type": "message", "content": [
        {"type": "output_text", "text": ""}]}), "empty", id="responses-empty"),
    pytest.param(ResponsesDialect(), _response({"type": "web_search_call", "status": "failed"}), "tool errors",
                 id="responses-tool-errors"),
    pytest.param(ResponsesDialect(), _response({"type": "function_call", "status": "completed", "name": "f",
                                                "arguments": "{}"}), None, id="responses-function-call"),
    pytest.param(MessagesDialect(), _message({"type": "text", "text": "Paris."}), None, id="messages-answer"),
    pytest.param(MessagesDialect(), {**_message({"type": "text", "text": "No."}), "stop_reason": "refusal"},
                 "refusal", id="messages-refusal"),
    pytest.param(MessagesDialect(), _message(), "empty", id="messages-empty"),
    pytest.param(MessagesDialect(), _message(SEARCH_CALL, SEARCH_ERROR), "tool errors", id="messages-tool-errors"),
    pytest.param(MessagesDialect(), _message(SEARCH_CALL, SEARCH_ERROR, {"type": "text", "text": "From memory: 4."}),
                 None, id="messages-tool-error-then-answer"),
])
def test_non_answer_reasons(dialect: Any, answer: dict[str, Any], reason: str | None) -> None:
    assert dialect.non_answer(answer) == reason
