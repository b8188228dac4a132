"""OpenAI Responses dialect: keys, upstream state, storability, stream accumulation, replay read by the SDK."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from index.pricing.usage import Usage
from index.request.keys import LookupMode, build_key, key_for
from service.dialects import RESPONSES
from service.errors import BadRequest
from support.streams import fed
from support.stub_dialects import ResponsesApi

BODY: dict[str, Any] = {"model": "gpt-5", "instructions": "Be terse.", "input": "How do I reset my password?"}
PIECE = 9  # bytes per chunk of a relayed stream: chunks cut across events


def key(body: dict[str, Any]) -> Any:
    return key_for("ns", RESPONSES.canonical(body, {}))


def test_string_input_and_one_user_message_are_the_same_request() -> None:
    items = {**BODY, "input": [{"type": "message", "role": "user", "content": "How do I reset my password?"}]}
    assert key(items).exact == key(BODY).exact


@pytest.mark.parametrize("change", [
    pytest.param({"store": False}, id="store"),
    pytest.param({"metadata": {"run": "7"}}, id="metadata"),
    pytest.param({"user": "u-1"}, id="user"),
    pytest.param({"stream": True}, id="stream"),
    pytest.param({"prompt_cache_key": "pk"}, id="prompt-cache-key"),
])
def test_fields_that_do_not_change_the_answer_stay_out_of_the_key(change: dict[str, Any]) -> None:
    assert key({**BODY, **change}).exact == key(BODY).exact


@pytest.mark.parametrize("change", [
    pytest.param({"instructions": "Be a pirate."}, id="instructions"),
    pytest.param({"reasoning": {"effort": "high"}}, id="reasoning"),
    pytest.param({"text": {"format": {"type": "json_object"}}}, id="text-format"),
    pytest.param({"tools": [{"type": "function", "name": "f", "parameters": {}}]}, id="tools"),
    pytest.param({"max_output_tokens": 20}, id="max-output-tokens"),
])
def test_output_changing_fields_change_the_scope(change: dict[str, Any]) -> None:
    a, b = key(BODY), key({**BODY, **change})
    assert a.exact != b.exact and a.scope != b.scope


def test_previous_response_id_is_exact_only_and_in_the_key() -> None:
    one, two = key({**BODY, "previous_response_id": "resp_1"}), key({**BODY, "previous_response_id": "resp_2"})
    assert one.mode is LookupMode.EXACT_ONLY and one.mode_reason == "previous_response_id"
    assert one.exact != two.exact != key(BODY).exact


def test_conversation_bypasses_the_cache() -> None:
    assert key({**BODY, "conversation": "conv_1"}).mode is LookupMode.BYPASS


def test_entries_never_cross_apis() -> None:
    chat = build_key("ns", {"model": "gpt-5", "messages": [{"role": "user", "content": BODY["input"]}]})
    mine = key({"model": "gpt-5", "input": BODY["input"]})
    assert {chat.exact, chat.context, chat.scope}.isdisjoint({mine.exact, mine.context, mine.scope})


def test_multi_turn_input_matches_by_relevant_context() -> None:
    items = [{"role": "user", "content": [{"type": "input_text", "text": "My plan is the Team plan."}]},
             {"role": "assistant", "content": [{"type": "output_text", "text": "Noted, Team plan."}]},
             {"role": "user", "content": [{"type": "input_text", "text": "How much does it cost?"}]}]
    k = key({**BODY, "input": items})
    assert k.mode is LookupMode.FULL and k.prompt == "How much does it cost?"
    assert k.context_text is not None and "Team plan" in k.context_text


def test_function_call_items_are_exact_only() -> None:
    items = [{"role": "user", "content": "Weather in Paris?"},
             {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]
    assert key({**BODY, "input": items}).mode is LookupMode.EXACT_ONLY


def test_bad_requests_are_rejected() -> None:
    with pytest.raises(BadRequest):
        RESPONSES.parse(b'{"model": "m", "input": 5}')
    with pytest.raises(BadRequest):
        RESPONSES.parse(b'{"model": "m", "input": "x", "temperature": 9}')


@pytest.mark.parametrize("status, storable", [("completed", True), ("incomplete", False), ("failed", False),
                                              ("queued", False), ("in_progress", False)])
def test_only_completed_responses_are_stored(status: str, storable: bool) -> None:
    answer = {**ResponsesApi().answer(BODY, 1, "hi", "ok"), "status": status}
    assert (RESPONSES.stored_answer(answer) is not None) is storable


def test_relayed_stream_keeps_the_completed_response() -> None:
    api = ResponsesApi()
    acc = fed(RESPONSES, api.events(BODY, 3, "Open settings.", "ok"), PIECE)
    assert acc.complete and acc.answer() == api.answer(BODY, 3, "Open settings.", "ok")


def test_cut_or_incomplete_streams_are_not_complete() -> None:
    events = ResponsesApi().events(BODY, 3, "Open settings.", "ok")
    assert not fed(RESPONSES, events[:-1], PIECE).complete
    assert not fed(RESPONSES, ResponsesApi().events(BODY, 3, "Open settings.", "unfinished"), PIECE).complete


RICH: dict[str, Any] = {
    "id": "resp_1", "object": "response", "created_at": 1700000000, "model": "gpt-5", "status": "completed",
    "instructions": "Be terse.", "metadata": {"run": "1"}, "parallel_tool_calls": True, "tool_choice": "auto",
    "tools": [], "store": True,
    "output": [
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Think."}]},
        {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Open settings, then Reset.", "annotations": []}]},
        {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "reset",
         "arguments": "{\"user\": \"me\"}"},
    ],
    "usage": {"input_tokens": 9, "output_tokens": 7, "total_tokens": 16,
              "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 2}},
}


def test_replay_is_parsed_by_the_official_sdk_into_the_stored_response() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b"".join(RESPONSES.replay(RICH, BODY)),
                               headers={"content-type": "text/event-stream"})

    client = openai.OpenAI(api_key="k", base_url="http://deja.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with client.responses.stream(model="gpt-5", input=BODY["input"]) as stream:
        seen = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_text == "Open settings, then Reset."
    assert [item.id for item in final.output] == ["rs_1", "msg_1", "fc_1"]
    assert seen[:2] == ["response.created", "response.in_progress"] and seen[-1] == "response.completed"
    assert {"response.output_text.delta", "response.output_text.done", "response.function_call_arguments.delta",
            "response.output_item.added", "response.output_item.done"} <= set(seen)


def test_replay_round_trips_through_the_accumulator() -> None:
    acc = fed(RESPONSES, RESPONSES.replay(RICH, BODY), PIECE)
    assert acc.complete and acc.answer() == RICH


def test_hit_keeps_the_upstream_id_and_echoes_this_requests_metadata() -> None:
    served = RESPONSES.serve(RICH, {**BODY, "metadata": {"run": "2"}}, 0.0)
    assert served is not None and served["id"] == "resp_1" and served["metadata"] == {"run": "2"}
    assert RESPONSES.serve(RICH, BODY, 0.0) == {**RICH, "metadata": {}}


def test_unstored_response_does_not_stand_in_for_a_request_that_wants_it_stored() -> None:
    unstored = {**RICH, "store": False}
    assert RESPONSES.serve(unstored, BODY, 0.0) is None
    assert RESPONSES.serve(unstored, {**BODY, "store": False}, 0.0) is not None
    assert RESPONSES.serve(RICH, {**BODY, "store": False}, 0.0) is not None


def test_audit_does_not_leave_a_stored_response_upstream() -> None:
    assert RESPONSES.audit_body({**BODY, "stream": True}) == {**BODY, "stream": False, "store": False}


def test_answer_text_and_usage() -> None:
    assert RESPONSES.answer_text(RICH) == 'Open settings, then Reset.\nreset({"user": "me"})'
    assert RESPONSES.usage(RICH) == Usage(input_tokens=9, output_tokens=7)
