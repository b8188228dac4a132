"""Dense copies of small scopes' vectors, for exact scans: built once per scope, kept up to date on add and
remove, and bounded in total rows (least recently searched scopes are dropped first and rebuilt on demand)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from index.embedding.embedder import Vector


class _Rows:
    """One scope: ids and a row-per-id matrix with spare capacity (appends amortise to O(dim))."""

    def __init__(self, ids: npt.NDArray[np.int64], matrix: Vector) -> None:
        self.size = len(ids)
        capacity = max(8, self.size)
        self.ids = np.zeros(capacity, np.int64)
        self.matrix = np.zeros((capacity, matrix.shape[1]), np.float32)
        self.ids[: self.size] = ids
        self.matrix[: self.size] = matrix
        self.position = {int(i): p for p, i in enumerate(ids)}

    def add(self, entry_id: int, vector: Vector) -> None:
        if entry_id in self.position:
            self.matrix[self.position[entry_id]] = vector
            return
        if self.size == len(self.ids):
            self.ids = np.concatenate([self.ids, np.zeros_like(self.ids)])
            self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
        self.ids[self.size] = entry_id
        self.matrix[self.size] = vector
        self.position[entry_id] = self.size
        self.size += 1

    def remove(self, entry_id: int) -> None:
        at = self.position.pop(entry_id, None)
        if at is None:
            return
        last = self.size - 1
        if at != last:  # move the last row into the hole
            moved = int(self.ids[last])
            self.ids[at] = moved
            self.matrix[at] = self.matrix[last]
            self.position[moved] = at
        self.size = last

    def top(self, query: Vector, k: int) -> list[tuple[int, float]]:
        sims = self.matrix[: self.size] @ query
        k = min(k, self.size)
        order = np.argpartition(-sims, k - 1)[:k] if k < self.size else np.arange(self.size)
        order = order[np.argsort(-sims[order])]
        return [(int(self.ids[i]), float(sims[i])) for i in order]


class ScopeMatrices:
    """Not thread-safe on its own: `SemanticIndex` calls it under its lock."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._scopes: OrderedDict[str, _Rows] = OrderedDict()
        self._rows = 0

    def rows(self) -> int:
        return self._rows

    def search(self, scope: str, members: Sequence[int] | set[int], query: Vector, k: int,
               load: Callable[[npt.NDArray[np.int64]], Vector]) -> list[tuple[int, float]]:
        """Top `k` (id, similarity) of `scope`; `load(ids)` supplies vectors when the scope is not cached."""
        rows = self._scopes.get(scope)
        if rows is None:
            ids = np.fromiter(members, dtype=np.int64, count=len(members))
            rows = _Rows(ids, np.asarray(load(ids), np.float32).reshape(len(ids), -1))
            self._scopes[scope] = rows
            self._rows += rows.size
            self._shrink(keep=scope)
        self._scopes.move_to_end(scope)
        return rows.top(query, k)

    def add(self, scope: str, entry_id: int, vector: Vector) -> None:
        rows = self._scopes.get(scope)
        if rows is not None:
            before = rows.size
            rows.add(entry_id, vector)
            self._rows += rows.size - before

    def remove(self, scope: str, entry_id: int) -> None:
        rows = self._scopes.get(scope)
        if rows is not None:
            before = rows.size
            rows.remove(entry_id)
            self._rows -= before - rows.size

    def drop(self, scope: str) -> None:
        rows = self._scopes.pop(scope, None)
        if rows is not None:
            self._rows -= rows.size

    def _shrink(self, keep: str) -> None:
        while self._rows > self.max_rows and len(self._scopes) > 1:
            oldest = next(iter(self._scopes))
            if oldest == keep:
                self._scopes.move_to_end(keep)
                continue
            self.drop(oldest)
