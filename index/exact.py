"""Exact tier: canonical request hash -> stored completion. In-process LRU, or Redis shared by replicas."""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import redis

from index.errors import StoreUnavailable
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


class RedisExactCache:
    """Redis-backed exact tier; short socket timeouts so a dead Redis costs milliseconds, not seconds."""

    def __init__(self, url: str, prefix: str = "deja:exact:", timeout_seconds: float = 0.25) -> None:
        self._redis = redis.Redis.from_url(
            url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds
        )
        self._prefix = prefix

    def get(self, key: str) -> CachedResponse | None:
        try:
            raw = self._redis.get(self._prefix + key)
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis get failed: {exc}") from exc
        if raw is None:
            return None
        data = json.loads(raw)
        return CachedResponse(int(data["entry_id"]), data["body"], float(data.get("created_at", 0.0)))

    def put(self, key: str, value: CachedResponse, ttl_seconds: float | None) -> None:
        payload = json.dumps(
            {"entry_id": value.entry_id, "body": value.body, "created_at": value.created_at}, separators=(",", ":")
        )
        if ttl_seconds is not None and not ttl_seconds > 0:  # 0 is "expire now", never "no expiry"
            self.delete(key)
            return
        try:
            self._redis.set(self._prefix + key, payload, ex=redis_ttl(ttl_seconds))
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis set failed: {exc}") from exc

    def delete(self, key: str) -> None:
        try:
            self._redis.delete(self._prefix + key)
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis delete failed: {exc}") from exc

    def clear(self) -> None:
        try:
            keys = list(self._redis.scan_iter(match=self._prefix + "*", count=1000))
            for start in range(0, len(keys), 500):
                self._redis.delete(*keys[start : start + 500])
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis clear failed: {exc}") from exc
