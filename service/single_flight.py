"""Single-flight: identical requests (same exact key, so same namespace and parameters) that arrive while one of
them is upstream wait for that one's answer instead of each going upstream.

Per process: replicas do not see each other's flights (a burst spread over N replicas makes up to N upstream calls).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SharedAnswer:
    """What a leader hands its followers: the answer as stored (the API's own JSON) and its entry, if stored."""

    body: dict[str, Any]
    entry_id: int | None


class Flight:
    """One request upstream for a key. It settles exactly once: with its answer when that answer is one the cache
    would store, else with None (an upstream error, a cut stream, an answer not worth storing)."""

    def __init__(self, key: str, started: float, on_settle: Callable[[Flight], None]) -> None:
        self.key = key
        self.started = started
        self._on_settle = on_settle
        self._done = asyncio.Event()
        self._answer: SharedAnswer | None = None
        self.waiting = 0  # followers waiting now

    @property
    def settled(self) -> bool:
        return self._done.is_set()

    def settle(self, answer: SharedAnswer | None) -> None:
        """First call wins; later calls (the leader's clean-up path) are no-ops."""
        if self._done.is_set():
            return
        self._answer = answer
        self._done.set()
        self._on_settle(self)

    async def wait(self, timeout: float) -> SharedAnswer | None:
        """The leader's answer, None when it has none to share; `TimeoutError` after `timeout` seconds."""
        self.waiting += 1
        try:
            async with asyncio.timeout(timeout):
                await self._done.wait()
        finally:
            self.waiting -= 1
        return self._answer


class SingleFlight:
    """The flights of one process, by exact key. Not thread-safe: used from the event loop only.

    A flight older than `max_age` seconds is ignored and replaced: its leader was lost without settling (a
    streamed response whose client went away before the first byte never runs the relay that settles it)."""

    def __init__(self, max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self._clock = clock
        self._flights: dict[str, Flight] = {}

    def __len__(self) -> int:
        return len(self._flights)

    @property
    def waiting(self) -> int:
        """Followers waiting now, over all flights."""
        return sum(flight.waiting for flight in self._flights.values())

    def follow(self, key: str) -> Flight | None:
        """The live flight for `key`, if one is upstream now."""
        flight = self._flights.get(key)
        if flight is None or flight.settled:
            return None
        if self._clock() - flight.started > self.max_age:
            del self._flights[key]
            return None
        return flight

    def lead(self, key: str) -> Flight:
        """A new flight for `key`; followers find it until it settles."""
        flight = Flight(key, self._clock(), self._forget)
        self._flights[key] = flight
        return flight

    def _forget(self, flight: Flight) -> None:
        if self._flights.get(flight.key) is flight:
            del self._flights[flight.key]
