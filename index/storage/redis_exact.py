"""The exact tier in Redis: one server (`redis://`), a Redis Cluster (`redis+cluster://host:port[,host:port...]`)
or a Sentinel-managed primary (`redis+sentinel://host:port[,...]/service[/db]`). Its own module, imported only
when `DEJA_REDIS_URL` is set: redis-py costs a third of a second of start-up the in-process tier does not need."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry
from redis.sentinel import Sentinel

from index import jsonio
from index.errors import StoreUnavailable
from index.records import CachedResponse
from index.storage.exact import redis_ttl


def _hosts(netloc: str) -> list[tuple[str, int]]:
    hosts = []
    for part in netloc.rpartition("@")[2].split(","):
        host, _, port = part.rpartition(":")
        hosts.append((host or "127.0.0.1", int(port or 6379)))
    return hosts


def redis_client(url: str, timeout_seconds: float) -> Any:
    """A client for `url`: `redis://`/`rediss://`/`unix://` as redis-py reads them, `redis+cluster://` seeds
    (any reachable node; the cluster tells the rest), `redis+sentinel://` sentinels and the service name."""
    timeouts = {"socket_timeout": timeout_seconds, "socket_connect_timeout": timeout_seconds}
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password else None
    if parts.scheme == "redis+cluster":
        nodes = [ClusterNode(host, port) for host, port in _hosts(parts.netloc)]  # type: ignore[no-untyped-call]
        # A dead node must not make every request retry for seconds: fail fast, the caller counts a miss.
        return RedisCluster(startup_nodes=nodes, password=password, retry=Retry(NoBackoff(), 1),
                            socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds)
    if parts.scheme == "redis+sentinel":
        service, _, db = parts.path.strip("/").partition("/")
        if not service:
            raise ValueError("redis+sentinel:// URL needs the service name as its path")
        # The connection arguments by name: redis-py types `**connection_kwargs` as Any, but not a spread dict.
        sentinel = Sentinel(_hosts(parts.netloc), sentinel_kwargs=timeouts, password=password,
                            socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds)
        return sentinel.master_for(service, db=int(db or 0))
    return redis.Redis.from_url(url, **timeouts)


class RedisExactCache:
    """Redis-backed exact tier; short socket timeouts so a dead Redis costs milliseconds, not seconds."""

    def __init__(self, url: str, prefix: str = "deja:exact:", timeout_seconds: float = 0.25) -> None:
        self._redis = redis_client(url, timeout_seconds)
        self._cluster = isinstance(self._redis, RedisCluster)
        self._prefix = prefix

    def get(self, key: str) -> CachedResponse | None:
        try:
            raw = self._redis.get(self._prefix + key)
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis get failed: {exc}") from exc
        if raw is None:
            return None
        data = jsonio.loads(raw)
        return CachedResponse(int(data["entry_id"]), data["body"], float(data.get("created_at", 0.0)))

    def put(self, key: str, value: CachedResponse, ttl_seconds: float | None) -> None:
        payload = jsonio.dumps({"entry_id": value.entry_id, "body": value.body, "created_at": value.created_at})
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
            if self._cluster:  # keys live in different slots: one DEL each, pipelined per node by the client
                pipe = self._redis.pipeline()
                for key in keys:
                    pipe.delete(key)
                pipe.execute()
                return
            for start in range(0, len(keys), 500):
                self._redis.delete(*keys[start : start + 500])
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis clear failed: {exc}") from exc
