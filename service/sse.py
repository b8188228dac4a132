"""Server-sent events for chat completions: accumulate a streamed answer, replay a stored one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


def storable_finish(reason: object) -> bool:
    """An answer that ended on its own (or at the caller's max_tokens); filtered or unfinished ones are not kept."""
    return reason in ("stop", "length", "tool_calls", "function_call")


@dataclass
class _Choice:
    role: str = "assistant"
    content: list[str] = field(default_factory=list)
    # A delta carried `content` as a string (even ""): the message's content is a string, not null.
    has_content: bool = False
    refusal: list[str] = field(default_factory=list)
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None


class StreamAccumulator:
    """Feeds on raw SSE bytes as they pass through; `completion()` rebuilds the `chat.completion` object.

    `done` is true only after `data: [DONE]`; anything else is an incomplete stream and must not be stored.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._choices: dict[int, _Choice] = {}
        self._meta: dict[str, Any] = {}
        self._usage: dict[str, Any] | None = None
        self.done = False
        self.failed = False

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except (ValueError, RecursionError):
            self.failed = True
            return
        if not isinstance(event, dict) or "error" in event:
            self.failed = True
            return
        try:
            self._event(event)
        except (TypeError, ValueError, AttributeError):  # an event of the wrong shape: relayed, never stored
            self.failed = True

    def _event(self, event: dict[str, Any]) -> None:
        for key in ("id", "model", "created", "system_fingerprint", "service_tier"):
            if key in event and key not in self._meta:
                self._meta[key] = event[key]
        if event.get("usage"):
            self._usage = event["usage"]
        for choice in event.get("choices") or []:
            slot = self._choices.setdefault(int(choice.get("index", 0)), _Choice())
            delta = choice.get("delta") or {}
            slot.role = delta.get("role") or slot.role
            if isinstance(delta.get("content"), str):
                slot.has_content = True
                slot.content.append(delta["content"])
            if delta.get("refusal"):
                slot.refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or []:
                self._tool_delta(slot, call)
            if choice.get("finish_reason"):
                slot.finish_reason = choice["finish_reason"]

    @staticmethod
    def _tool_delta(slot: _Choice, call: dict[str, Any]) -> None:
        acc = slot.tool_calls.setdefault(int(call.get("index", 0)),
                                         {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            acc["id"] = call["id"]
        function = call.get("function") or {}
        acc["function"]["name"] += function.get("name") or ""
        acc["function"]["arguments"] += function.get("arguments") or ""

    @property
    def complete(self) -> bool:
        return self.done and not self.failed and bool(self._choices) and all(
            storable_finish(c.finish_reason) for c in self._choices.values())

    def completion(self) -> dict[str, Any]:
        choices = []
        for index in sorted(self._choices):
            slot = self._choices[index]
            content = "".join(slot.content) if slot.has_content else None
            if content == "" and (slot.refusal or slot.tool_calls):
                content = None  # the opening delta's "" of a refusal or tool call: upstream's message says null
            message: dict[str, Any] = {"role": slot.role, "content": content}
            if slot.refusal:
                message["refusal"] = "".join(slot.refusal)
            if slot.tool_calls:
                message["tool_calls"] = [slot.tool_calls[i] for i in sorted(slot.tool_calls)]
            choices.append({"index": index, "message": message, "finish_reason": slot.finish_reason,
                            "logprobs": None})
        body: dict[str, Any] = {"object": "chat.completion", **self._meta, "choices": choices}
        if self._usage is not None:
            body["usage"] = self._usage
        return body


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def replay(completion: dict[str, Any], include_usage: bool) -> Iterator[bytes]:
    """A valid `chat.completion.chunk` stream for a stored completion, ending in `[DONE]`."""
    head: dict[str, Any] = {
        k: completion[k] for k in ("id", "created", "model", "system_fingerprint") if k in completion
    }
    head["object"] = "chat.completion.chunk"
    for choice in completion.get("choices") or []:
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": message.get("role", "assistant"), "content": ""}
        yield _event({**head, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        if message.get("content"):
            yield _event({**head, "choices": [{"index": index, "delta": {"content": message["content"]},
                                               "finish_reason": None}]})
        if message.get("refusal"):
            yield _event({**head, "choices": [{"index": index, "delta": {"refusal": message["refusal"]},
                                               "finish_reason": None}]})
        if message.get("tool_calls"):
            calls = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
            yield _event({**head, "choices": [{"index": index, "delta": {"tool_calls": calls},
                                               "finish_reason": None}]})
        yield _event({**head, "choices": [{"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")
                                           or "stop"}]})
    if include_usage and completion.get("usage"):
        yield _event({**head, "choices": [], "usage": completion["usage"]})
    yield b"data: [DONE]\n\n"
