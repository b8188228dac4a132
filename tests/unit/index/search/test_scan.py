from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from index.search.hnsw import HnswParams, SemanticIndex
from index.search.scan import ScopeMatrices


def unit_vectors(n: int, dim: int = 16, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute_force(v: npt.NDArray[np.float32], ids: list[int], query: npt.NDArray[np.float32], k: int) -> list[int]:
    sims = v[[i - 1 for i in ids]] @ query
    return [ids[i] for i in np.argsort(-sims)[:k]]


@pytest.mark.parametrize("cache_rows", [1_000_000, 5], ids=["cached", "cache-smaller-than-scope"])
def test_small_scope_scan_follows_adds_and_removes(cache_rows: int) -> None:
    index = SemanticIndex(16, HnswParams(scan_cache_rows=cache_rows))
    v = unit_vectors(60)
    live = list(range(1, 31))
    index.add_many(live, ["s"] * 30, v[:30])
    index.add_many(list(range(31, 41)), ["other"] * 10, v[30:40])
    for step in range(20):
        query = v[step]
        assert [n.entry_id for n in index.search(query, "s", k=3)] == brute_force(v, live, query, 3)
        added, removed = 41 + step, live[step % len(live)]
        index.add(added, "s", v[added - 1])
        index.remove(removed)
        live = [i for i in live if i != removed] + [added]
    assert index.count("s") == 30


def test_scans_read_vectors_once_per_scope_not_per_lookup() -> None:
    loads: list[int] = []
    v = unit_vectors(10)

    def load(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        loads.append(len(ids))
        return v[ids - 1]

    scans = ScopeMatrices(max_rows=100)
    members = set(range(1, 9))
    for i in range(5):
        assert scans.search("s", members, v[i], 1, load)[0][0] == i + 1
    scans.add("s", 9, v[8])
    assert scans.search("s", members | {9}, v[8], 1, load)[0] == (9, pytest.approx(1.0, abs=1e-6))
    assert loads == [8]


def test_least_recently_searched_scope_is_dropped_beyond_the_row_bound() -> None:
    v = unit_vectors(10)
    scans = ScopeMatrices(max_rows=6)
    loads: list[str] = []

    def loader(name: str):  # type: ignore[no-untyped-def]
        def load(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
            loads.append(name)
            return v[ids - 1]
        return load

    scans.search("a", {1, 2, 3, 4}, v[0], 1, loader("a"))
    scans.search("b", {5, 6, 7, 8}, v[4], 1, loader("b"))
    assert scans.rows() == 4  # "a" was dropped to stay within 6 rows
    scans.search("b", {5, 6, 7, 8}, v[4], 1, loader("b"))
    scans.search("a", {1, 2, 3, 4}, v[0], 1, loader("a"))
    assert loads == ["a", "b", "a"]
