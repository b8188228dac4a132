"""OpenAI Chat Completions (`POST /v1/chat/completions`): the first dialect; its stream shapes live in
`service.sse`, its keys in `index.request.keys.chat_request` (eval keys chat bodies too)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from index.pricing.usage import Usage, count
from index.request.keys import CanonicalRequest, chat_request
from service.dialects.base import Accumulator, UpstreamName
from service.errors import error_body
from service.labels import answer_text
from service.requests import parse_chat_body
from service.sse import StreamAccumulator, replay, storable_finish


def openai_usage(usage: Any, input_name: str, output_name: str, details_name: str) -> Usage | None:
    """OpenAI's usage (Chat: `prompt_tokens`, Responses: `input_tokens`): the input count includes the tokens its
    prompt cache served (`<details>.cached_tokens`); writing that cache costs nothing extra."""
    if not isinstance(usage, Mapping) or (input_name not in usage and output_name not in usage):
        return None
    details = usage.get(details_name)
    prompt = count(usage.get(input_name))
    cached = min(prompt, count(details.get("cached_tokens"))) if isinstance(details, Mapping) else 0
    return Usage(input_tokens=prompt - cached, cached_input_tokens=cached, output_tokens=count(usage.get(output_name)))


def openai_error(message: str, kind: str, param: str | None = None) -> dict[str, Any]:
    return error_body(message, kind, param)


class ChatAccumulator:
    def __init__(self) -> None:
        self._inner = StreamAccumulator()

    def feed(self, chunk: bytes) -> None:
        self._inner.feed(chunk)

    @property
    def ended(self) -> bool:
        return self._inner.done

    @property
    def complete(self) -> bool:
        return self._inner.complete

    def answer(self) -> dict[str, Any]:
        return self._inner.completion()


class ChatDialect:
    name = "chat"
    path = "/v1/chat/completions"
    upstream = UpstreamName.OPENAI

    def parse(self, raw: bytes) -> dict[str, Any]:
        return parse_chat_body(raw)

    def canonical(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> CanonicalRequest:
        return chat_request(body)

    def streams(self, body: Mapping[str, Any]) -> bool:
        return bool(body.get("stream"))

    def stored_answer(self, body: Any) -> dict[str, Any] | None:
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list) or not body["choices"]:
            return None
        if not all(isinstance(c, dict) and storable_finish(c.get("finish_reason")) for c in body["choices"]):
            return None
        return body

    def accumulator(self) -> Accumulator:
        return ChatAccumulator()

    def serve(self, cached: Mapping[str, Any], body: Mapping[str, Any], now: float) -> dict[str, Any] | None:
        return {**cached, "id": f"chatcmpl-deja-{uuid.uuid4().hex[:24]}", "created": int(now)}

    def replay(self, answer: Mapping[str, Any], body: Mapping[str, Any]) -> Iterator[bytes]:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return replay(dict(answer), include_usage)

    def error_body(self, status: int, kind: str, message: str, param: str | None = None) -> dict[str, Any]:
        return openai_error(message, kind, param)

    def stream_error(self, message: str, kind: str) -> bytes:
        return b"data: " + json.dumps(openai_error(message, kind)).encode() + b"\n\n"

    def non_answer(self, answer: Mapping[str, Any]) -> str | None:
        messages = [c.get("message") or {} for c in answer.get("choices") or [] if isinstance(c, dict)]
        if any(m.get("refusal") for m in messages):
            return "refusal"
        if all(not m.get("content") and not m.get("tool_calls") and not m.get("function_call") for m in messages):
            return "empty"
        return None

    def answer_text(self, answer: Mapping[str, Any] | None) -> str:
        return answer_text(dict(answer) if answer else None)

    def usage(self, answer: Mapping[str, Any]) -> Usage | None:
        return openai_usage(answer.get("usage"), "prompt_tokens", "completion_tokens", "prompt_tokens_details")

    def audit_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in body.items() if k != "stream_options"} | {"stream": False}
