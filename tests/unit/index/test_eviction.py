"""LRU eviction keeps a running entry count: a full count only on start and every `recount_seconds`."""

from __future__ import annotations

from pathlib import Path

from index.cache import Cache
from index.maintenance import Maintainer
from index.request.keys import build_key
from support.caches import ANSWER, chat_body, sqlite_cache


def store(cache: Cache, text: str) -> int:
    entry_id = cache.store_answer(build_key("ns", chat_body(text)), ANSWER)
    assert entry_id is not None
    return entry_id


def test_running_count_follows_inserts_and_deletes_without_recounting(tmp_path: Path) -> None:
    cache = sqlite_cache(tmp_path / "db.sqlite")
    first = [store(cache, f"question number {i}") for i in range(4)]
    base = cache.store.count_mark()
    assert base.total == 4

    cache.store.delete(first[:2], 1.0)  # two counted entries go
    late = store(cache, "a later question")
    cache.store.delete([late], 2.0)  # inserted and deleted since the mark: in neither count
    store(cache, "another later question")

    assert cache.store.count_mark(base).total == cache.store.count() == 3


def test_eviction_caps_entries_with_one_full_count(tmp_path: Path) -> None:
    now = [100.0]
    cache = sqlite_cache(tmp_path / "db.sqlite")
    maintainer = Maintainer(cache, max_entries=3, clock=lambda: now[0], recount_seconds=1000.0)
    for round_ in range(3):
        for i in range(2):
            store(cache, f"round {round_} question {i}")
            now[0] += 1
        maintainer.evict()
        assert cache.store.count() == min(3, 2 * (round_ + 1))

    assert maintainer.full_counts == 1 and maintainer.evictions == 3
    now[0] += 1000.0
    assert maintainer.entry_count() == 3 and maintainer.full_counts == 2  # the periodic re-count
