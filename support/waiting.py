"""Waiting for a condition instead of sleeping for a guessed time (replicas catch up every
`DEJA_SYNC_INTERVAL_SECONDS`, labels arrive from background tasks)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 10.0, interval: float = 0.05) -> T:
    """Call `check` until it returns something truthy or `timeout` seconds pass; returns its last result (falsy
    on a timeout, so `assert wait_for(...)` fails with the condition unmet)."""
    deadline = time.monotonic() + timeout
    while not (result := check()) and time.monotonic() < deadline:
        time.sleep(interval)
    return result
