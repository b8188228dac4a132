"""The HTTP layer's errors, and the one place where Deja's error tree becomes OpenAI-shaped HTTP errors."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from index.errors import DejaError, Overloaded, StoreUnavailable


class HttpError(DejaError):
    """An error of the HTTP layer; `_STATUS` says how each kind is answered."""


class BadRequest(HttpError):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class PayloadTooLarge(BadRequest):
    pass


class Unauthorized(HttpError):
    pass


class NotFound(HttpError):
    pass


class UpstreamError(HttpError):
    pass


class UpstreamTimeout(UpstreamError):
    pass


# Most specific first: the first class an error is an instance of decides its status and OpenAI error type.
_STATUS: list[tuple[type[DejaError], int, str]] = [
    (PayloadTooLarge, 413, "invalid_request_error"),
    (BadRequest, 400, "invalid_request_error"),
    (Unauthorized, 401, "authentication_error"),
    (NotFound, 404, "not_found_error"),
    (UpstreamTimeout, 504, "upstream_timeout"),
    (UpstreamError, 502, "upstream_error"),
    (Overloaded, 503, "server_overloaded"),
    (StoreUnavailable, 503, "service_unavailable"),
]


def status_of(exc: DejaError) -> tuple[int, str]:
    """(HTTP status, OpenAI error type) of an error; anything unmapped is a 500 `server_error`."""
    return next(((status, kind) for cls, status, kind in _STATUS if isinstance(exc, cls)), (500, "server_error"))


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def to_response(exc: DejaError) -> JSONResponse:
    status, kind = status_of(exc)
    param = exc.param if isinstance(exc, BadRequest) else None
    # Back-pressure is answered like an overloaded upstream: the client retries after `Retry-After`.
    headers = {"Retry-After": str(exc.retry_after_seconds)} if isinstance(exc, Overloaded) else None
    return JSONResponse(error_body(str(exc), kind, param), status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc)

    app.add_exception_handler(DejaError, handle)
