"""HNSW nearest-neighbour index over entry vectors, searched only within one scope (a `CacheKey.scope`:
namespace, model, parameters and, for conversations, the earlier turns).

Only this module knows that hnswlib speaks distances; everything it returns is cosine similarity.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import hnswlib
import numpy as np
import numpy.typing as npt

from index.embedding.embedder import Vector
from index.records import Neighbor
from index.search.scan import ScopeMatrices


@dataclass(frozen=True)
class HnswParams:
    """Graph parameters. Small scopes are scanned exactly (over in-memory copies of their vectors, at most
    `scan_cache_rows` rows in all); HNSW takes over above `exact_scan_below`."""

    m: int = 16
    ef_construction: int = 200
    # From `bench.recall` (100,000 real QQP prompt embeddings, 1,000 held-out queries): recall@1 vs brute force
    # 0.998 at ef 32, 0.999 at 64, 1.000 from 96, at 0.19 ms p50 per search (README "Benchmarks").
    ef_search: int = 96
    initial_capacity: int = 1024
    exact_scan_below: int = 2048
    scan_cache_rows: int = 262_144


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
        self._scans = ScopeMatrices(self.params.scan_cache_rows)
        self._lock = threading.RLock()
        self._changes = 0  # adds and removals so far: a snapshot of an unchanged index need not be written again

    def __len__(self) -> int:
        return len(self._scope_of)

    def __contains__(self, entry_id: int) -> bool:
        return entry_id in self._scope_of

    def count(self, scope: str) -> int:
        return len(self._members.get(scope, ()))

    def max_id(self) -> int:
        """Highest id ever added (monotonic: removals do not lower it)."""
        return self._max_id

    @property
    def changes(self) -> int:
        """How many adds and removals this index has seen (0 for one just loaded from a snapshot)."""
        return self._changes

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
            matrix = np.asarray(vectors, np.float32)
            self._index.add_items(matrix, list(entry_ids), replace_deleted=True)
            for row, (entry_id, scope) in enumerate(zip(entry_ids, scopes, strict=True)):
                self._scope_of[entry_id] = scope
                members = self._members[scope]
                members.add(entry_id)
                if len(members) < self.params.exact_scan_below:
                    self._scans.add(scope, entry_id, matrix[row])
                else:
                    self._scans.drop(scope)
            self._max_id = max(self._max_id, *entry_ids)
            self._changes += 1

    def remove(self, entry_id: int) -> None:
        with self._lock:
            scope = self._scope_of.pop(entry_id, None)
            if scope is None:
                return
            self._index.mark_deleted(entry_id)
            self._changes += 1
            self._scans.remove(scope, entry_id)
            members = self._members[scope]
            members.discard(entry_id)
            if not members:
                del self._members[scope]
                self._scans.drop(scope)

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
                    # A per-node Python filter costs more than the walk; skip it when the scope is the whole index.
                    only = len(members) == len(self._scope_of)
                    labels, distances = self._index.knn_query(
                        query, k=k, filter=None if only else (lambda label: self._scope_of.get(label) == scope)
                    )
                    return [
                        Neighbor(int(lbl), float(1.0 - d)) for lbl, d in zip(labels[0], distances[0], strict=True)
                    ]
                except RuntimeError:
                    pass  # the filtered graph walk found fewer than k: fall back to the exact scan
            found = self._scans.search(scope, members, query[0], k, self._vectors_of)
            return [Neighbor(entry_id, similarity) for entry_id, similarity in found]

    def _vectors_of(self, ids: npt.NDArray[np.int64]) -> Vector:
        return np.asarray(self._index.get_items(ids, return_type="numpy"), np.float32)

    def save(self, path: Path) -> IndexContents:
        """Write the graph to `path` (hnswlib's format) and return what it holds, under one lock so they agree."""
        with self._lock:
            self._index.save_index(str(path))
            return self._contents()

    def _contents(self) -> IndexContents:
        codes: dict[str, int] = {}
        ids = np.fromiter(self._scope_of.keys(), dtype=np.int64, count=len(self._scope_of))
        scope_codes = np.fromiter((codes.setdefault(s, len(codes)) for s in self._scope_of.values()),
                                  dtype=np.int32, count=len(self._scope_of))
        return IndexContents(ids, scope_codes, tuple(codes), self._max_id)

    @classmethod
    def load(cls, path: Path, dim: int, params: HnswParams, contents: IndexContents) -> SemanticIndex:
        """An index from a file written by `save` (its integrity is checked by the caller, before or while it loads:
        `index.search.snapshot`)."""
        index = cls(dim, params)
        graph = hnswlib.Index(space="ip", dim=dim)
        graph.load_index(str(path), max_elements=0, allow_replace_deleted=True)
        if graph.get_current_count() < len(contents.ids):
            raise ValueError("snapshot graph holds fewer elements than its scope table")
        graph.set_ef(params.ef_search)
        index._index = graph
        names = contents.scopes
        ids, codes = contents.ids, contents.scope_codes
        # Built in C, one scope at a time (a million entries: a fraction of a Python loop over them): each scope's
        # ids from one stable sort by scope code, then the scope of each id.
        if len(ids):
            order = np.argsort(codes, kind="stable")
            starts = np.concatenate(([0], np.flatnonzero(np.diff(codes[order])) + 1))
            for code, group in zip(codes[order][starts].tolist(), np.split(ids[order], starts[1:]), strict=True):
                members = group.tolist()
                index._scope_of.update(dict.fromkeys(members, names[code]))
                index._members[names[code]] = set(members)
        index._max_id = contents.max_id
        return index


@dataclass(frozen=True)
class IndexContents:
    """Which entry lives in which scope (scopes stored once, referenced by code), and the highest id added."""

    ids: npt.NDArray[np.int64]
    scope_codes: npt.NDArray[np.int32]
    scopes: tuple[str, ...]
    max_id: int
