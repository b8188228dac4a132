"""Validation of incoming chat-completion bodies and of the caller's cache directives."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from service.errors import BadRequest


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
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"We could not parse the JSON body of your request: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    try:
        ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"])
        raise BadRequest(f"Invalid value for '{param}': {first['msg']}", param=param) from exc
    return body


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
            try:
                max_age = max(0.0, float(part.split("=", 1)[1]))
            except ValueError as exc:
                raise BadRequest(f"Invalid Cache-Control max-age: {part!r}", param="Cache-Control") from exc
    return CacheDirectives(lookup="no-cache" not in parts, store="no-store" not in parts, max_age=max_age)


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else authorization.strip()
