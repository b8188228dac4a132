"""The three API shapes the stub upstream speaks (Chat Completions, Anthropic Messages, OpenAI Responses):
answers, event streams and error bodies, written by hand from the APIs' documentation (not from Deja's code,
so a replay bug in Deja cannot hide behind the same bug here)."""

from __future__ import annotations

import json
from typing import Any, Protocol

SSE = bytes
DONE = b"data: [DONE]\n\n"
# The event after which a "cut" stream breaks off.
CUT_AFTER = 3
# Outcomes that are complete answers but not answers: the model refused ("refusal": the answer text is the
# refusal), or said nothing ("empty": "" as content).
REFUSAL, EMPTY = "refusal", "empty"


def _event(data: dict[str, Any], name: str | None = None) -> SSE:
    line = b"data: " + json.dumps(data).encode() + b"\n\n"
    return (b"event: " + name.encode() + b"\n" + line) if name else line


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
    return str(content)


class StubApi(Protocol):
    path: str

    def last_text(self, body: dict[str, Any]) -> str: ...

    def answer(self, body: dict[str, Any], n: int, text: str, outcome: str) -> dict[str, Any]: ...

    def events(self, body: dict[str, Any], n: int, text: str, outcome: str) -> list[SSE]: ...

    def error(self, status: int, message: str) -> dict[str, Any]: ...


def answer_for(body: dict[str, Any], n: int) -> str:
    return f"answer {n} to: {body['messages'][-1].get('content')}"


def completion(body: dict[str, Any], text: str, n: int, finish: str = "stop") -> dict[str, Any]:
    """A `chat.completion` answering `body` with `text` (the `n`-th call)."""
    return {
        "id": f"chatcmpl-stub-{n}", "object": "chat.completion", "created": 1700000000, "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                     "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def stream_events(body: dict[str, Any], text: str, n: int, finish: str = "stop") -> list[SSE]:
    """The SSE events of a streamed answer `text`, word by word, without the final `data: [DONE]`."""
    head = {"id": f"chatcmpl-stub-{n}", "object": "chat.completion.chunk", "created": 1700000000,
            "model": body["model"]}
    events = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                    "finish_reason": None}]}]
    events += [{**head, "choices": [{"index": 0, "delta": {"content": (" " if i else "") + w},
                                     "finish_reason": None}]} for i, w in enumerate(text.split(" "))]
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return [_event(event) for event in events]


class ChatApi:
    path = "/v1/chat/completions"

    def last_text(self, body: dict[str, Any]) -> str:
        return str(body["messages"][-1].get("content"))

    def answer(self, body: dict[str, Any], n: int, text: str, outcome: str) -> dict[str, Any]:
        answer = completion(body, "" if outcome == EMPTY else text, n,
                            "content_filter" if outcome == "unfinished" else "stop")
        if outcome == REFUSAL:  # as OpenAI answers a refusal: content null, the text in `refusal`
            answer["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": text}
        return answer

    def events(self, body: dict[str, Any], n: int, text: str, outcome: str) -> list[SSE]:
        if outcome == EMPTY:
            return [*stream_events(body, "", n)[:1], *stream_events(body, "", n)[-1:], DONE]
        if outcome == REFUSAL:
            head = {"id": f"chatcmpl-stub-{n}", "object": "chat.completion.chunk", "created": 1700000000,
                    "model": body["model"]}
            deltas = [{"role": "assistant", "content": None, "refusal": ""},
                      *({"refusal": (" " if i else "") + w} for i, w in enumerate(text.split(" ")))]
            events = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
            events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            return [*(_event(e) for e in events), DONE]
        return [*stream_events(body, text, n, "content_filter" if outcome == "unfinished" else "stop"), DONE]

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "server_error"}}


class MessagesApi:
    """Anthropic Messages: `message` objects, and `message_start` ... `message_stop` streams."""

    path = "/v1/messages"

    def last_text(self, body: dict[str, Any]) -> str:
        return _text(body["messages"][-1].get("content"))

    def answer(self, body: dict[str, Any], n: int, text: str, outcome: str) -> dict[str, Any]:
        return {
            "id": f"msg_stub_{n}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}] if outcome != EMPTY else [],
            "stop_reason": "refusal" if outcome in ("unfinished", REFUSAL) else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 6},
        }

    def events(self, body: dict[str, Any], n: int, text: str, outcome: str) -> list[SSE]:
        message = {**self.answer(body, n, text, outcome), "content": [], "stop_reason": None,
                   "usage": {"input_tokens": 12, "output_tokens": 1}}
        if outcome == EMPTY:
            return [_event({"type": "message_start", "message": message}, "message_start"),
                    _event({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": 0}}, "message_delta"),
                    _event({"type": "message_stop"}, "message_stop")]
        events = [_event({"type": "message_start", "message": message}, "message_start"),
                  _event({"type": "content_block_start", "index": 0,
                          "content_block": {"type": "text", "text": ""}}, "content_block_start"),
                  _event({"type": "ping"}, "ping")]
        events += [_event({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": (" " if i else "") + w}}, "content_block_delta")
                   for i, w in enumerate(text.split(" "))]
        stop = "refusal" if outcome in ("unfinished", REFUSAL) else "end_turn"
        events += [_event({"type": "content_block_stop", "index": 0}, "content_block_stop"),
                   _event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 6}}, "message_delta"),
                   _event({"type": "message_stop"}, "message_stop")]
        return events

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


class ResponsesApi:
    """OpenAI Responses: `response` objects, and `response.created` ... `response.completed` streams. Every
    created response is kept (unless `store` is false) for `GET`/`DELETE /v1/responses/{id}`."""

    path = "/v1/responses"

    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any]] = {}

    def last_text(self, body: dict[str, Any]) -> str:
        value = body.get("input")
        if isinstance(value, list):
            return _text(value[-1].get("content"))
        return str(value)

    def answer(self, body: dict[str, Any], n: int, text: str, outcome: str) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "output_text", "text": "" if outcome == EMPTY else text, "annotations": []}
        if outcome == REFUSAL:
            part = {"type": "refusal", "refusal": text}
        item = {"id": f"msg_stub_{n}", "type": "message", "status": "completed", "role": "assistant",
                "content": [part]}
        response = {
            "id": f"resp_stub_{n}", "object": "response", "created_at": 1700000000, "model": body.get("model"),
            "status": "incomplete" if outcome == "unfinished" else "completed", "output": [item],
            "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": body.get("tools") or [],
            "store": body.get("store", True), "previous_response_id": body.get("previous_response_id"),
            "usage": {"input_tokens": 12, "output_tokens": 6, "total_tokens": 18,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        }
        if response["store"]:
            self.stored[response["id"]] = response
        return response

    def events(self, body: dict[str, Any], n: int, text: str, outcome: str) -> list[SSE]:
        final = self.answer(body, n, text, outcome)
        item = final["output"][0]
        if outcome == REFUSAL:
            return self._refusal_events(final, text)
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        raw: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**final, "status": "in_progress", "output": []}},
            {"type": "response.in_progress", "response": {**final, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0,
             "item": {**item, "status": "in_progress", "content": []}},
            {"type": "response.content_part.added", **where,
             "part": {"type": "output_text", "text": "", "annotations": []}},
        ]
        raw += [{"type": "response.output_text.delta", **where, "delta": (" " if i else "") + w, "logprobs": []}
                for i, w in enumerate(text.split(" "))]
        raw += [{"type": "response.output_text.done", **where, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **where, "part": item["content"][0]},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {"type": "response.incomplete" if outcome == "unfinished" else "response.completed",
                 "response": final}]
        return [_event({**e, "sequence_number": i}, e["type"]) for i, e in enumerate(raw)]

    @staticmethod
    def _refusal_events(final: dict[str, Any], text: str) -> list[SSE]:
        item = final["output"][0]
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        raw: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**final, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0,
             "item": {**item, "status": "in_progress", "content": []}},
            {"type": "response.content_part.added", **where, "part": {"type": "refusal", "refusal": ""}},
            {"type": "response.refusal.delta", **where, "delta": text},
            {"type": "response.refusal.done", **where, "refusal": text},
            {"type": "response.content_part.done", **where, "part": item["content"][0]},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": final},
        ]
        return [_event({**e, "sequence_number": i}, e["type"]) for i, e in enumerate(raw)]

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
