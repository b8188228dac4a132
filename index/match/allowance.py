"""The labelling allowance: the extra upstream calls labelling may make in any hour (`DEJA_AUDIT_CALLS_PER_HOUR`),
one per deployment. `Allowance` is the seam: `HourlyAllowance` keeps it in memory (one process: `eval replay --learn`,
tests), `index.storage.allowance.SqlAllowance` in the shared store, so N replicas spend it once between them."""

from __future__ import annotations

import threading
from collections import deque
from typing import Protocol

HOUR = 3600.0


class Allowance(Protocol):
    """Takes calls from the last hour's allowance."""

    def take(self, calls: int, now: float, reserve: int = 0) -> bool:
        """Take `calls` at wall-clock `now`, leaving at least `reserve` calls of the hour untaken; False (nothing
        taken) when the last hour has no room for them."""
        ...


class HourlyAllowance:
    """`calls_per_hour` calls in any sliding hour, in this process; thread-safe."""

    def __init__(self, calls_per_hour: int) -> None:
        self.calls_per_hour = calls_per_hour
        self._taken: deque[float] = deque()
        self._lock = threading.Lock()

    def take(self, calls: int, now: float, reserve: int = 0) -> bool:
        with self._lock:
            while self._taken and now - self._taken[0] >= HOUR:
                self._taken.popleft()
            if len(self._taken) + calls + reserve > self.calls_per_hour:
                return False
            self._taken.extend([now] * calls)
            return True
