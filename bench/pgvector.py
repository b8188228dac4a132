"""pgvector semantic tier: recall@1 against brute force for several `hnsw.ef_search` values (the evidence for
`PgVectorParams.ef_search`), and lookup latency side by side with the in-process HNSW index at each size.

Vectors are real QQP prompt embeddings written by `bench.recall --cache FILE` (stored questions and held-out
queries); the database is a PostgreSQL 16 + pgvector 0.6 started by `pgserver` (or DEJA_TEST_PGVECTOR_URL). The
table and index are the product's (migration 0006), all entries in one scope so that the graph answers; vectors
are bulk-loaded and the HNSW index built afterwards (CREATE INDEX), as for an existing deployment switching over.

    nice .venv/bin/python -m bench.pgvector --cache /tmp/qqp100k.npz [--sizes 10000 100000] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, text

from bench.common import p
from index.search.hnsw import HnswParams, SemanticIndex
from index.search.pgvector import HNSW_INDEX, TABLE, PgVectorIndex, PgVectorParams
from index.storage.entries import EntryStore, make_engine
from support.pgvector_server import PgVectorServer

EFS = (10, 20, 40, 64, 100, 200)
MODEL = "bench"


def load(engine: Engine, vectors: np.ndarray) -> float:
    """Entries and their vectors in one scope (COPY), then the HNSW index; returns the index build seconds."""
    EntryStore(engine).create_schema()
    entries_rows = io.StringIO("".join(f"{i}\tbench\t{i:064x}\tscope\tm\t\t{{}}\t0\t0\n"
                                       for i in range(1, len(vectors) + 1)))
    vector_rows = io.StringIO("".join(f"{i}\tscope\t{MODEL}\t[{','.join(map(str, row.tolist()))}]\n"
                                      for i, row in enumerate(vectors, start=1)))
    raw = engine.raw_connection()
    try:
        with raw.cursor() as cur:
            cur.execute(f"DROP INDEX {HNSW_INDEX}")
            cur.copy_expert("COPY deja_entries (id, namespace, exact_key, context_key, model, prompt, response, "
                            "created_at, hits) FROM STDIN", entries_rows)
            cur.copy_expert(f"COPY {TABLE} (entry_id, scope, embedding_model, embedding) FROM STDIN", vector_rows)
        raw.commit()
        print(f"  {len(vectors)} vectors loaded", file=sys.stderr)
        t0 = time.monotonic()
        with raw.cursor() as cur:
            cur.execute("SET maintenance_work_mem = '1GB'")
            cur.execute(f"CREATE INDEX {HNSW_INDEX} ON {TABLE} "
                        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
            cur.execute(f"ANALYZE {TABLE}")
        raw.commit()
        return time.monotonic() - t0
    finally:
        raw.close()


def timed(search: Any, queries: np.ndarray) -> tuple[list[float], list[float]]:
    found, times = [], []
    for query in queries:
        t = time.perf_counter()
        found.append(search(query)[0].similarity)
        times.append((time.perf_counter() - t) * 1000)
    return found, times


def run_size(server: PgVectorServer, vectors: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    truth = np.max(queries @ vectors.T, axis=1)
    with server.database() as db:
        engine = make_engine(db.url)
        build_s = load(engine, vectors)
        with engine.connect() as conn:
            plan = "\n".join(conn.execute(text(
                f"EXPLAIN SELECT entry_id FROM {TABLE} WHERE scope = 'scope' AND embedding_model = '{MODEL}' "
                f"ORDER BY embedding <=> CAST(:q AS vector) LIMIT 1"), {"q": str(queries[0].tolist())}).scalars())
        rows = []
        for ef in EFS:
            index = PgVectorIndex(engine, vectors.shape[1], MODEL, PgVectorParams(ef_search=ef))
            found, times = timed(lambda q, index=index: index.search(q, "scope", k=1), queries)
            rows.append({"ef_search": ef, "recall_at_1": float(np.mean(np.asarray(found) >= truth - 1e-5)),
                         "p50_ms": statistics.median(times), "p99_ms": p(times, 0.99)})
        engine.dispose()
    local = SemanticIndex(vectors.shape[1], HnswParams())
    local.add_many(list(range(1, len(vectors) + 1)), ["scope"] * len(vectors), vectors)
    found, times = timed(lambda q: local.search(q, "scope", k=1), queries)
    hnsw = {"ef": local.params.ef_search, "recall_at_1": float(np.mean(np.asarray(found) >= truth - 1e-5)),
            "p50_ms": statistics.median(times), "p99_ms": p(times, 0.99)}
    return {"entries": len(vectors), "pg_index_build_s": round(build_s, 1), "uses_hnsw": HNSW_INDEX in plan,
            "pgvector": rows, "in_process": hnsw}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True, help=".npz written by bench.recall --cache")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    saved = np.load(args.cache)
    stored, queries = saved["stored"].astype(np.float32), saved["queries"][:args.queries].astype(np.float32)
    server = PgVectorServer().start()
    try:
        results = [run_size(server, stored[:size], queries) for size in args.sizes if size <= len(stored)]
    finally:
        server.stop()
    default = PgVectorParams().ef_search
    if args.json:
        print(json.dumps({"default_ef_search": default, "sizes": results}, indent=1))
        return
    for result in results:
        local = result["in_process"]
        print(f"{result['entries']} real QQP prompt embeddings, {len(queries)} held-out queries; pgvector HNSW "
              f"(m=16, ef_construction=64) built in {result['pg_index_build_s']} s, plan uses it: "
              f"{result['uses_hnsw']}; default ef_search = {default}")
        print(f"{'index':<22}{'recall@1':>10}{'p50 ms':>9}{'p99 ms':>9}{'p50 / in-process':>18}")
        print(f"{'in-process ef=' + str(local['ef']):<22}{local['recall_at_1']:>10.4f}{local['p50_ms']:>9.3f}"
              f"{local['p99_ms']:>9.3f}{1.0:>18.1f}")
        for row in result["pgvector"]:
            print(f"{'pgvector ef=' + str(row['ef_search']):<22}{row['recall_at_1']:>10.4f}{row['p50_ms']:>9.3f}"
                  f"{row['p99_ms']:>9.3f}{row['p50_ms'] / local['p50_ms']:>18.1f}")


if __name__ == "__main__":
    main()
