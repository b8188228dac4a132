"""A relayed stream as the gateway sees it: the bytes of an API's events arriving in chunks that cut across
events, fed to a dialect's accumulator."""

from __future__ import annotations

from collections.abc import Iterable

from service.dialects.base import Accumulator, Dialect


def fed(dialect: Dialect, events: Iterable[bytes], piece: int) -> Accumulator:
    """The dialect's accumulator after it was fed the joined `events` in chunks of `piece` bytes."""
    acc = dialect.accumulator()
    raw = b"".join(events)
    for i in range(0, len(raw), piece):
        acc.feed(raw[i:i + piece])
    return acc
