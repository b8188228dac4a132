"""What an API dialect gives the one gateway pipeline (`Dialect`), and what the dialects share: JSON body
validation, server-sent-event framing and parsing."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from index.pricing.usage import Usage
from index.request.keys import CanonicalRequest


class UpstreamName(StrEnum):
    """Which upstream a dialect's requests go to."""

    OPENAI = "openai"  # DEJA_UPSTREAM_URL
    ANTHROPIC = "anthropic"  # DEJA_ANTHROPIC_UPSTREAM_URL


class Accumulator(Protocol):
    """Fed the raw bytes of a relayed stream as they pass; rebuilds the answer in the API's own shape."""

    def feed(self, chunk: bytes) -> None: ...

    @property
    def ended(self) -> bool:
        """True once the API's last event arrived (whatever the outcome); a stream that stops before it is cut."""
        ...

    @property
    def complete(self) -> bool:
        """True once the stream ended cleanly with an answer worth storing."""
        ...

    def answer(self) -> dict[str, Any]: ...


class Dialect(Protocol):
    """One API's shapes: request -> canonical request, answers, streams and errors. Stateless."""

    name: str  # "chat", "messages", "responses": logged with every decision; part of every non-chat key
    path: str  # the upstream path of the cached route
    upstream: UpstreamName

    def parse(self, raw: bytes) -> dict[str, Any]:
        """The JSON body as sent, validated (raises `BadRequest`); never rewritten."""
        ...

    def canonical(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> CanonicalRequest: ...

    def streams(self, body: Mapping[str, Any]) -> bool: ...

    def stored_answer(self, body: Any) -> dict[str, Any] | None:
        """A non-stream upstream 200 body (parsed JSON) if it is a complete answer worth storing, else None."""
        ...

    def accumulator(self) -> Accumulator: ...

    def serve(self, cached: Mapping[str, Any], body: Mapping[str, Any], now: float) -> dict[str, Any] | None:
        """The stored answer as this request's answer at `now` (ids, timestamps, echoed fields), or None when it
        cannot stand in."""
        ...

    def replay(self, answer: Mapping[str, Any], body: Mapping[str, Any]) -> Iterator[bytes]:
        """The answer as the event stream the API's official SDK parses."""
        ...

    def error_body(self, status: int, kind: str, message: str, param: str | None = None) -> dict[str, Any]: ...

    def stream_error(self, message: str, kind: str) -> bytes:
        """An in-band error event for a stream cut after its headers were sent (`kind` as in `service.errors`)."""
        ...

    def non_answer(self, answer: Mapping[str, Any]) -> str | None:
        """Why a complete answer is not an answer worth serving again ("refusal", "empty", "tool errors"), or None.
        Such answers are relayed but not stored unless `DEJA_STORE_REFUSALS` is on."""
        ...

    def answer_text(self, answer: Mapping[str, Any] | None) -> str:
        """The answer's text (and tool calls), for comparing two answers in labels."""
        ...

    def usage(self, answer: Mapping[str, Any]) -> Usage | None:
        """What the call that gave `answer` cost upstream, by token kind (None: the answer reports no usage)."""
        ...

    def audit_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The request re-asked without streaming, for an audit of a served hit."""
        ...




def without_none(values: Mapping[str, Any], ignored: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in ignored and v is not None}


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    """One server-sent event; `event:` line first when the API names its events."""
    payload = b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"
    return b"event: " + event.encode() + b"\n" + payload if event else payload


@dataclass(frozen=True)
class ServerEvent:
    event: str | None
    data: str


class SseDecoder:
    """Incremental server-sent-event parser: bytes in any pieces -> complete events (blank-line framed)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        self._buffer += chunk
        events: list[ServerEvent] = []
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            text = line.rstrip(b"\r").decode("utf-8", "replace")
            if not text:
                if self._data:
                    events.append(ServerEvent(self._event, "\n".join(self._data)))
                self._event, self._data = None, []
            elif text.startswith("event:"):
                self._event = text[6:].strip()
            elif text.startswith("data:"):
                self._data.append(text[5:].removeprefix(" "))
        return events


def parse_data(event: ServerEvent) -> dict[str, Any] | None:
    """The event's JSON object, or None when its data is not one."""
    try:
        data = json.loads(event.data)
    except (ValueError, RecursionError):  # an upstream event nested past the recursion limit is not one
        return None
    return data if isinstance(data, dict) else None
