"""Lifetimes of 0 are never kept; one bad decision-log row does not cost the others."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from index.match.outcome import Reason
from index.records import CachedResponse
from index.request.keys import build_key
from index.storage.decision_log import DecisionLog, DecisionRecord
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import MAX_TTL_SECONDS, LruExactCache, redis_ttl
from tests.unit.index.test_cache import answer, body, make_cache


@pytest.mark.parametrize(("ttl", "expected"), [
    (None, None), (0.2, 1), (1.0, 1), (59.5, 60), (1e300, MAX_TTL_SECONDS), (math.inf, MAX_TTL_SECONDS)])
def test_redis_ttl_is_whole_positive_seconds(ttl: float | None, expected: int | None) -> None:
    assert redis_ttl(ttl) == expected


@pytest.mark.parametrize("ttl", [0.0, -1.0, math.nan])
def test_redis_ttl_of_zero_is_never_no_expiry(ttl: float) -> None:
    with pytest.raises(ValueError):
        redis_ttl(ttl)


def test_lru_put_with_zero_ttl_keeps_nothing() -> None:
    exact = LruExactCache()
    exact.put("k", CachedResponse(1, {"a": 1}), 60)
    exact.put("k", CachedResponse(2, {"a": 2}), 0)
    assert exact.get("k") is None


def test_answer_with_zero_lifetime_is_not_stored(tmp_path: Path) -> None:
    cache, _ = make_cache(tmp_path)
    key = build_key("ns", body("What is a zero lifetime?"))
    assert cache.store_answer(key, answer("gone"), ttl_seconds=0) is None
    assert cache.lookup(key).response is None


def record(request_id: str, prompt: str = "p") -> DecisionRecord:
    return DecisionRecord(request_id, "ns", "m", prompt, 1, "c", 0.9, 0.8, (), "hit", Reason.HIT, None, 1.0)


def test_one_bad_row_does_not_drop_the_batch(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    EntryStore(engine).create_schema()
    log = DecisionLog(engine)
    log.record([record("dup")])
    log.record([record("a"), record("dup", "again"), record("b")])  # "dup" violates the primary key
    assert log.get("a") is not None and log.get("b") is not None
    assert log.get("dup") == record("dup")
