"""Fair share of the CPU between tenants: at most N heavy requests in flight per namespace while other
namespaces have requests in flight (`DEJA_HEAVY_REQUESTS_PER_NAMESPACE`, default half the usable cores). Heavy
is a semantic lookup (embedding, judging) or a large body (over `LARGE_BODY_BYTES`: parsing, hashing and storing
it costs CPU whatever the decision). Beyond its share, a semantic lookup is matched exactly only (never embedded;
`X-Deja-Policy: exact_only: namespace busy`) and a large body is refused with 429 and Retry-After, so other
namespaces never wait behind one. A namespace alone on the gateway is never limited: the share only divides
what is contended. Used from the event loop only (no lock)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

BUSY_REASON = "namespace busy"
# A body larger than this is heavy by itself (a 78 KB prompt costs milliseconds of parsing and storing).
LARGE_BODY_BYTES = 64 * 1024


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

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.limit = limit
        self._busy: dict[str, int] = {}
        self._active: dict[str, int] = {}
        self._total = 0

    def in_flight(self, namespace: str) -> int:
        """Heavy requests of `namespace` in flight."""
        return self._busy.get(namespace, 0)

    def contended(self, namespace: str) -> bool:
        """Another namespace has a request in flight."""
        return self._total > self._active.get(namespace, 0)

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
