"""Fixtures shared by the unit tests: one small judge per session, and single-threaded native pools."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_limits

from index.judge import pair_model
from index.judge.model import Judge
from support.judges import small_judge


@pytest.fixture(scope="session", autouse=True)
def _one_native_thread() -> Iterator[None]:
    # scikit-learn's OpenMP workers spin while they wait; on a busy 2-core machine a refit of a few hundred
    # rows then takes tens of seconds instead of well under one. The unit tests' data is tiny: one thread.
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(autouse=True)
def _no_model_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit suite loads no model file: the pair model is a fake through its seam (`support.judges.FixedPair`,
    which `support.inprocess` passes by default); a test that reaches the real one fails here."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a unit test loaded the pair model's file; pass support.judges.FixedPair")

    monkeypatch.setattr(pair_model.PairModel, "__init__", refuse)


@pytest.fixture(scope="session")
def small_prior() -> Judge:
    """A prior judge fitted once per session on near-twin intents (`support.judges`), not the shipped one."""
    return small_judge()
