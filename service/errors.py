"""The one place where errors become OpenAI-shaped HTTP errors: Deja's own tree, FastAPI's request validation
errors and Starlette's HTTP exceptions. Every error Deja answers itself says `X-Deja-Cache: error`."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from index.errors import (
    BadRequest,
    DejaError,
    NotFound,
    StoreUnavailable,
    Unauthorized,
    UpstreamError,
    UpstreamTimeout,
)

# `X-Deja-Cache` of a response Deja produced itself (bad request, upstream unreachable, timed out or broken):
# nothing was served from the cache and nothing was stored.
ERROR_VERDICT = "error"


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

_HTTP_KIND = {401: "authentication_error", 403: "permission_error", 404: "invalid_request_error",
              405: "invalid_request_error", 413: "invalid_request_error", 429: "rate_limit_error"}


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _json_error(message: str, kind: str, status: int, param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, kind, param), status_code=status,
                        headers={"X-Deja-Cache": ERROR_VERDICT})


def to_response(exc: DejaError) -> JSONResponse:
    for cls, status, kind in _STATUS:
        if isinstance(exc, cls):
            param = exc.param if isinstance(exc, BadRequest) else None
            return _json_error(str(exc), kind, status, param)
    return _json_error(str(exc), "server_error", 500)


def validation_response(exc: RequestValidationError) -> JSONResponse:
    """The first problem, named by its location; the offending input is never echoed back."""
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "path", "query", "header")]
    param = ".".join(loc) or None
    message = f"Invalid value for '{param}': {first.get('msg')}" if param else str(first.get("msg"))
    return _json_error(message, "invalid_request_error", 400, param)


def http_response(exc: HTTPException) -> JSONResponse:
    status = exc.status_code if 400 <= exc.status_code < 600 else 400
    kind = _HTTP_KIND.get(status, "invalid_request_error" if status < 500 else "server_error")
    message = "Unknown route." if status == 404 else str(exc.detail)
    return JSONResponse(error_body(message, kind), status_code=status,
                        headers={**(exc.headers or {}), "X-Deja-Cache": ERROR_VERDICT})


def install(app: FastAPI) -> None:
    async def handle(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DejaError)
        return to_response(exc)

    async def handle_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return validation_response(exc)

    async def handle_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return http_response(exc)

    app.add_exception_handler(DejaError, handle)
    app.add_exception_handler(RequestValidationError, handle_validation)
    app.add_exception_handler(HTTPException, handle_http)
