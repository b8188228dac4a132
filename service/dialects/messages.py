"""Anthropic Messages (`POST /v1/messages`): request -> canonical request, storable answers, stream relay and
replay as the `anthropic` SDK parses them, and Anthropic's error shape."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from index.pricing.usage import Usage, count
from index.request.keys import CanonicalRequest
from service.dialects.base import Accumulator, SseDecoder, UpstreamName, parse_data, sse, without_none
from service.json_input import validate

# Stop reasons of a finished answer; `pause_turn` and `model_context_window_exceeded` answers are never kept,
# `refusal` ones only with DEJA_STORE_REFUSALS (`non_answer`).
STORABLE_STOPS = frozenset({"end_turn", "stop_sequence", "max_tokens", "tool_use", "refusal"})
# Fields that never change the answer: transport, attribution, capacity.
IGNORED_FIELDS = frozenset({"stream", "metadata", "service_tier", "messages"})
# Headers that select API behaviour: forwarded unchanged, and part of the scope since they may change the answer.
VERSION_HEADERS = ("anthropic-version", "anthropic-beta")

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error",
                504: "timeout_error"}


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]


class MessagesRequest(BaseModel):
    """The fields Deja relies on; everything else passes through untouched (and goes into the key)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[_Message] = Field(min_length=1)
    max_tokens: int = Field(ge=1)
    system: str | list[dict[str, Any]] | None = None
    stream: bool | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=0)
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None


def _without_cache_control(value: Any) -> Any:
    """Prompt-caching markers only change Anthropic's billing, never the answer: they stay out of the key."""
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    return value


def _header_values(headers: Mapping[str, str]) -> dict[str, Any]:
    lowered = {k.lower(): v for k, v in headers.items()}
    found: dict[str, Any] = {}
    if "anthropic-version" in lowered:
        found["header:anthropic-version"] = lowered["anthropic-version"].strip()
    if "anthropic-beta" in lowered:  # a set: order and repeats do not matter
        found["header:anthropic-beta"] = sorted({b.strip() for b in lowered["anthropic-beta"].split(",") if b.strip()})
    return found


class MessagesDialect:
    name = "messages"
    path = "/v1/messages"
    upstream = UpstreamName.ANTHROPIC

    def parse(self, raw: bytes) -> dict[str, Any]:
        return validate(MessagesRequest, raw)

    def canonical(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> CanonicalRequest:
        params = _without_cache_control(without_none(body, IGNORED_FIELDS)) | _header_values(headers)
        messages = _without_cache_control(list(body.get("messages") or []))
        return CanonicalRequest(self.name, str(body.get("model", "")), params, messages)

    def streams(self, body: Mapping[str, Any]) -> bool:
        return bool(body.get("stream"))

    def stored_answer(self, body: Any) -> dict[str, Any] | None:
        if not isinstance(body, dict) or body.get("type") != "message":
            return None
        return body if body.get("stop_reason") in STORABLE_STOPS else None

    def accumulator(self) -> Accumulator:
        return MessageAccumulator()

    def serve(self, cached: Mapping[str, Any], body: Mapping[str, Any], now: float) -> dict[str, Any] | None:
        # Nothing refers to a message id later: each answer gets its own, as upstream would give.
        return {**cached, "id": f"msg_deja_{uuid.uuid4().hex[:24]}"}

    def replay(self, answer: Mapping[str, Any], body: Mapping[str, Any]) -> Iterator[bytes]:
        return replay_message(answer)

    def error_body(self, status: int, kind: str, message: str, param: str | None = None) -> dict[str, Any]:
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}

    def stream_error(self, message: str, kind: str) -> bytes:
        error_type = "timeout_error" if kind == "upstream_timeout" else "api_error"
        return sse({"type": "error", "error": {"type": error_type, "message": message}}, "error")

    def non_answer(self, answer: Mapping[str, Any]) -> str | None:
        if answer.get("stop_reason") == "refusal":
            return "refusal"
        blocks = [b for b in answer.get("content") or [] if isinstance(b, dict) and b.get("type") != "thinking"]
        texts = any(b.get("type") == "text" and b.get("text") for b in blocks)
        results = [b for b in blocks if str(b.get("type", "")).endswith("tool_result")]
        if results and not texts and all(_tool_error(b) for b in results):
            return "tool errors"  # every tool run upstream failed and nothing was said
        if not texts and not results and not any(b.get("type") in _CALLS for b in blocks):
            return "empty"
        return None

    def answer_text(self, answer: Mapping[str, Any] | None) -> str:
        parts = []
        for block in (answer or {}).get("content") or []:
            if block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                parts.append(f"{block.get('name')}({json.dumps(block.get('input'), sort_keys=True)})")
        return "\n".join(parts)

    def usage(self, answer: Mapping[str, Any]) -> Usage | None:
        """Anthropic's `input_tokens` excludes the cache's reads (`cache_read_input_tokens`) and writes
        (`cache_creation_input_tokens`), each billed at a rate of its own."""
        usage = answer.get("usage")
        if not isinstance(usage, Mapping) or ("input_tokens" not in usage and "output_tokens" not in usage):
            return None
        return Usage(count(usage.get("input_tokens")), count(usage.get("cache_read_input_tokens")),
                     count(usage.get("cache_creation_input_tokens")), count(usage.get("output_tokens")))

    def audit_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {**body, "stream": False}


_CALLS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def _tool_error(block: Mapping[str, Any]) -> bool:
    """A tool result block that reports a failure (`is_error`, or an `*_error` content object)."""
    content = block.get("content")
    failed = isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
    return bool(block.get("is_error")) or failed


class MessageAccumulator:
    """Rebuilds the `message` object from `message_start` ... `message_stop`; complete only after a clean
    `message_stop` with a storable stop reason and no `error` event."""

    def __init__(self) -> None:
        self._decoder = SseDecoder()
        self._message: dict[str, Any] | None = None
        self._json: dict[int, str] = {}
        self._stopped = False
        self._errored = False  # an `error` event: the stream's last word
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        for event in self._decoder.feed(chunk):
            data = parse_data(event)
            if data is None:
                self._failed = True
                continue
            try:
                self._event(data)
            except (KeyError, IndexError, TypeError, ValueError):
                self._failed = True

    def _event(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "error":
            self._failed = self._errored = True
        elif kind == "message_start":
            self._message = copy.deepcopy(data["message"])
        elif self._message is None:
            return  # `ping` or anything else before the message starts
        elif kind == "content_block_start":
            self._message["content"].append(copy.deepcopy(data["content_block"]))
        elif kind == "content_block_delta":
            self._delta(self._message["content"][data["index"]], int(data["index"]), data["delta"])
        elif kind == "content_block_stop":
            index = int(data["index"])
            if index in self._json:
                self._message["content"][index]["input"] = json.loads(self._json.pop(index) or "{}")
        elif kind == "message_delta":
            self._message.update({k: v for k, v in data.get("delta", {}).items()})
            usage = {k: v for k, v in (data.get("usage") or {}).items() if v is not None}
            self._message["usage"] = {**(self._message.get("usage") or {}), **usage}
        elif kind == "message_stop":
            self._stopped = True

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
        elif kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + delta["partial_json"]
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]

    @property
    def ended(self) -> bool:
        return self._stopped or self._errored

    @property
    def complete(self) -> bool:
        return (self._stopped and not self._failed and self._message is not None and not self._json
                and self._message.get("stop_reason") in STORABLE_STOPS)

    def answer(self) -> dict[str, Any]:
        assert self._message is not None
        return self._message


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[bytes]:
    kind = block.get("type")
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []]
        if block.get("citations"):
            start["citations"] = []
        deltas.append({"type": "text_delta", "text": block.get("text", "")})
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        start = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": block.get("thinking", "")},
                  {"type": "signature_delta", "signature": block.get("signature", "")}]
    else:  # redacted thinking, tool results: sent whole in their start event, as upstream does
        start, deltas = dict(block), []
    yield sse({"type": "content_block_start", "index": index, "content_block": start}, "content_block_start")
    for delta in deltas:
        yield sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
    yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")


def replay_message(answer: Mapping[str, Any]) -> Iterator[bytes]:
    """`message_start`, per block `content_block_start`/`_delta`/`_stop`, `message_delta`, `message_stop`."""
    usage = dict(answer.get("usage") or {})
    start = {**answer, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 0}}
    yield sse({"type": "message_start", "message": start}, "message_start")
    for index, block in enumerate(answer.get("content") or []):
        yield from _block_events(index, block)
    delta = {"stop_reason": answer.get("stop_reason"), "stop_sequence": answer.get("stop_sequence")}
    yield sse({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta")
    yield sse({"type": "message_stop"}, "message_stop")
