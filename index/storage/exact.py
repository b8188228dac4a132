"""Exact tier: canonical request hash -> stored completion. In-process LRU here, or Redis shared by replicas
(`index.storage.redis_exact`)."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from index.records import CachedResponse

# Longest expiry handed to Redis (2^31 s, RFC 9111's cap on max-age); Redis refuses expiries past 64-bit ms.
MAX_TTL_SECONDS = 2**31


def redis_ttl(ttl_seconds: float | None) -> int | None:
    """Whole seconds for `SET ... EX`: None = no expiry; 0 or less is never passed (the value is not kept)."""
    if ttl_seconds is None:
        return None
    if math.isnan(ttl_seconds) or ttl_seconds <= 0:
        raise ValueError(f"a TTL of {ttl_seconds} means the value must not be stored")
    return int(min(math.ceil(min(ttl_seconds, MAX_TTL_SECONDS)), MAX_TTL_SECONDS))


class ExactCache(Protocol):
    """Raises `StoreUnavailable` when the backing service fails; callers treat that as a miss."""

    def get(self, key: str) -> CachedResponse | None: ...

    def put(self, key: str, value: CachedResponse, ttl_seconds: float | None) -> None: ...

    def delete(self, key: str) -> None: ...

    def clear(self) -> None: ...


class LruExactCache:
    """Bounded in-process LRU with per-item deadlines."""

    def __init__(self, max_items: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self._items: OrderedDict[str, tuple[CachedResponse, float | None]] = OrderedDict()
        self._max = max_items
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            value, deadline = item
            if deadline is not None and deadline <= self._clock():
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return value

    def put(self, key: str, value: CachedResponse, ttl_seconds: float | None) -> None:
        """`ttl_seconds=None` keeps the value until evicted; 0 or less does not keep it at all."""
        if ttl_seconds is not None and not ttl_seconds > 0:
            self.delete(key)
            return
        with self._lock:
            self._items[key] = (value, None if ttl_seconds is None else self._clock() + ttl_seconds)
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)

    def delete(self, key: str) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
