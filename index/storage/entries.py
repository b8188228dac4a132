"""Entry store: the SQL record of every cached completion (SQLite by default, PostgreSQL by URL)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.engine import Row, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError

from index import jsonio
from index.embedding.embedder import BUNDLED_MODEL_ID, Vector
from index.errors import StoreUnavailable, store_errors
from index.pricing.usage import Usage
from index.records import CacheEntry, StoredEntry
from index.storage.schema import entries, tombstones


@dataclass(frozen=True)
class IndexedVector:
    """What the HNSW index needs of an entry to rebuild itself."""

    entry_id: int
    scope: str
    vector: Vector
    expires_at: float | None
    embedding_model: str = BUNDLED_MODEL_ID
    namespace: str = ""


@dataclass(frozen=True)
class ReindexRow:
    """An entry whose vectors another embedder made; `context_text` is set for conversations."""

    entry_id: int
    prompt: str
    context_text: str | None


@dataclass(frozen=True)
class Reembedded:
    entry_id: int
    model_id: str
    vector: Vector
    prompt_vector: Vector | None
    context_vector: Vector | None


@dataclass(frozen=True)
class CountMark:
    """A running entry count and the entry id / tombstone sequence it covers."""

    total: int
    max_id: int
    tombstone_seq: int


@dataclass(frozen=True)
class Tombstone:
    """A deleted entry, for replicas to forget it. `seq` orders tombstones (0 when not yet read back)."""

    seq: int
    entry_id: int
    exact_key: str


def make_engine(url: str) -> Engine:
    """Engine for `url`; SQLite files get WAL and their parent folder."""
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    connect_args = {"connect_timeout": 3} if url.startswith("postgresql") else {}
    # A server connection may have died while pooled: ping it on checkout. A SQLite file has no server, and the
    # ping was a query on every lookup's reads.
    # psycopg2 sends an executemany UPDATE (the running totals' rows) in pages, not one round trip per row.
    psycopg2 = url.startswith("postgresql") and make_url(url).get_driver_name() == "psycopg2"
    options = {"executemany_mode": "values_plus_batch"} if psycopg2 else {}
    engine = create_engine(url, pool_pre_ping=not url.startswith("sqlite"), connect_args=connect_args, **options)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn, _record):  # type: ignore[no-untyped-def]
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

    if engine.dialect.name == "postgresql":
        event.listen(engine, "before_cursor_execute", _without_nul, retval=True)
    return engine


def _scrub(value: object) -> object:
    """PostgreSQL text cannot hold NUL: it is stored as U+FFFD (keys are hashes of the original, so exact
    matching is unaffected; only the stored copy of the text differs)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub(v) for v in value)
    return value


def _without_nul(_conn: object, _cursor: object, statement: str, parameters: object, _context: object,
                 _executemany: bool) -> tuple[str, object]:
    return statement, _scrub(parameters)


def _vector(raw: object) -> Vector | None:
    return None if raw is None else np.frombuffer(raw, dtype=np.float32)  # type: ignore[call-overload]


def _blob(vector: Vector | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, np.float32).tobytes()


_SCOPE = func.coalesce(entries.c.scope_key, entries.c.context_key).label("scope")
_MODEL_EXPR = func.coalesce(entries.c.embedding_model, BUNDLED_MODEL_ID)
_MODEL = _MODEL_EXPR.label("embedding_model")


def _row_to_entry(row: Row[tuple[object, ...]]) -> StoredEntry:
    m = row._mapping
    return StoredEntry(
        entry_id=int(m["id"]),
        namespace=str(m["namespace"]),
        context_key=str(m["context_key"]),
        model=str(m["model"]),
        prompt=str(m["prompt"]),
        response=jsonio.loads(str(m["response"])),
        created_at=float(m["created_at"]),
        expires_at=None if m["expires_at"] is None else float(m["expires_at"]),
        hits=int(m["hits"] or 0),
        prompt_vector=_vector(m["prompt_vector"]),
        context_vector=_vector(m["context_vector"]),
        context_text=None if m["context_text"] is None else str(m["context_text"]),
        embedding_model=str(m["embedding_model"] or BUNDLED_MODEL_ID),
        usage=_usage(m),
    )


_USAGE_COLUMNS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")


def _usage(m: Any) -> Usage | None:
    counts = [m.get(name) for name in _USAGE_COLUMNS]
    return None if all(c is None for c in counts) else Usage(*(int(c or 0) for c in counts))


def _usage_values(usage: Usage | None) -> dict[str, int | None]:
    if usage is None:
        return dict.fromkeys(_USAGE_COLUMNS)
    return {"input_tokens": usage.input_tokens, "cached_input_tokens": usage.cached_input_tokens,
            "cache_write_tokens": usage.cache_write_tokens, "output_tokens": usage.output_tokens}


# What a lookup reads of an entry (every column but the index vector), in `_tuple_to_entry`'s order.
_HOT_COLUMNS = ("id", "namespace", "context_key", "model", "prompt", "response", "created_at", "expires_at", "hits",
                "prompt_vector", "context_vector", "context_text", "embedding_model")
_HOT_SELECT = ", ".join(_HOT_COLUMNS)


def _tuple_to_entry(row: tuple[object, ...]) -> StoredEntry:
    (entry_id, namespace, context_key, model, prompt, response, created_at, expires_at, hits, prompt_vector,
     context_vector, context_text, embedding_model) = row
    return StoredEntry(
        entry_id=int(entry_id),  # type: ignore[call-overload]
        namespace=str(namespace),
        context_key=str(context_key),
        model=str(model),
        prompt=str(prompt),
        response=jsonio.loads(str(response)),
        created_at=float(created_at),  # type: ignore[arg-type]
        expires_at=None if expires_at is None else float(expires_at),  # type: ignore[arg-type]
        hits=int(hits or 0),  # type: ignore[call-overload]
        prompt_vector=_vector(prompt_vector),
        context_vector=_vector(context_vector),
        context_text=None if context_text is None else str(context_text),
        embedding_model=str(embedding_model or BUNDLED_MODEL_ID),
    )


def delete_entries(conn: Connection, condition: ColumnElement[bool], at: float) -> list[Tombstone]:
    """Delete the entries matching `condition` inside the caller's transaction, leaving a tombstone for each."""
    rows = conn.execute(select(entries.c.id, entries.c.exact_key).where(condition)).all()
    if not rows:
        return []
    ids = [int(r.id) for r in rows]
    for start in range(0, len(ids), 500):
        conn.execute(delete(entries).where(entries.c.id.in_(ids[start:start + 500])))
    conn.execute(insert(tombstones), [
        {"entry_id": int(r.id), "exact_key": str(r.exact_key), "deleted_at": at} for r in rows])
    return [Tombstone(0, int(r.id), str(r.exact_key)) for r in rows]


class EntryStore:
    """All SQL access for entries. Every database failure surfaces as `StoreUnavailable`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create_schema(self) -> None:
        """Bring an empty database to this build's schema (refuses an unknown one)."""
        from index.storage.migrate import ensure_schema

        with store_errors("create schema"):
            ensure_schema(self.engine)

    def add(self, entry: CacheEntry) -> int:
        """Insert `entry`; when its exact key exists already, replace it in place and keep its id."""
        values = {
            "namespace": entry.namespace,
            "exact_key": entry.exact_key,
            "context_key": entry.context_key,
            "model": entry.model,
            "prompt": entry.prompt,
            "vector": _blob(entry.vector),
            "scope_key": entry.scope_key,
            "prompt_vector": _blob(entry.prompt_vector),
            "context_vector": _blob(entry.context_vector),
            "context_text": entry.context_text,
            "embedding_model": entry.embedding_model,
            "response": jsonio.dumps(entry.response).decode(),
            "created_at": entry.created_at,
            "expires_at": entry.expires_at,
            "hits": 0,
            **_usage_values(entry.usage),
        }
        with store_errors("store entry"), self.engine.begin() as conn:
            try:
                with conn.begin_nested():
                    result = conn.execute(insert(entries).values(**values))
                return int(result.inserted_primary_key[0])  # type: ignore[index]
            except IntegrityError:
                conn.execute(update(entries).where(entries.c.exact_key == entry.exact_key).values(**values))
                found = conn.execute(select(entries.c.id).where(entries.c.exact_key == entry.exact_key))
                return int(found.scalar_one())

    def get(self, entry_id: int) -> StoredEntry | None:
        return self._one(select(entries).where(entries.c.id == entry_id))

    def get_many(self, entry_ids: Sequence[int]) -> dict[int, StoredEntry]:
        """The entries of `entry_ids` that exist, by id, in one query (a lookup's candidates)."""
        if not entry_ids:
            return {}
        ids = [int(i) for i in entry_ids]
        rows = self._hot_read("read entries", f"id IN ({', '.join([self._mark] * len(ids))})", ids)
        return {entry.entry_id: entry for entry in map(_tuple_to_entry, rows)}

    def get_by_exact(self, exact_key: str) -> StoredEntry | None:
        rows = self._hot_read("read entry", f"exact_key = {self._mark}", [exact_key])
        return _tuple_to_entry(rows[0]) if rows else None

    @cached_property
    def _mark(self) -> str:
        """The DB-API's placeholder: `?` (sqlite3) or `%s` (psycopg2)."""
        return "?" if self.engine.dialect.paramstyle == "qmark" else "%s"

    def _hot_read(self, action: str, where: str, params: Sequence[object]) -> list[tuple[object, ...]]:
        """The rows of a read on every lookup's path (`_HOT_COLUMNS`, in that order), through the DB-API cursor of a
        pooled connection: building and compiling the SQLAlchemy statement cost several times the query itself
        (a candidate read: 180 µs against 30 µs on SQLite). Failures are `StoreUnavailable`, as everywhere."""
        dbapi_error = self.engine.dialect.loaded_dbapi.Error
        try:
            conn = self.engine.raw_connection()  # a failed connect raises the DB-API's own error, unwrapped
        except (SQLAlchemyError, dbapi_error) as exc:
            raise StoreUnavailable(f"cannot {action}: {exc}") from exc
        try:
            cursor = conn.cursor()
            try:
                cursor.execute(f"SELECT {_HOT_SELECT} FROM {entries.name} WHERE {where}", params)
                rows = [tuple(row) for row in cursor.fetchall()]
            finally:
                cursor.close()
        except dbapi_error as exc:
            conn.invalidate(exc)
            raise StoreUnavailable(f"cannot {action}: {exc}") from exc
        finally:
            conn.close()
        return rows

    def _one(self, query: object) -> StoredEntry | None:
        with store_errors("read entry"), self.engine.connect() as conn:
            row = conn.execute(query).first()  # type: ignore[call-overload]
        return None if row is None else _row_to_entry(row)

    def vectors(self, after_id: int = 0, batch: int = 5000) -> Iterator[IndexedVector]:
        """Every entry with a vector and id > `after_id`, in id order (for index rebuild and catch-up)."""
        last = after_id
        while True:
            query = (
                select(entries.c.id, _SCOPE, entries.c.vector, entries.c.expires_at, _MODEL, entries.c.namespace)
                .where(entries.c.id > last, entries.c.vector.is_not(None))
                .order_by(entries.c.id)
                .limit(batch)
            )
            with store_errors("read vectors"), self.engine.connect() as conn:
                rows = conn.execute(query).all()
            for row in rows:
                yield IndexedVector(int(row.id), str(row.scope), np.frombuffer(row.vector, dtype=np.float32),
                                    row.expires_at, str(row.embedding_model), str(row.namespace))
            if len(rows) < batch:
                return
            last = int(rows[-1].id)

    def record_hits(self, entry_ids: Sequence[int], at: float) -> None:
        if not entry_ids:
            return
        with store_errors("record hits"), self.engine.begin() as conn:
            for entry_id in entry_ids:
                conn.execute(
                    update(entries)
                    .where(entries.c.id == entry_id)
                    .values(hits=entries.c.hits + 1, last_hit_at=at)
                )

    def delete(self, entry_ids: Sequence[int], at: float) -> list[Tombstone]:
        """Delete entries and leave tombstones, so every replica drops them from its index and exact tier."""
        return self._delete(entries.c.id.in_(list(entry_ids)), at) if entry_ids else []

    def delete_where(self, at: float, namespace: str | None = None, model: str | None = None) -> list[Tombstone]:
        """Invalidate by namespace and/or model; neither given means flush everything."""
        condition: ColumnElement[bool] = true()
        if namespace is not None:
            condition = and_(condition, entries.c.namespace == namespace)
        if model is not None:
            condition = and_(condition, entries.c.model == model)
        return self._delete(condition, at)

    def _delete(self, condition: ColumnElement[bool], at: float) -> list[Tombstone]:
        with store_errors("delete entries"), self.engine.begin() as conn:
            return delete_entries(conn, condition, at)

    def tombstones_after(self, seq: int) -> list[Tombstone]:
        query = select(tombstones).where(tombstones.c.seq > seq).order_by(tombstones.c.seq).limit(10_000)
        with store_errors("read tombstones"), self.engine.connect() as conn:
            return [Tombstone(int(r.seq), int(r.entry_id), str(r.exact_key)) for r in conn.execute(query)]

    def last_tombstone(self) -> int:
        with store_errors("read tombstones"), self.engine.connect() as conn:
            return int(conn.execute(select(func.coalesce(func.max(tombstones.c.seq), 0))).scalar_one())

    def first_tombstone(self) -> int:
        """Lowest tombstone sequence kept (0: none); older ones were pruned by retention."""
        with store_errors("read tombstones"), self.engine.connect() as conn:
            return int(conn.execute(select(func.coalesce(func.min(tombstones.c.seq), 0))).scalar_one())

    def recent_ids(self, since: float) -> list[int]:
        """Ids created since `since`: ids commit out of order across replicas, so catch-up re-checks a window."""
        query = select(entries.c.id).where(entries.c.created_at >= since, entries.c.vector.is_not(None))
        with store_errors("read recent entries"), self.engine.connect() as conn:
            return [int(i) for i in conn.execute(query).scalars()]

    def vectors_for(self, entry_ids: Sequence[int]) -> list[IndexedVector]:
        query = select(entries.c.id, _SCOPE, entries.c.vector, entries.c.expires_at, _MODEL, entries.c.namespace).where(
            entries.c.id.in_(list(entry_ids)), entries.c.vector.is_not(None))
        with store_errors("read vectors"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [IndexedVector(int(r.id), str(r.scope), np.frombuffer(r.vector, dtype=np.float32),
                              r.expires_at, str(r.embedding_model), str(r.namespace)) for r in rows]

    def eviction_candidates(self, now: float, max_entries: int | None, total: int) -> list[int]:
        """Expired entries, then the least recently used beyond `max_entries` given `total` entries (a running
        count, see `count_mark`): both queries walk an index and read only the rows they return."""
        last_used = func.coalesce(entries.c.last_hit_at, entries.c.created_at)
        with store_errors("select entries to evict"), self.engine.connect() as conn:
            expired = [int(i) for i in conn.execute(
                select(entries.c.id).where(entries.c.expires_at <= now).limit(10_000)).scalars()]
            overflow = total - len(expired) - max_entries if max_entries is not None else 0
            lru: list[int] = []
            if overflow > 0:
                query = (select(entries.c.id).where(entries.c.id.not_in(expired) if expired else true())
                         .order_by(last_used, entries.c.id).limit(overflow))
                lru = [int(i) for i in conn.execute(query).scalars()]
        return expired + lru

    def count_mark(self, base: CountMark | None = None) -> CountMark:
        """The number of entries. Without `base` a full count; with one, `base` moved forward by the entries
        inserted (ids above its watermark) and deleted (tombstones after its sequence, of entries it counted)
        since: primary-key range scans whose cost is the change, not the table. Ids that commit late below the
        watermark are missed until the next full count."""
        with store_errors("count entries"), self.engine.connect() as conn:
            max_id = int(conn.execute(select(func.coalesce(func.max(entries.c.id), 0))).scalar_one())
            seq = int(conn.execute(select(func.coalesce(func.max(tombstones.c.seq), 0))).scalar_one())
            if base is None:
                total = int(conn.execute(select(func.count()).select_from(entries)).scalar_one())
                return CountMark(total, max_id, seq)
            max_id, seq = max(max_id, base.max_id), max(seq, base.tombstone_seq)
            added = int(conn.execute(select(func.count()).select_from(entries).where(
                entries.c.id > base.max_id, entries.c.id <= max_id)).scalar_one())
            removed = int(conn.execute(select(func.count()).select_from(tombstones).where(
                tombstones.c.seq > base.tombstone_seq, tombstones.c.seq <= seq,
                # an entry inserted and deleted since `base` is in neither count
                tombstones.c.entry_id <= base.max_id)).scalar_one())
        return CountMark(max(0, base.total + added - removed), max_id, seq)

    def count(self) -> int:
        with store_errors("count entries"), self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(entries)).scalar_one())

    def max_id(self) -> int:
        """Highest entry id (0 when empty): a snapshot whose watermark is above it belongs to another database."""
        with store_errors("read entries"), self.engine.connect() as conn:
            return int(conn.execute(select(func.coalesce(func.max(entries.c.id), 0))).scalar_one())

    def rows_to_reindex(self, model_id: str, after_id: int, limit: int) -> list[ReindexRow]:
        """Entries with vectors made by another embedder than `model_id`, in id order after `after_id`."""
        query = (select(entries.c.id, entries.c.prompt, entries.c.context_text, entries.c.scope_key)
                 .where(entries.c.id > after_id, entries.c.vector.is_not(None),
                        _MODEL_EXPR.is_distinct_from(model_id))
                 .order_by(entries.c.id).limit(limit))
        with store_errors("read entries to reindex"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [ReindexRow(int(r.id), str(r.prompt), None if r.scope_key is None else str(r.context_text or ""))
                for r in rows]

    def set_vectors(self, rows: Sequence[Reembedded]) -> None:
        with store_errors("write vectors"), self.engine.begin() as conn:
            for row in rows:
                conn.execute(update(entries).where(entries.c.id == row.entry_id).values(
                    vector=_blob(row.vector), prompt_vector=_blob(row.prompt_vector),
                    context_vector=_blob(row.context_vector), embedding_model=row.model_id))


def display_url(url: str) -> str:
    """The URL with any password hidden, fit to print."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url
