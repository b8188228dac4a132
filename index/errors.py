"""The one error tree of Deja; `service.errors` maps it to OpenAI-shaped HTTP errors in one place.

    DejaError
    ├── BadRequest            the caller sent something we cannot parse or validate (400)
    ├── NotFound              an id the caller named does not exist (404)
    ├── Unauthorized          missing or wrong admin token (401)
    ├── StoreUnavailable      SQL or Redis failed; callers degrade to a counted miss
    ├── Overloaded            a bounded queue (embedding) is full: answered 503 with Retry-After
    ├── UpstreamError         the upstream could not be reached (502)
    │   └── UpstreamTimeout   the upstream did not answer in time (504)
    ├── SchemaMismatch        the SQL schema is not the one this build knows
    └── DatasetError          a dataset line is malformed (file, line, problem)
"""

from __future__ import annotations


class DejaError(Exception):
    """Base of every error Deja raises on purpose."""


class BadRequest(DejaError):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class NotFound(DejaError):
    pass


class Unauthorized(DejaError):
    pass


class StoreUnavailable(DejaError):
    pass


class Overloaded(DejaError):
    """Back-pressure: try again after `retry_after_seconds` (sent as `Retry-After`)."""

    def __init__(self, message: str, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class UpstreamError(DejaError):
    pass


class UpstreamTimeout(UpstreamError):
    pass


class SchemaMismatch(DejaError):
    pass


class DatasetError(DejaError):
    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem
