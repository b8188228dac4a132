"""HNSW nearest-neighbour index over entry vectors, searched only within one scope (a `CacheKey.scope`:
namespace, model, parameters and, for conversations, the earlier turns).

Only this module knows that hnswlib speaks distances; everything it returns is cosine similarity.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import hnswlib
import numpy as np

from index.embedder import Vector
from index.records import Neighbor


@dataclass(frozen=True)
class HnswParams:
    """Graph parameters. Small scopes are scanned exactly; HNSW takes over above `exact_scan_below`."""

    m: int = 16
    ef_construction: int = 200
    ef_search: int = 64
    initial_capacity: int = 1024
    exact_scan_below: int = 2048


class SemanticIndex:
    """Thread-safe wrapper: vectors are L2-normalised, so inner product = cosine similarity."""

    def __init__(self, dim: int, params: HnswParams | None = None) -> None:
        self.dim = dim
        self.params = params or HnswParams()
        self._index = hnswlib.Index(space="ip", dim=dim)
        self._index.init_index(
            max_elements=self.params.initial_capacity,
            ef_construction=self.params.ef_construction,
            M=self.params.m,
            allow_replace_deleted=True,  # evicted entries' slots are reused, so churn does not grow memory
        )
        self._index.set_ef(self.params.ef_search)
        self._scope_of: dict[int, str] = {}
        self._members: dict[str, set[int]] = defaultdict(set)
        self._max_id = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._scope_of)

    def __contains__(self, entry_id: int) -> bool:
        return entry_id in self._scope_of

    def count(self, scope: str) -> int:
        return len(self._members.get(scope, ()))

    def max_id(self) -> int:
        """Highest id ever added (monotonic: removals do not lower it)."""
        return self._max_id

    def add(self, entry_id: int, scope: str, vector: Vector) -> None:
        self.add_many([entry_id], [scope], np.asarray(vector, np.float32).reshape(1, -1))

    def add_many(self, entry_ids: Sequence[int], scopes: Sequence[str], vectors: Vector) -> None:
        """Bulk insert (hnswlib builds with all cores): what start-up rebuilds and catch-up use."""
        if not entry_ids:
            return
        with self._lock:
            for entry_id in entry_ids:
                if entry_id in self._scope_of:
                    self.remove(entry_id)
            needed = len(self._scope_of) + len(entry_ids)
            if needed > self._index.get_max_elements():
                self._index.resize_index(max(2 * self._index.get_max_elements(), needed, 1024))
            self._index.add_items(np.asarray(vectors, np.float32), list(entry_ids), replace_deleted=True)
            for entry_id, scope in zip(entry_ids, scopes, strict=True):
                self._scope_of[entry_id] = scope
                self._members[scope].add(entry_id)
            self._max_id = max(self._max_id, *entry_ids)

    def remove(self, entry_id: int) -> None:
        with self._lock:
            scope = self._scope_of.pop(entry_id, None)
            if scope is None:
                return
            self._index.mark_deleted(entry_id)
            members = self._members[scope]
            members.discard(entry_id)
            if not members:
                del self._members[scope]

    def search(self, vector: Vector, scope: str, k: int = 1) -> list[Neighbor]:
        """Up to `k` nearest entries of `scope`, most similar first."""
        with self._lock:
            members = self._members.get(scope)
            if not members:
                return []
            k = min(k, len(members))
            query = np.asarray(vector, np.float32).reshape(1, -1)
            if len(members) >= self.params.exact_scan_below:
                self._index.set_ef(max(self.params.ef_search, k))
                try:
                    labels, distances = self._index.knn_query(
                        query, k=k, filter=lambda label: self._scope_of.get(label) == scope
                    )
                    return [
                        Neighbor(int(lbl), float(1.0 - d)) for lbl, d in zip(labels[0], distances[0], strict=True)
                    ]
                except RuntimeError:
                    pass  # the filtered graph walk found fewer than k: fall back to the exact scan
            return self._scan(members, query[0], k)

    def _scan(self, members: set[int], query: Vector, k: int) -> list[Neighbor]:
        ids = np.fromiter(members, dtype=np.int64, count=len(members))
        matrix = np.asarray(self._index.get_items(ids, return_type="numpy"), np.float32)
        sims = matrix @ query
        order = np.argsort(-sims)[:k]
        return [Neighbor(int(ids[i]), float(sims[i])) for i in order]
