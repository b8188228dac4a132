"""The one place where Deja's error tree becomes OpenAI-shaped HTTP errors."""

from __future__ import annotations

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


def to_response(exc: DejaError) -> JSONResponse:
    for cls, status, kind in _STATUS:
        if isinstance(exc, cls):
            param = exc.param if isinstance(exc, BadRequest) else None
            return JSONResponse(error_body(str(exc), kind, param), status_code=status)
    return JSONResponse(error_body(str(exc), "server_error"), status_code=500)


def install(app: FastAPI) -> None:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc)

    app.add_exception_handler(DejaError, handle)
