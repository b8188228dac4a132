"""Fixtures shared by the unit tests: single-threaded native pools."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="session", autouse=True)
def _one_native_thread() -> Iterator[None]:
    # scikit-learn's OpenMP workers spin while they wait; on a busy 2-core machine a refit of a few hundred
    # rows then takes tens of seconds instead of well under one. The unit tests' data is tiny: one thread.
    with threadpool_limits(limits=1):
        yield
