"""Strict JSON decoding of request bodies: UTF-8 only, bounded nesting, no lone surrogates; and the body of an
API request read as one JSON object and validated against its schema (`validate`).

Every JSON body Deja reads goes through `decode_json` (the chat route directly, the FastAPI model routes
through `JsonBodyRoute`), so hostile bodies become a 400 before any recursion or any write can fail on them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np
from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from service.errors import BadRequest

# Far below the ~970 levels where Python's recursive JSON decoder and encoder give up; real chat bodies
# (messages, content parts, tool JSON schemas) stay well under 30.
MAX_JSON_DEPTH = 128

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_depth(raw: bytes) -> int:
    """Deepest nesting of arrays and objects in `raw`, without recursion (brackets inside strings ignored)."""
    if raw.count(b"[") + raw.count(b"{") == 0:
        return 0
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def decode_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value of a request body, or `BadRequest` saying what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"The request body is not valid UTF-8 (byte {exc.start}).") from exc
    if raw.count(b"[") + raw.count(b"{") > max_depth and json_depth(raw) > max_depth:
        raise BadRequest(f"The JSON body is nested more than {max_depth} levels deep.")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BadRequest(f"We could not parse the JSON body of your request: {exc}") from exc
    if _SURROGATE_ESCAPE.search(text):  # escaped surrogates: a pair is text, a lone half is not
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadRequest("The JSON body contains a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF).") \
                from exc
    return value


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return True  # FastAPI parses an untyped body as JSON too
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class JsonBodyRoute(APIRoute):
    """An `APIRoute` whose JSON body is checked by `decode_json` before FastAPI parses it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            if _is_json(request.headers.get("content-type")):
                body = await request.body()  # cached on the request: FastAPI reads the same bytes
                if body:
                    decode_json(body)
            return await handler(request)

        return checked


def load_object(raw: bytes) -> dict[str, Any]:
    """A JSON object body, read strictly (UTF-8, bounded depth, no lone surrogates: `decode_json`)."""
    body = decode_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def validate(schema: type[BaseModel], raw: bytes) -> dict[str, Any]:
    """Parse and validate against `schema`; the body is returned as sent (the key hashes what was meant)."""
    body = load_object(raw)
    try:
        schema.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"])
        raise BadRequest(f"Invalid value for '{param}': {first['msg']}", param=param) from exc
    return body
