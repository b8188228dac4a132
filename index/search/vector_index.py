"""What the cache needs of a semantic index, and which one a deployment uses: the in-process HNSW graph
(`index.search.hnsw`, rebuilt or loaded per replica) or the shared pgvector table (`index.search.pgvector`)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol

from index.embedding.embedder import Vector
from index.records import Neighbor


class VectorIndexKind(enum.StrEnum):
    """`DEJA_VECTOR_INDEX`: `hnsw` (in-process, the default) or `pgvector` (in the PostgreSQL of the entries)."""

    HNSW = "hnsw"
    PGVECTOR = "pgvector"


class VectorIndex(Protocol):
    """Nearest entries within one scope, by cosine similarity (higher is closer)."""

    dim: int

    def __len__(self) -> int: ...

    def __contains__(self, entry_id: int) -> bool: ...

    def count(self, scope: str) -> int:
        """Entries in `scope` (0 means a semantic lookup can be skipped)."""
        ...

    def max_id(self) -> int: ...

    def add(self, entry_id: int, scope: str, vector: Vector) -> None: ...

    def add_many(self, entry_ids: Sequence[int], scopes: Sequence[str], vectors: Vector) -> None: ...

    def remove(self, entry_id: int) -> None: ...

    def search(self, vector: Vector, scope: str, k: int = 1) -> list[Neighbor]: ...
