"""One request after parsing (`Exchange`): its API, what the caller sent, where it lives in the cache; and reading
a request body within the size limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from index.records import Verdict
from index.request.keys import CacheKey, LookupMode
from service.dialects import Dialect
from service.errors import PayloadTooLarge
from service.requests import CacheDirectives


@dataclass(frozen=True)
class Exchange:
    """One request after parsing: its API, what the caller sent, and where it lives in the cache."""

    request_id: str
    dialect: Dialect
    raw: bytes
    body: dict[str, Any]
    key: CacheKey
    directives: CacheDirectives
    headers: dict[str, str]
    started: float
    # What each stage of this request took, in ms (`Server-Timing`, `deja_stage_seconds`): the gateway adds to it.
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return self.dialect.streams(self.body)

    @property
    def storable(self) -> bool:
        return self.key.mode is not LookupMode.BYPASS and self.directives.store

    @property
    def coalesces(self) -> bool:
        """Whether it may share an identical request's trip upstream; `no-cache`, `no-store` and `max-age=0`
        (nothing may be served from the cache) opt out."""
        return self.storable and self.directives.lookup and self.directives.max_age != 0

    @property
    def forward_verdict(self) -> Verdict:
        """What a request answered upstream counts as: a miss when its answer may be stored, else a bypass."""
        return Verdict.MISS if self.storable else Verdict.BYPASS


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"Request body of {declared} bytes exceeds the limit of {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"Request body exceeds the limit of {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)
