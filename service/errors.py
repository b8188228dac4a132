"""The HTTP layer's errors, and the one place where Deja's error tree becomes OpenAI-shaped HTTP errors."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from index.errors import DejaError, Overloaded, StoreUnavailable


class HttpError(DejaError):
    """An error of the HTTP layer; `status` and `kind` say how it is answered."""

    status = 500
    kind = "server_error"


class BadRequest(HttpError):
    status = 400
    kind = "invalid_request_error"

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class PayloadTooLarge(BadRequest):
    status = 413


class Unauthorized(HttpError):
    status = 401
    kind = "authentication_error"


class NotFound(HttpError):
    status = 404
    kind = "not_found_error"


class UpstreamError(HttpError):
    status = 502
    kind = "upstream_error"


class UpstreamTimeout(UpstreamError):
    status = 504
    kind = "upstream_timeout"


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def to_response(exc: DejaError) -> JSONResponse:
    if isinstance(exc, HttpError):
        param = exc.param if isinstance(exc, BadRequest) else None
        return JSONResponse(error_body(str(exc), exc.kind, param), status_code=exc.status)
    if isinstance(exc, Overloaded):  # answered like an overloaded upstream: the client retries later
        return JSONResponse(error_body(str(exc), "server_overloaded"), status_code=503,
                            headers={"Retry-After": str(exc.retry_after_seconds)})
    if isinstance(exc, StoreUnavailable):
        return JSONResponse(error_body(str(exc), "service_unavailable"), status_code=503)
    return JSONResponse(error_body(str(exc), "server_error"), status_code=500)


def install(app: FastAPI) -> None:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc)

    app.add_exception_handler(DejaError, handle)
