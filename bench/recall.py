"""HNSW recall@1 against brute force on real prompt embeddings, for several search `ef` values: the evidence for
`HnswParams.ef_search`. Stored prompts are distinct QQP questions (GPTCache's `similiar_qqp_full`, read from
../shared/datasets), embedded with the configured backend (`DEJA_EMBEDDER=onnx` for the int8 export) until
`--entries` or the `--embed-budget` seconds run out; queries are held-out duplicates of stored questions (the
lookups a cache serves), then other held-out questions. The index is the product's `SemanticIndex` with its
default graph parameters, all entries in one scope (so HNSW answers, never the exact scan).

    DEJA_EMBEDDER=onnx nice -n 10 .venv/bin/python -m bench.recall [--entries 100000] [--queries 1000] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import numpy as np

from bench.common import p, qqp_rows
from index.embedding.embedder import Vector, make_embedder
from index.search.hnsw import HnswParams, SemanticIndex
from index.settings import Settings

EFS = (10, 16, 24, 32, 48, 64, 96, 128, 256)


def questions(entries: int, queries: int) -> tuple[list[str], list[str]]:
    """Up to `entries` distinct stored questions and `queries` held-out ones: duplicates of stored questions
    first, then other questions. Stored are the pairs' first questions, then second ones not held out."""
    rows = qqp_rows()
    stored: dict[str, None] = {}
    duplicates: dict[str, None] = {}
    for row in rows:
        if len(stored) >= entries:
            break
        stored.setdefault(row["text_a"])
        if row["label"] == 1:
            duplicates.setdefault(row["text_b"])
    held = [q for q in duplicates if q not in stored][:queries]
    held_set = set(held)
    for row in rows:
        text = row["text_b"]
        if len(held) < queries and text not in stored and text not in held_set:
            held.append(text)
            held_set.add(text)
        elif len(stored) < entries and text not in held_set:
            stored.setdefault(text)
    return list(stored), held


def embed(texts: list[str], budget_s: float, batch: int = 256) -> Vector:
    """Embeddings of a prefix of `texts`: as many as fit in `budget_s` seconds."""
    settings = Settings()
    embedder = make_embedder(settings.embedder, settings.embedding_model, settings.embed_threads or None)
    out: list[Vector] = []
    started = time.monotonic()
    for start in range(0, len(texts), batch):
        if time.monotonic() - started > budget_s:
            break
        out.append(embedder.embed(texts[start:start + batch]))
    return np.concatenate(out) if out else np.zeros((0, embedder.dim), np.float32)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--embed-budget", type=float, default=420.0, help="seconds of embedding at most")
    parser.add_argument("--cache", type=Path, default=None, help="reuse/keep the vectors in this .npz file")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    if args.cache is not None and args.cache.exists():
        saved = np.load(args.cache)
        vectors, query_vectors = saved["stored"], saved["queries"]
        embed_s = float(saved["embed_s"])
    else:
        stored, held_out = questions(args.entries, args.queries)
        t0 = time.monotonic()
        query_vectors = embed(held_out, budget_s=float("inf"))
        vectors = embed(stored, budget_s=args.embed_budget)
        embed_s = time.monotonic() - t0
        if args.cache is not None:
            np.savez(args.cache, stored=vectors, queries=query_vectors, embed_s=embed_s)

    params = HnswParams()
    index = SemanticIndex(vectors.shape[1], params)
    t0 = time.monotonic()
    index.add_many(list(range(1, len(vectors) + 1)), ["scope"] * len(vectors), vectors)
    build_s = time.monotonic() - t0
    # Brute force: the exact top-1 cosine. A neighbour as similar (a duplicate stored text) counts as found.
    truth = np.max(query_vectors @ vectors.T, axis=1)

    rows = []
    for ef in EFS:
        index.params = dataclasses.replace(params, ef_search=ef)
        found, times = [], []
        for query in query_vectors:
            t = time.perf_counter()
            found.append(index.search(query, "scope", k=1)[0].similarity)
            times.append((time.perf_counter() - t) * 1000)
        recall = float(np.mean(np.asarray(found) >= truth - 1e-5))
        rows.append({"ef": ef, "recall_at_1": recall, "p50_ms": statistics.median(times), "p99_ms": p(times, 0.99)})

    result = {"entries": len(vectors), "queries": len(query_vectors), "embedder": Settings().embedder.value,
              "embed_s": round(embed_s, 1), "build_s": round(build_s, 1), "m": params.m,
              "ef_construction": params.ef_construction, "default_ef": params.ef_search, "rows": rows}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['entries']} stored QQP questions ({result['embedder']}, embedded in {embed_s:.0f} s), "
          f"{result['queries']} held-out queries, M={params.m} ef_construction={params.ef_construction}, "
          f"built in {build_s:.0f} s; default ef = {params.ef_search}")
    print(f"{'ef':>5}{'recall@1':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for row in rows:
        print(f"{row['ef']:>5}{row['recall_at_1']:>10.4f}{row['p50_ms']:>9.3f}{row['p99_ms']:>9.3f}")


if __name__ == "__main__":
    main()
