"""Validation of incoming chat-completion bodies and of the caller's cache directives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.errors import BadRequest
from service.json_input import validate

# RFC 9111 §1.2.2: a delta-seconds too large to represent is taken as 2^31 seconds (68 years).
MAX_AGE_CAP = 2**31


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The fields Deja relies on; everything else passes through untouched (and goes into the key)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = None
    n: int | None = Field(None, ge=1, le=128)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    stream_options: dict[str, Any] | None = None


def parse_chat_body(raw: bytes) -> dict[str, Any]:
    """The JSON body as sent (validated, never rewritten): the key hashes what the caller meant."""
    return validate(ChatRequest, raw)


@dataclass(frozen=True)
class CacheDirectives:
    """`Cache-Control` of the request: `no-cache` skips the lookup, `no-store` skips the write."""

    lookup: bool = True
    store: bool = True
    max_age: float | None = None


def parse_cache_control(value: str | None) -> CacheDirectives:
    if not value:
        return CacheDirectives()
    parts = [p.strip().lower() for p in value.split(",") if p.strip()]
    max_age = None
    for part in parts:
        if part.startswith("max-age="):
            max_age = _delta_seconds(part.split("=", 1)[1].strip('"'))
    return CacheDirectives(lookup="no-cache" not in parts, store="no-store" not in parts, max_age=max_age)


def _delta_seconds(value: str) -> float:
    """`max-age` is a non-negative integer (RFC 9111 delta-seconds); inf, nan, -1 or 1e999 are not."""
    if not value.isascii() or not value.isdigit():
        raise BadRequest(f"Invalid Cache-Control max-age {value[:40]!r}: give a whole number of seconds.",
                         param="Cache-Control")
    # Long digit strings are capped before `int()`, which refuses numbers of thousands of digits.
    seconds = int(value) if len(value) <= 12 else MAX_AGE_CAP
    return float(min(seconds, MAX_AGE_CAP))


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else authorization.strip()
