"""Entry store: the SQL record of every cached completion (SQLite by default, PostgreSQL by URL)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, create_engine, delete, event, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from index.embedder import Vector
from index.errors import StoreUnavailable
from index.records import CacheEntry, StoredEntry
from index.schema import entries, metadata


@dataclass(frozen=True)
class IndexedVector:
    """What the HNSW index needs of an entry to rebuild itself."""

    entry_id: int
    context_key: str
    vector: Vector
    expires_at: float | None


def make_engine(url: str) -> Engine:
    """Engine for `url`; SQLite files get WAL and their parent folder."""
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, pool_pre_ping=True, future=True)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn, _record):  # type: ignore[no-untyped-def]
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

    return engine


def _row_to_entry(row: Row[tuple[object, ...]]) -> StoredEntry:
    m = row._mapping
    return StoredEntry(
        entry_id=int(m["id"]),
        namespace=str(m["namespace"]),
        context_key=str(m["context_key"]),
        model=str(m["model"]),
        prompt=str(m["prompt"]),
        response=json.loads(str(m["response"])),
        created_at=float(m["created_at"]),
        expires_at=None if m["expires_at"] is None else float(m["expires_at"]),
        hits=int(m["hits"] or 0),
    )


class EntryStore:
    """All SQL access for entries. Every database failure surfaces as `StoreUnavailable`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create_schema(self) -> None:
        try:
            metadata.create_all(self.engine)
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot create schema: {exc}") from exc

    def add(self, entry: CacheEntry) -> int:
        """Insert `entry`; when its exact key exists already, replace it in place and keep its id."""
        values = {
            "namespace": entry.namespace,
            "exact_key": entry.exact_key,
            "context_key": entry.context_key,
            "model": entry.model,
            "prompt": entry.prompt,
            "vector": None if entry.vector is None else np.asarray(entry.vector, np.float32).tobytes(),
            "response": json.dumps(entry.response, separators=(",", ":")),
            "created_at": entry.created_at,
            "expires_at": entry.expires_at,
            "hits": 0,
        }
        try:
            with self.engine.begin() as conn:
                try:
                    with conn.begin_nested():
                        result = conn.execute(insert(entries).values(**values))
                    return int(result.inserted_primary_key[0])  # type: ignore[index]
                except IntegrityError:
                    conn.execute(update(entries).where(entries.c.exact_key == entry.exact_key).values(**values))
                    found = conn.execute(select(entries.c.id).where(entries.c.exact_key == entry.exact_key))
                    return int(found.scalar_one())
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot store entry: {exc}") from exc

    def get(self, entry_id: int) -> StoredEntry | None:
        return self._one(select(entries).where(entries.c.id == entry_id))

    def get_by_exact(self, exact_key: str) -> StoredEntry | None:
        return self._one(select(entries).where(entries.c.exact_key == exact_key))

    def _one(self, query: object) -> StoredEntry | None:
        try:
            with self.engine.connect() as conn:
                row = conn.execute(query).first()  # type: ignore[call-overload]
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot read entry: {exc}") from exc
        return None if row is None else _row_to_entry(row)

    def vectors(self, after_id: int = 0, batch: int = 5000) -> Iterator[IndexedVector]:
        """Every entry with a vector and id > `after_id`, in id order (for index rebuild and catch-up)."""
        last = after_id
        while True:
            query = (
                select(entries.c.id, entries.c.context_key, entries.c.vector, entries.c.expires_at)
                .where(entries.c.id > last, entries.c.vector.is_not(None))
                .order_by(entries.c.id)
                .limit(batch)
            )
            try:
                with self.engine.connect() as conn:
                    rows = conn.execute(query).all()
            except SQLAlchemyError as exc:
                raise StoreUnavailable(f"cannot read vectors: {exc}") from exc
            for row in rows:
                yield IndexedVector(
                    int(row.id), str(row.context_key), np.frombuffer(row.vector, dtype=np.float32), row.expires_at
                )
            if len(rows) < batch:
                return
            last = int(rows[-1].id)

    def record_hits(self, entry_ids: Sequence[int], at: float) -> None:
        if not entry_ids:
            return
        try:
            with self.engine.begin() as conn:
                for entry_id in entry_ids:
                    conn.execute(
                        update(entries)
                        .where(entries.c.id == entry_id)
                        .values(hits=entries.c.hits + 1, last_hit_at=at)
                    )
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot record hits: {exc}") from exc

    def delete(self, entry_ids: Sequence[int]) -> list[str]:
        """Delete entries; returns their exact keys so the exact tier can drop them too."""
        if not entry_ids:
            return []
        try:
            with self.engine.begin() as conn:
                keys = conn.execute(select(entries.c.exact_key).where(entries.c.id.in_(entry_ids))).scalars()
                found = [str(k) for k in keys]
                conn.execute(delete(entries).where(entries.c.id.in_(entry_ids)))
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot delete entries: {exc}") from exc
        return found

    def count(self) -> int:
        try:
            with self.engine.connect() as conn:
                return int(conn.execute(select(func.count()).select_from(entries)).scalar_one())
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"cannot count entries: {exc}") from exc
