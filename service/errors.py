"""The HTTP layer's errors, and the one place where errors become HTTP errors: Deja's own tree, FastAPI's request
validation errors and Starlette's HTTP exceptions. Status and kind are decided here; the body takes the shape of
the API the route speaks (OpenAI's by default, Anthropic's on its routes: `service.dialects.error_dialect`).
Every error Deja answers itself says `X-Deja-Cache: error`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from index.errors import DejaError, Overloaded, StoreUnavailable

# `X-Deja-Cache` of a response Deja produced itself (bad request, upstream unreachable, timed out or broken):
# nothing was served from the cache and nothing was stored.
ERROR_VERDICT = "error"


class HttpError(DejaError):
    """An error of the HTTP layer; `status` and `kind` say how it is answered."""

    status = 500
    kind = "server_error"
    # Extra response headers (a 401's `WWW-Authenticate`).
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({})


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
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({"WWW-Authenticate": 'Bearer realm="deja"'})


class Forbidden(HttpError):
    status = 403
    kind = "permission_error"


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


def _json_error(message: str, kind: str, status: int, param: str | None = None,
                headers: dict[str, str] | None = None, shape: ErrorShape = openai_shape) -> JSONResponse:
    return JSONResponse(shape(status, kind, message, param), status_code=status,
                        headers={**(headers or {}), "X-Deja-Cache": ERROR_VERDICT})


def to_response(exc: DejaError, shape: ErrorShape = openai_shape) -> JSONResponse:
    if isinstance(exc, HttpError):
        param = exc.param if isinstance(exc, BadRequest) else None
        return _json_error(str(exc), exc.kind, exc.status, param, headers=dict(exc.headers), shape=shape)
    if isinstance(exc, Overloaded):  # answered like an overloaded upstream: the client retries later
        return _json_error(str(exc), "server_overloaded", 503, headers={"Retry-After": str(exc.retry_after_seconds)},
                           shape=shape)
    if isinstance(exc, StoreUnavailable):
        return _json_error(str(exc), "service_unavailable", 503, shape=shape)
    return _json_error(str(exc), "server_error", 500, shape=shape)


def validation_response(exc: RequestValidationError, shape: ErrorShape = openai_shape) -> JSONResponse:
    """The first problem, named by its location; the offending input is never echoed back."""
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "path", "query", "header")]
    param = ".".join(loc) or None
    message = f"Invalid value for '{param}': {first.get('msg')}" if param else str(first.get("msg"))
    return _json_error(message, BadRequest.kind, BadRequest.status, param, shape=shape)


_HTTP_KIND = {401: Unauthorized.kind, 403: Forbidden.kind, 429: "rate_limit_error"}


def http_response(exc: HTTPException, shape: ErrorShape = openai_shape) -> JSONResponse:
    """Starlette's own errors (unknown route, wrong method, ...) in the same shape as ours."""
    status = exc.status_code if 400 <= exc.status_code < 600 else 400
    kind = _HTTP_KIND.get(status, BadRequest.kind if status < 500 else HttpError.kind)
    message = "Unknown route." if status == 404 else str(exc.detail)
    return _json_error(message, kind, status, headers=dict(exc.headers or {}), shape=shape)


def install(app: FastAPI, shape_for: Callable[[Request], ErrorShape] = lambda _request: openai_shape) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc, shape_for(request))

    async def handle_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return validation_response(exc, shape_for(request))

    async def handle_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return http_response(exc, shape_for(request))

    app.add_exception_handler(DejaError, handle)
    app.add_exception_handler(RequestValidationError, handle_validation)
    app.add_exception_handler(HTTPException, handle_http)
