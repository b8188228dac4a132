from __future__ import annotations

import numpy as np
import pytest

from index.records import CachedResponse
from index.search.hnsw import HnswParams, SemanticIndex
from index.storage.exact import LruExactCache


def unit_vectors(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("exact_scan_below", [1, 10_000], ids=["hnsw", "exact-scan"])
def test_search_stays_inside_the_context(exact_scan_below: int) -> None:
    index = SemanticIndex(16, HnswParams(exact_scan_below=exact_scan_below, initial_capacity=4))
    v = unit_vectors(40)
    for i in range(40):
        index.add(i + 1, "even" if i % 2 == 0 else "odd", v[i])
    found = index.search(v[3], "even", k=5)
    assert 4 not in [n.entry_id for n in found]
    assert all(n.entry_id % 2 == 1 for n in found)  # labels i+1 for even i are odd numbers
    assert index.search(v[3], "odd", k=1)[0].entry_id == 4
    assert index.search(v[3], "odd", k=1)[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert index.search(v[3], "none") == []


def test_removed_entries_are_not_found() -> None:
    index = SemanticIndex(16)
    v = unit_vectors(3)
    for i in range(3):
        index.add(i + 1, "c", v[i])
    index.remove(2)
    assert [n.entry_id for n in index.search(v[1], "c", k=3)] == sorted(
        [1, 3], key=lambda e: -float(v[e - 1] @ v[1]))
    assert index.count("c") == 2 and len(index) == 2


def test_similarities_are_sorted_descending() -> None:
    index = SemanticIndex(16)
    v = unit_vectors(30, seed=1)
    for i in range(30):
        index.add(i + 1, "c", v[i])
    sims = [n.similarity for n in index.search(v[0], "c", k=10)]
    assert sims == sorted(sims, reverse=True)


def test_lru_evicts_the_least_recently_used_and_honours_ttl() -> None:
    now = [0.0]
    lru = LruExactCache(max_items=2, clock=lambda: now[0])
    a, b, c = (CachedResponse(i, {"i": i}) for i in range(3))
    lru.put("a", a, None)
    lru.put("b", b, 10)
    assert lru.get("a") == a  # a is now the most recent
    lru.put("c", c, None)
    assert lru.get("b") is None and lru.get("a") == a and lru.get("c") == c
    lru.put("b", b, 10)
    now[0] = 11
    assert lru.get("b") is None
