"""OpenAI Responses (`POST /v1/responses`): request -> canonical request, storable answers, stream relay and
replay as the `openai` SDK parses them (OpenAI's error shape).

State held upstream: `previous_response_id` names an immutable stored response, so that id plus the new input
fix the whole context: such requests are exact-only with the id in the key (the earlier turns are invisible to
us, so nothing can be compared by meaning). `conversation` names a mutable object that upstream appends every
turn to: the same id and input mean a different context later, and a hit would skip the append, so those
requests bypass the cache. A hit keeps the stored response's upstream id, so a follow-up request that chains on
it with `previous_response_id` (or `GET /v1/responses/{id}`) still resolves upstream.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from index.pricing.usage import Usage
from index.request.keys import CanonicalRequest, LookupMode
from service.dialects.base import Accumulator, SseDecoder, UpstreamName, parse_data, sse, without_none
from service.dialects.chat import openai_error, openai_usage
from service.json_input import validate

# Fields that never change the answer: transport, storage flags, attribution, upstream prompt-cache hints.
IGNORED_FIELDS = frozenset({"stream", "stream_options", "store", "metadata", "user", "safety_identifier",
                            "prompt_cache_key", "prompt_cache_retention", "service_tier", "input"})
# Echoed by the response object from the request; a hit echoes the new request's values, not the stored ones.
ECHOED_FIELDS: tuple[tuple[str, Any], ...] = (("metadata", {}), ("user", None), ("safety_identifier", None),
                                               ("prompt_cache_key", None))
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
# Statuses of an output item (a tool call run upstream) that did not succeed.
_FAILED = frozenset({"failed", "incomplete"})


class ResponsesRequest(BaseModel):
    """The fields Deja relies on; everything else passes through untouched (and goes into the key)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(None, min_length=1)
    input: str | list[dict[str, Any]] | None = None
    instructions: str | None = None
    stream: bool | None = None
    store: bool | None = None
    previous_response_id: str | None = None
    conversation: str | dict[str, Any] | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_output_tokens: int | None = Field(None, ge=1)
    metadata: dict[str, Any] | None = None


def _part(part: Any) -> Any:
    """Input and output text parts become chat text parts; any other part (image, file, audio) stays as it is,
    which makes the request exact-only."""
    if isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
        return {**part, "type": "text"}
    return part


def turns(value: Any) -> list[dict[str, Any]]:
    """`input` as chat-shaped turns: messages keep their role; tool calls, their outputs, reasoning and item
    references become opaque `tool` turns (exact-context only, as tool conversations are in chat)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    result: list[dict[str, Any]] = []
    for item in value:
        if "role" in item and item.get("type", "message") == "message":
            content = item.get("content")
            parts = [_part(p) for p in content] if isinstance(content, list) else content
            result.append({k: v for k, v in item.items() if k != "type"} | {"content": parts})
        else:
            result.append({"role": "tool", "content": [item]})
    return result


class ResponsesDialect:
    name = "responses"
    path = "/v1/responses"
    upstream = UpstreamName.OPENAI

    def parse(self, raw: bytes) -> dict[str, Any]:
        return validate(ResponsesRequest, raw)

    def canonical(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> CanonicalRequest:
        params = without_none(body, IGNORED_FIELDS)
        mode, reason = LookupMode.FULL, ""
        if body.get("conversation") is not None:
            mode, reason = LookupMode.BYPASS, "conversation state held upstream"
        elif body.get("previous_response_id") is not None:
            mode, reason = LookupMode.EXACT_ONLY, "previous_response_id"
        return CanonicalRequest(self.name, str(body.get("model") or ""), params, turns(body.get("input")), mode,
                                reason)

    def streams(self, body: Mapping[str, Any]) -> bool:
        return bool(body.get("stream"))

    def stored_answer(self, body: Any) -> dict[str, Any] | None:
        if not isinstance(body, dict) or body.get("object") != "response":
            return None
        return body if body.get("status") == "completed" else None

    def accumulator(self) -> Accumulator:
        return ResponseAccumulator()

    def serve(self, cached: Mapping[str, Any], body: Mapping[str, Any], now: float) -> dict[str, Any] | None:
        if body.get("store") is not False and cached.get("store") is False:
            return None  # its id was never kept upstream: a caller that wants a stored response must go there
        answer = dict(cached)
        for field, default in ECHOED_FIELDS:
            if field in cached or field in body:
                answer[field] = body.get(field, default)
        return answer

    def replay(self, answer: Mapping[str, Any], body: Mapping[str, Any]) -> Iterator[bytes]:
        return replay_response(answer)

    def error_body(self, status: int, kind: str, message: str, param: str | None = None) -> dict[str, Any]:
        return openai_error(message, kind, param)

    def stream_error(self, message: str, kind: str) -> bytes:
        return sse({"type": "error", "code": kind, "message": message, "param": None}, "error")

    def non_answer(self, answer: Mapping[str, Any]) -> str | None:
        items = [i for i in answer.get("output") or [] if isinstance(i, dict) and i.get("type") != "reasoning"]
        parts = [p for i in items if i.get("type") == "message" for p in i.get("content") or [] if isinstance(p, dict)]
        if any(p.get("type") == "refusal" for p in parts):
            return "refusal"
        calls = [i for i in items if i.get("type") != "message"]
        if calls and all(i.get("status") in _FAILED for i in calls) and not any(p.get("text") for p in parts):
            return "tool errors"
        if not calls and not any(p.get("text") for p in parts):
            return "empty"
        return None

    def answer_text(self, answer: Mapping[str, Any] | None) -> str:
        parts = []
        for item in (answer or {}).get("output") or []:
            if item.get("type") == "message":
                parts += [str(p.get("text") or p.get("refusal") or "") for p in item.get("content") or []]
            elif item.get("type") == "function_call":
                parts.append(f"{item.get('name')}({item.get('arguments')})")
        return "\n".join(parts)

    def usage(self, answer: Mapping[str, Any]) -> Usage | None:
        return openai_usage(answer.get("usage"), "input_tokens", "output_tokens", "input_tokens_details")

    def audit_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        # An audit must not leave a second stored response upstream.
        return {k: v for k, v in body.items() if k != "stream_options"} | {"stream": False, "store": False}


class ResponseAccumulator:
    """Watches a relayed Responses stream; the answer is the `response.completed` event's response (the full
    object, as a non-stream request gets it). `error`, `response.failed` or `response.incomplete` spoil it."""

    def __init__(self) -> None:
        self._decoder = SseDecoder()
        self._response: dict[str, Any] | None = None
        self._failed = False
        self._ended = False

    def feed(self, chunk: bytes) -> None:
        for event in self._decoder.feed(chunk):
            data = parse_data(event)
            kind = None if data is None else data.get("type")
            if data is None or kind in ("error", "response.failed", "response.incomplete"):
                self._failed = True
                self._ended = self._ended or data is not None
            elif kind == "response.completed" and isinstance(data.get("response"), dict):
                self._response = data["response"]
                self._ended = True

    @property
    def ended(self) -> bool:
        return self._ended

    @property
    def complete(self) -> bool:
        return not self._failed and self._response is not None and self._response.get("status") == "completed"

    def answer(self) -> dict[str, Any]:
        assert self._response is not None
        return self._response


class _Events:
    """Numbers events in order, as upstream does (`sequence_number`)."""

    def __init__(self) -> None:
        self.sequence = 0

    def __call__(self, kind: str, **fields: Any) -> bytes:
        event = sse({"type": kind, "sequence_number": self.sequence, **fields}, kind)
        self.sequence += 1
        return event


def _content_events(emit: _Events, item_id: str, output_index: int, index: int, part: Mapping[str, Any]
                    ) -> Iterator[bytes]:
    where = {"item_id": item_id, "output_index": output_index, "content_index": index}
    kind = part.get("type")
    if kind == "output_text":
        text = str(part.get("text") or "")
        yield emit("response.content_part.added", **where, part={"type": "output_text", "text": "",
                                                                 "annotations": []})
        yield emit("response.output_text.delta", **where, delta=text, logprobs=[])
        yield emit("response.output_text.done", **where, text=text, logprobs=part.get("logprobs") or [])
    elif kind == "refusal":
        refusal = str(part.get("refusal") or "")
        yield emit("response.content_part.added", **where, part={"type": "refusal", "refusal": ""})
        yield emit("response.refusal.delta", **where, delta=refusal)
        yield emit("response.refusal.done", **where, refusal=refusal)
    else:
        yield emit("response.content_part.added", **where, part=dict(part))
    yield emit("response.content_part.done", **where, part=dict(part))


def _item_events(emit: _Events, output_index: int, item: Mapping[str, Any]) -> Iterator[bytes]:
    kind, item_id = item.get("type"), str(item.get("id") or "")
    if kind == "message":
        yield emit("response.output_item.added", output_index=output_index,
                   item={**item, "status": "in_progress", "content": []})
        for index, part in enumerate(item.get("content") or []):
            yield from _content_events(emit, item_id, output_index, index, part)
    elif kind == "function_call":
        arguments = str(item.get("arguments") or "")
        yield emit("response.output_item.added", output_index=output_index,
                   item={**item, "status": "in_progress", "arguments": ""})
        yield emit("response.function_call_arguments.delta", item_id=item_id, output_index=output_index,
                   delta=arguments)
        yield emit("response.function_call_arguments.done", item_id=item_id, output_index=output_index,
                   arguments=arguments)
    else:  # reasoning, tool calls run upstream: sent whole, as their final state
        yield emit("response.output_item.added", output_index=output_index, item=dict(item))
    yield emit("response.output_item.done", output_index=output_index, item=dict(item))


def replay_response(answer: Mapping[str, Any]) -> Iterator[bytes]:
    """`response.created`, `response.in_progress`, each output item (`output_item.added`, its parts and text
    deltas, `output_item.done`), `response.completed`."""
    emit = _Events()
    pending = {**answer, "status": "in_progress", "output": [], "usage": None}
    yield emit("response.created", response=pending)
    yield emit("response.in_progress", response=pending)
    for output_index, item in enumerate(answer.get("output") or []):
        yield from _item_events(emit, output_index, item)
    yield emit("response.completed", response=dict(answer))
