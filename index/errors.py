"""The one error tree of Deja. Each layer declares the errors it raises; `service.errors` maps the tree to
OpenAI-shaped HTTP errors in one place.

    DejaError                      (here)
    ├── StoreUnavailable           SQL or Redis failed; callers degrade to a counted miss
    ├── Overloaded                 a bounded queue (embedding) is full: 503 with Retry-After
    ├── SchemaMismatch             the SQL schema is not the one this build knows
    ├── SecretMismatch             the database belongs to replicas with another DEJA_NAMESPACE_SECRET
    ├── VectorIndexUnavailable     DEJA_VECTOR_INDEX=pgvector on a database without (usable) pgvector
    ├── HttpError                  (service.errors) the HTTP layer's errors, each with its status
    │   ├── BadRequest             the caller sent something we cannot parse or validate (400)
    │   │   └── PayloadTooLarge    the body is over the limit (413)
    │   ├── Unauthorized           missing or wrong admin token (401)
    │   ├── NotFound               an id the caller named does not exist (404)
    │   └── UpstreamError          the upstream could not be reached or broke off (502)
    │       └── UpstreamTimeout    the upstream did not answer in time (504)
    └── DatasetError               (eval.datasets) a dataset line is malformed (file, line, problem)
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.exc import SQLAlchemyError


class DejaError(Exception):
    """Base of every error Deja raises on purpose."""


class StoreUnavailable(DejaError):
    pass


class Overloaded(DejaError):
    """Back-pressure: try again after `retry_after_seconds` (sent as `Retry-After`)."""

    def __init__(self, message: str, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class SchemaMismatch(DejaError):
    pass


class SecretMismatch(DejaError):
    """This replica's namespace secret is not the one the database was written with: its namespaces would never
    meet the other replicas' entries, so it refuses to start."""


class VectorIndexUnavailable(DejaError):
    """The configured vector index cannot work on this database (no pgvector, not allowed, other dimensions)."""


class store_errors:
    """Turn a database failure inside the block into `StoreUnavailable("cannot <action>: ...")`.

    A class rather than `@contextmanager` so type checkers know it never swallows an exception.
    """

    def __init__(self, action: str) -> None:
        self.action = action

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(exc, SQLAlchemyError):
            raise StoreUnavailable(f"cannot {self.action}: {exc}") from exc
