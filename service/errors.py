"""The one place where Deja's error tree becomes HTTP errors: status and kind here, the body in the shape of the
API the route speaks (OpenAI's by default, Anthropic's on its routes; see `service.dialects`)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from index.errors import (
    BadRequest,
    DejaError,
    NotFound,
    StoreUnavailable,
    Unauthorized,
    UpstreamError,
    UpstreamTimeout,
)


class PayloadTooLarge(BadRequest):
    pass


_STATUS: list[tuple[type[DejaError], int, str]] = [
    (PayloadTooLarge, 413, "invalid_request_error"),
    (BadRequest, 400, "invalid_request_error"),
    (Unauthorized, 401, "authentication_error"),
    (NotFound, 404, "not_found_error"),
    (UpstreamTimeout, 504, "upstream_timeout"),
    (UpstreamError, 502, "upstream_error"),
    (StoreUnavailable, 503, "service_unavailable"),
]


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# Renders an error body: (status, kind, message, param) -> JSON object.
ErrorShape = Callable[[int, str, str, "str | None"], dict[str, object]]


def openai_shape(status: int, kind: str, message: str, param: str | None = None) -> dict[str, object]:
    return error_body(message, kind, param)


def to_response(exc: DejaError, shape: ErrorShape = openai_shape) -> JSONResponse:
    for cls, status, kind in _STATUS:
        if isinstance(exc, cls):
            param = exc.param if isinstance(exc, BadRequest) else None
            return JSONResponse(shape(status, kind, str(exc), param), status_code=status)
    return JSONResponse(shape(500, "server_error", str(exc), None), status_code=500)


def install(app: FastAPI, shape_for: Callable[[Request], ErrorShape] = lambda _request: openai_shape) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc, shape_for(request))

    app.add_exception_handler(DejaError, handle)
