"""The semantic tier in PostgreSQL + pgvector (`DEJA_VECTOR_INDEX=pgvector`): each entry's vector sits beside it in
`deja_vectors` under an HNSW index (`vector_cosine_ops`) and is searched within one scope by SQL, so replicas hold
no index, start without loading one, and see each other's entries as soon as they commit.

Only this module knows that pgvector speaks cosine distances; everything it returns is cosine similarity.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from index.embedding.embedder import Vector
from index.errors import VectorIndexUnavailable, store_errors
from index.records import Neighbor

log = logging.getLogger("deja.pgvector")

TABLE = "deja_vectors"
HNSW_INDEX = "ix_deja_vectors_embedding"
# The column's dimensions (an HNSW index needs fixed ones): the bundled MiniLM, torch or ONNX.
DIM = 384


@dataclass(frozen=True)
class PgVectorParams:
    """Search parameters: `ef_search` is `hnsw.ef_search`, the candidates one graph walk collects."""

    # From `bench.pgvector` (100,000 real QQP prompt embeddings, 1,000 held-out queries): recall@1 vs brute force
    # 0.989 at 20, 0.997 at 40, 0.998 at 64, 0.999 from 100 (README "Stateless replicas on PostgreSQL + pgvector").
    ef_search: int = 40


def _literal(vector: Vector) -> str:
    """pgvector's text form of a vector: '[x,y,...]' (9 significant digits round-trip a float32)."""
    return "[" + ",".join(format(float(x), ".9g") for x in np.asarray(vector, np.float32).ravel()) + "]"


def install(conn: Connection, dim: int = DIM) -> str | None:
    """Create the extension, the vector table and its indexes where they are missing. Returns None when they
    exist afterwards, else why they cannot (not PostgreSQL, no pgvector on the server, not allowed)."""
    if conn.dialect.name != "postgresql":
        return f"the database is {conn.dialect.name}, not PostgreSQL"
    if conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).first() is None:
        if conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first() is None:
            return "this PostgreSQL server has no pgvector extension (install pgvector >= 0.5 on the server)"
        try:
            with conn.begin_nested():
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        except DBAPIError as exc:
            return f"CREATE EXTENSION vector was refused ({str(exc.orig).strip()}); ask the database owner to run it"
    conn.execute(text(
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        " entry_id integer PRIMARY KEY REFERENCES deja_entries (id) ON DELETE CASCADE,"
        " scope varchar(64) NOT NULL, embedding_model varchar(200) NOT NULL,"
        f" embedding vector({dim}) NOT NULL)"))
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_deja_vectors_scope ON {TABLE} (scope, embedding_model)"))
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON {TABLE} "
                      "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"))
    return None


def check(engine: Engine, dim: int | None = None) -> None:
    """Install what is missing (a pgvector added since the migration ran), then make sure the table holds
    vectors of `dim` dimensions (when given); raises `VectorIndexUnavailable` with the reason otherwise."""
    with store_errors("prepare the pgvector index"), engine.begin() as conn:
        reason = install(conn)
        if reason is not None:
            raise VectorIndexUnavailable(f"DEJA_VECTOR_INDEX=pgvector cannot be used: {reason}")
        found = conn.execute(text(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = CAST(:table AS regclass) AND attname = 'embedding'"),
            {"table": TABLE}).scalar_one()
    if dim is not None and int(found) != dim:
        raise VectorIndexUnavailable(
            f"DEJA_VECTOR_INDEX=pgvector: {TABLE}.embedding holds {found}-dimensional vectors, "
            f"the embedder makes {dim}")


class PgVectorIndex:
    """The `VectorIndex` of a shared PostgreSQL. Thread-safe (each call takes a pooled connection). Vectors of
    other embedders stay in the table but are never compared: every query names the serving model."""

    def __init__(self, engine: Engine, dim: int, model_id: str, params: PgVectorParams | None = None) -> None:
        self.engine = engine
        self.dim = dim
        self.model_id = model_id
        self.params = params or PgVectorParams()

    def __len__(self) -> int:
        with store_errors("count vectors"), self.engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {TABLE}")).scalar_one())

    def __contains__(self, entry_id: int) -> bool:
        with store_errors("read vectors"), self.engine.connect() as conn:
            found = conn.execute(text(f"SELECT 1 FROM {TABLE} WHERE entry_id = :id"), {"id": entry_id}).first()
        return found is not None

    def count(self, scope: str) -> int:
        """1 when `scope` holds an entry of the serving model, else 0: a lookup only asks whether to search (an
        exact count would read the whole scope)."""
        query = text(f"SELECT EXISTS (SELECT 1 FROM {TABLE} WHERE scope = :scope AND embedding_model = :model)")
        with store_errors("read vectors"), self.engine.connect() as conn:
            return int(bool(conn.execute(query, {"scope": scope, "model": self.model_id}).scalar_one()))

    def max_id(self) -> int:
        """Highest entry id with a vector: start-up backfills the entries above it (written in HNSW mode)."""
        with store_errors("read vectors"), self.engine.connect() as conn:
            return int(conn.execute(text(f"SELECT coalesce(max(entry_id), 0) FROM {TABLE}")).scalar_one())

    def add(self, entry_id: int, scope: str, vector: Vector) -> None:
        self.add_many([entry_id], [scope], np.asarray(vector, np.float32).reshape(1, -1))

    def add_many(self, entry_ids: Sequence[int], scopes: Sequence[str], vectors: Vector) -> None:
        """Insert or replace (an entry rewritten in place keeps its id); an entry deleted meanwhile is skipped."""
        if not entry_ids:
            return
        rows = [{"id": int(i), "scope": s, "model": self.model_id, "v": _literal(v)}
                for i, s, v in zip(entry_ids, scopes, np.asarray(vectors, np.float32), strict=True)]
        # INSERT ... SELECT from the entry table: no foreign-key error for an entry evicted in between.
        query = text(
            f"INSERT INTO {TABLE} (entry_id, scope, embedding_model, embedding) "
            "SELECT id, :scope, :model, CAST(:v AS vector) FROM deja_entries WHERE id = :id "
            "ON CONFLICT (entry_id) DO UPDATE SET scope = EXCLUDED.scope, "
            "embedding_model = EXCLUDED.embedding_model, embedding = EXCLUDED.embedding")
        with store_errors("write vectors"), self.engine.begin() as conn:
            conn.execute(query, rows)

    def remove(self, entry_id: int) -> None:
        """Deleting the entry deletes its vector (ON DELETE CASCADE); this covers a vector dropped on its own."""
        with store_errors("delete vector"), self.engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {TABLE} WHERE entry_id = :id"), {"id": entry_id})

    def search(self, vector: Vector, scope: str, k: int = 1) -> list[Neighbor]:
        """Up to `k` nearest entries of `scope`, most similar first, in one round trip. The planner walks the
        HNSW graph or, for a scope it knows is small, reads the scope and sorts (exact). pgvector 0.6 filters the
        walk's `ef_search` results by scope afterwards, so a walk that comes back short (a small scope among many
        entries) is followed by an exact scan of the scope."""
        params = {"q": _literal(vector), "scope": scope, "model": self.model_id, "k": k}
        # SET LOCAL takes no bind parameters; the value is an int from settings. Sent with the query: one trip.
        ef = f"SET LOCAL hnsw.ef_search = {max(int(self.params.ef_search), k)}; "
        with store_errors("search vectors"), self.engine.begin() as conn:
            found = self._nearest(conn, params, ef)
            if len(found) < k:
                found = self._nearest(conn, params, None)
        return found

    @staticmethod
    def _nearest(conn: Connection, params: dict[str, object], graph: str | None) -> list[Neighbor]:
        # `ORDER BY embedding <=> q` is what the HNSW index serves; `+ 0` hides it from the planner (exact sort).
        order = "embedding <=> CAST(:q AS vector)" if graph else "(embedding <=> CAST(:q AS vector)) + 0"
        query = text(f"{graph or ''}SELECT entry_id, embedding <=> CAST(:q AS vector) AS distance FROM {TABLE} "
                     f"WHERE scope = :scope AND embedding_model = :model ORDER BY {order} LIMIT :k")
        return [Neighbor(int(row.entry_id), 1.0 - float(row.distance)) for row in conn.execute(query, params)]
