"""Fair share of the CPU between tenants: at most N heavy requests in flight per namespace while other
namespaces have requests in flight (`DEJA_HEAVY_REQUESTS_PER_NAMESPACE`, default half the usable cores). Heavy
is a semantic lookup (embedding, judging) or a large body (over `LARGE_BODY_BYTES`: parsing, hashing and storing
it costs CPU whatever the decision). Beyond its share, a semantic lookup is matched exactly only (never embedded;
`X-Deja-Policy: exact_only: namespace busy`) and a large body is refused with 429 and Retry-After, so other
namespaces never wait behind one. A namespace alone on the gateway (no other namespace's request in flight or
ended within `RECENT_SECONDS`) is never limited: the share only divides what is contended. Used from the event
loop only (no lock)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

BUSY_REASON = "namespace busy"
# A body larger than this is heavy by itself (a 78 KB prompt costs milliseconds of parsing and storing).
LARGE_BODY_BYTES = 64 * 1024
# A namespace whose last request ended this recently still counts as present: a client sending one request after
# another is never in flight between two of them, yet it is waiting for its share all the same.
RECENT_SECONDS = 1.0
_PRUNE_EVERY = 256


def default_share(cores: int) -> int:
    """Heavy requests one namespace may have in flight beside others: half the cores (at least 1)."""
    return max(1, cores // 2)


def _take(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _give(counts: dict[str, int], key: str) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]  # idle namespaces leave no trace: the maps stay as small as the load


class NamespaceGate:
    """Counts requests (`active`) and heavy requests (`enter`) in flight per namespace."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.limit = limit
        self._clock = clock
        self._busy: dict[str, int] = {}
        self._active: dict[str, int] = {}
        self._total = 0
        self._seen: dict[str, float] = {}  # namespace -> when its last request ended
        self._ended = 0

    def in_flight(self, namespace: str) -> int:
        """Heavy requests of `namespace` in flight."""
        return self._busy.get(namespace, 0)

    def contended(self, namespace: str) -> bool:
        """Another namespace has a request in flight, or had one that ended within `RECENT_SECONDS`."""
        if self._total > self._active.get(namespace, 0):
            return True
        now = self._clock()
        return any(other != namespace and now - ended < RECENT_SECONDS for other, ended in self._seen.items())

    @contextmanager
    def active(self, namespace: str) -> Iterator[None]:
        """Marks one request of `namespace` (heavy or not) in flight for the block."""
        _take(self._active, namespace)
        self._total += 1
        try:
            yield
        finally:
            self._total -= 1
            _give(self._active, namespace)
            self._remember(namespace)

    def _remember(self, namespace: str) -> None:
        now = self._clock()
        self._seen[namespace] = now
        self._ended += 1
        if self._ended % _PRUNE_EVERY == 0:  # the map holds only recent namespaces
            self._seen = {ns: t for ns, t in self._seen.items() if now - t < RECENT_SECONDS}

    @contextmanager
    def enter(self, namespace: str) -> Iterator[bool]:
        """Yields True, holding a heavy slot until the block ends, if `namespace` is under its share or no other
        namespace has a request in flight; else False."""
        if self._busy.get(namespace, 0) >= self.limit and self.contended(namespace):
            yield False
            return
        _take(self._busy, namespace)
        try:
            yield True
        finally:
            _give(self._busy, namespace)
