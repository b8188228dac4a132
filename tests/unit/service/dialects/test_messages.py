"""Anthropic Messages dialect: keys, storability, stream accumulation, and replay read by the official SDK."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest

from index.pricing.usage import Usage
from index.request.keys import LookupMode, build_key, key_for
from service.dialects import MESSAGES
from service.errors import BadRequest
from support.streams import fed
from support.stub_dialects import MessagesApi

BODY: dict[str, Any] = {"model": "claude-x", "max_tokens": 256, "system": "You are terse.",
                        "messages": [{"role": "user", "content": "How do I reset my password?"}]}
PIECE = 7  # bytes per chunk of a relayed stream: chunks cut across events
HEADERS = {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}


def key(body: dict[str, Any], headers: dict[str, str] = HEADERS) -> Any:
    return key_for("ns", MESSAGES.canonical(body, headers))


@pytest.mark.parametrize("change", [
    pytest.param({"metadata": {"user_id": "u-2"}}, id="metadata"),
    pytest.param({"stream": True}, id="stream"),
    pytest.param({"system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]},
                 id="cache-control-on-system-blocks-vs-string"),
])
def test_fields_that_do_not_change_the_answer_stay_out_of_the_key(change: dict[str, Any]) -> None:
    if "system" in change:  # a string and one text block differ in shape: compare blocks with and without marker
        plain = {**BODY, "system": [{"type": "text", "text": "You are terse."}]}
        assert key({**BODY, **change}).exact == key(plain).exact
        return
    assert key({**BODY, **change}).exact == key(BODY).exact


@pytest.mark.parametrize("change", [
    pytest.param({"system": "You are a pirate."}, id="system"),
    pytest.param({"max_tokens": 10}, id="max_tokens"),
    pytest.param({"temperature": 0.2}, id="temperature"),
    pytest.param({"top_k": 5}, id="top_k"),
    pytest.param({"thinking": {"type": "enabled", "budget_tokens": 1024}}, id="thinking"),
    pytest.param({"tools": [{"name": "t", "input_schema": {"type": "object"}}]}, id="tools"),
])
def test_output_changing_fields_change_the_scope(change: dict[str, Any]) -> None:
    a, b = key(BODY), key({**BODY, **change})
    assert a.exact != b.exact and a.scope != b.scope


def test_version_headers_are_in_the_scope_and_beta_order_does_not_matter() -> None:
    base = key(BODY, {**HEADERS, "anthropic-beta": "a-1,b-2"})
    assert key(BODY, {**HEADERS, "anthropic-beta": "b-2, a-1"}).exact == base.exact
    assert key(BODY, HEADERS).scope != base.scope
    assert key(BODY, {**HEADERS, "anthropic-version": "2024-01-01"}).scope != key(BODY).scope


def test_entries_never_cross_apis() -> None:
    chat = build_key("ns", {"model": "claude-x", "max_tokens": 256, "messages": [
        {"role": "system", "content": "You are terse."}, *BODY["messages"]]})
    mine = key(BODY, {})
    assert {chat.exact, chat.context, chat.scope}.isdisjoint({mine.exact, mine.context, mine.scope})


@pytest.mark.parametrize("content", [
    pytest.param([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                  {"type": "text", "text": "What is this?"}], id="image"),
    pytest.param([{"type": "tool_result", "tool_use_id": "t1", "content": "42"}], id="tool-result"),
])
def test_non_text_content_is_exact_only(content: list[dict[str, Any]]) -> None:
    assert key({**BODY, "messages": [{"role": "user", "content": content}]}).mode is LookupMode.EXACT_ONLY


def test_text_blocks_match_like_a_string() -> None:
    blocks = key({**BODY, "messages": [{"role": "user", "content": [{"type": "text", "text": "How do I reset?"}]}]})
    assert blocks.mode is LookupMode.FULL and blocks.prompt == "How do I reset?"


@pytest.mark.parametrize("raw", [
    pytest.param(b'{"model": "m", "messages": []}', id="no-messages"),
    pytest.param(b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}', id="no-max-tokens"),
    pytest.param(b'{"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}', id="role"),
    pytest.param(b"[1]", id="not-an-object"),
])
def test_bad_requests_are_rejected(raw: bytes) -> None:
    with pytest.raises(BadRequest):
        MESSAGES.parse(raw)


def test_error_body_has_anthropics_shape() -> None:
    assert MESSAGES.error_body(400, "invalid_request_error", "bad") == {
        "type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    assert MESSAGES.error_body(504, "upstream_timeout", "slow")["error"]["type"] == "timeout_error"


@pytest.mark.parametrize("stop, storable", [("end_turn", True), ("max_tokens", True), ("tool_use", True),
                                            ("stop_sequence", True),
                                            # finished, but not an answer: kept only with DEJA_STORE_REFUSALS
                                            # (`non_answer`, tests/unit/service/test_non_answers.py)
                                            ("refusal", True), ("pause_turn", False)])
def test_only_finished_answers_are_stored(stop: str, storable: bool) -> None:
    answer = {**MessagesApi().answer(BODY, 1, "hi", "ok"), "stop_reason": stop}
    assert (MESSAGES.stored_answer(answer) is not None) is storable


def test_relayed_stream_rebuilds_the_non_stream_answer() -> None:
    api = MessagesApi()
    acc = fed(MESSAGES, api.events(BODY, 1, "Open settings then reset.", "ok"), PIECE)
    assert acc.complete
    assert acc.answer() == api.answer(BODY, 1, "Open settings then reset.", "ok")


@pytest.mark.parametrize("trim, extra", [
    pytest.param(1, [], id="no-message-stop"),
    pytest.param(0, [b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"x"}}\n\n'],
                 id="error-event"),
])
def test_cut_or_failed_streams_are_not_complete(trim: int, extra: list[bytes]) -> None:
    events = MessagesApi().events(BODY, 1, "Open settings then reset.", "ok")
    assert not fed(MESSAGES, events[:len(events) - trim] + extra, PIECE).complete


def test_refused_stream_is_complete_but_not_an_answer() -> None:
    accumulator = fed(MESSAGES, MessagesApi().events(BODY, 1, "No.", "unfinished"), PIECE)
    assert accumulator.complete  # stored only with DEJA_STORE_REFUSALS
    assert MESSAGES.non_answer(accumulator.answer()) == "refusal"


RICH: dict[str, Any] = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
    "stop_sequence": None, "usage": {"input_tokens": 30, "output_tokens": 20, "cache_read_input_tokens": 4},
    "content": [
        {"type": "thinking", "thinking": "The user wants weather.", "signature": "sig=="},
        {"type": "text", "text": "Let me look that up."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris", "days": [1, 2]}},
    ],
}


def _sdk(handler: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="k", base_url="http://deja.test", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def test_replay_is_parsed_by_the_official_sdk_into_the_stored_message() -> None:
    served = MESSAGES.serve(RICH, BODY, 0.0)
    assert served is not None

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b"".join(MESSAGES.replay(served, BODY)),
                              headers={"content-type": "text/event-stream"})

    seen: list[str] = []
    with _sdk(handler).messages.stream(model="claude-x", max_tokens=10, messages=BODY["messages"]) as stream:
        seen = [event.type for event in stream]
        final = stream.get_final_message()
    assert final.model_dump(exclude_none=True) == {k: v for k, v in served.items() if v is not None}
    assert seen[0] == "message_start" and seen[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"} <= set(seen)


def test_replay_round_trips_through_the_accumulator() -> None:
    acc = fed(MESSAGES, MESSAGES.replay(RICH, BODY), 11)
    assert acc.complete and acc.answer() == RICH


def test_hit_gets_its_own_id() -> None:
    one, two = MESSAGES.serve(RICH, BODY, 0.0), MESSAGES.serve(RICH, BODY, 0.0)
    assert one is not None and two is not None
    assert one["id"] != two["id"] and one["id"].startswith("msg_deja_") and one["content"] == RICH["content"]


def test_answer_text_and_usage() -> None:
    assert MESSAGES.answer_text(RICH) == 'Let me look that up.\nweather({"city": "Paris", "days": [1, 2]})'
    assert MESSAGES.usage(RICH) == Usage(input_tokens=30, cached_input_tokens=4, output_tokens=20)
