"""The HTTP layer's errors, and the one place where Deja's error tree becomes HTTP errors: status and kind
here, the body in the shape of the API the route speaks (OpenAI's by default, Anthropic's on its routes; see
`service.dialects`)."""

from __future__ import annotations

from collections.abc import Callable

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


# Renders an error body: (status, kind, message, param) -> JSON object.
ErrorShape = Callable[[int, str, str, "str | None"], dict[str, object]]


def openai_shape(status: int, kind: str, message: str, param: str | None = None) -> dict[str, object]:
    return error_body(message, kind, param)


def to_response(exc: DejaError, shape: ErrorShape = openai_shape) -> JSONResponse:
    if isinstance(exc, HttpError):
        param = exc.param if isinstance(exc, BadRequest) else None
        return JSONResponse(shape(exc.status, exc.kind, str(exc), param), status_code=exc.status)
    if isinstance(exc, Overloaded):  # answered like an overloaded upstream: the client retries later
        return JSONResponse(shape(503, "server_overloaded", str(exc), None), status_code=503,
                            headers={"Retry-After": str(exc.retry_after_seconds)})
    if isinstance(exc, StoreUnavailable):
        return JSONResponse(shape(503, "service_unavailable", str(exc), None), status_code=503)
    return JSONResponse(shape(500, "server_error", str(exc), None), status_code=500)


def install(app: FastAPI, shape_for: Callable[[Request], ErrorShape] = lambda _request: openai_shape) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc, shape_for(request))

    app.add_exception_handler(DejaError, handle)
