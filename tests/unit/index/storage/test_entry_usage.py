"""An entry keeps what its upstream call cost, by token kind (migration 0014); entries stored before it read back
with no usage."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from index.pricing.usage import Usage
from index.records import CacheEntry
from index.storage.entries import EntryStore, make_engine
from index.storage.migrate import upgrade


def entry(exact: str, usage: Usage | None) -> CacheEntry:
    return CacheEntry(namespace="ns", exact_key=exact, context_key="c", model="gpt-4o", prompt="p",
                      response={"usage": {}}, vector=None, created_at=1.0, usage=usage)


def test_an_entry_keeps_its_usage_by_kind_and_older_entries_have_none(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'deja.db'}")
    upgrade(engine, "0013")
    with engine.begin() as conn:  # an entry stored by a build before usage was kept
        conn.execute(sa.text("INSERT INTO deja_entries (namespace, exact_key, context_key, model, prompt, response, "
                             "created_at, hits) VALUES ('ns', 'old', 'c', 'gpt-4o', 'p', '{}', 1.0, 0)"))
    upgrade(engine)
    store = EntryStore(engine)
    new = store.add(entry("new", Usage(200, 1000, 100, 300)))
    unreported = store.add(entry("none", None))
    old = store.get_by_exact("old")
    assert old is not None and store.get(old.entry_id) is not None
    assert store.get(old.entry_id).usage is None  # type: ignore[union-attr]
    assert store.get(new).usage == Usage(200, 1000, 100, 300)  # type: ignore[union-attr]
    assert store.get(unreported).usage is None  # type: ignore[union-attr]
    engine.dispose()
