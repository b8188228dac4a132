"""Fair share of the CPU between tenants: at most N heavy requests in flight per namespace
(`DEJA_HEAVY_REQUESTS_PER_NAMESPACE`, default half the usable cores). Heavy is a semantic lookup (embedding,
judging) or a large body (over `LARGE_BODY_BYTES`: parsing, hashing, storing it costs CPU whatever the decision).
Beyond its share, a semantic lookup is matched exactly only (never embedded; `X-Deja-Policy: exact_only:
namespace busy`) and a large body is refused with 429 and Retry-After, so other namespaces never wait behind one.
Used from the event loop only (no lock)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

BUSY_REASON = "namespace busy"
# A body larger than this is heavy by itself (a 78 KB prompt costs milliseconds of parsing and storing).
LARGE_BODY_BYTES = 64 * 1024


def default_share(cores: int) -> int:
    """Heavy requests one namespace may have in flight: half the cores (at least 1), so one tenant alone can
    never hold every core."""
    return max(1, cores // 2)


class NamespaceGate:
    """Counts heavy lookups in flight per namespace; `enter` admits up to `limit` of them at once."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.limit = limit
        self._busy: dict[str, int] = {}

    def in_flight(self, namespace: str) -> int:
        return self._busy.get(namespace, 0)

    @contextmanager
    def enter(self, namespace: str) -> Iterator[bool]:
        """Yields True, holding a slot until the block ends, if `namespace` has one free; else False."""
        held = self._busy.get(namespace, 0)
        if held >= self.limit:
            yield False
            return
        self._busy[namespace] = held + 1
        try:
            yield True
        finally:
            left = self._busy[namespace] - 1
            if left:
                self._busy[namespace] = left
            else:
                del self._busy[namespace]  # idle namespaces leave no trace: the map stays as small as the load
