"""A million entries on this machine: start-up, memory and the semantic hit at scale, beside a small index, in
one run.

Two data folders are filled straight into SQL (batch inserts, no embedding) and their snapshots built in this
process with the index's own bulk build (`SemanticIndex.add_many`, hnswlib on every core): one of `--entries`
(default 1,000,000) and one of `--small` (default 10,000). Each holds, in the scope a benchmark caller's requests
fall in (computed with the gateway's own key code), the stored sides of real paraphrase pairs (LangCache and QQP,
embedded) among random unit vectors; `--scopes` spreads the random rest over that many scopes (1: one tenant
holding everything, the worst case for a search; more: the scope's share shrinks and the graph walk filters).
Then both gateways start from their snapshots (process start to `/readyz`, RSS once ready), and each paraphrase
is asked of both, interleaved, once: the semantic-hit p50 of each and their ratio. A folder given with `--keep`
is reused when it holds a snapshot already (the build is the long part: minutes at 1M on 2 cores).

    .venv/bin/python -m bench.scale [--entries 1000000] [--small 10000] [--scopes 1] [--keep /tmp/deja-scale] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import insert

from bench.hit_cost import SHARED, paraphrases
from bench.startup import DIM, RESPONSE, build_snapshot, start_once
from index.embedding.embedder import OnnxMiniLMEmbedder
from index.request.keys import key_for, namespace_for
from index.settings import Settings
from index.storage.entries import EntryStore, make_engine
from index.storage.schema import entries
from service.dialects import CHAT

KEY = "sk-bench-scale"
MODEL = "bench"


def body(text: str) -> dict[str, object]:
    return {"model": MODEL, "messages": [{"role": "user", "content": text}]}


def bench_scope(data: Path, text: str) -> tuple[str, str, str]:
    """(namespace, context key, scope) of the benchmark caller's single-turn request, as the gateway keys it
    (the namespace secret is generated into `data` as the gateway would)."""
    settings = Settings(data_dir=data)
    policy = settings.policy()
    key = key_for(namespace_for(KEY, settings.secret_bytes()), CHAT.canonical(body(text), {}), policy.context_match,
                  policy.max_decision_chars)
    return key.namespace, key.context, key.scope


def fill(data: Path, n: int, stored: list[str], scopes: int, chunk: int = 20_000) -> None:
    """`n` entries: the embedded `stored` prompts first, then random unit vectors; every `scopes`-th random row in
    the benchmark caller's scope, the others in `scopes - 1` other scopes."""
    embedder = OnnxMiniLMEmbedder(threads=1)
    namespace, context, scope = bench_scope(data, stored[0])
    store = EntryStore(make_engine(f"sqlite:///{data / 'deja.db'}"))
    store.create_schema()
    rng = np.random.default_rng(0)
    now = time.time()
    real = np.asarray(embedder.embed(stored), np.float32)
    with store.engine.begin() as conn:
        for start in range(0, n, chunk):
            size = min(chunk, n - start)
            vectors = rng.standard_normal((size, DIM), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = []
            for i in range(start, start + size):
                ours = i < len(stored) or i % scopes == 0
                vector = real[i] if i < len(stored) else vectors[i - start]
                other = f"{i % scopes:064x}"
                rows.append({
                    "namespace": namespace if ours else "other", "model": MODEL,
                    "exact_key": hashlib.sha256(f"scale {i}".encode()).hexdigest(),
                    "context_key": context if ours else other, "scope_key": scope if ours else other,
                    "prompt": stored[i] if i < len(stored) else f"stored prompt {i}",
                    "vector": vector.tobytes(), "prompt_vector": vector.tobytes(), "response": RESPONSE,
                    "created_at": now - 60, "expires_at": None, "hits": 0,
                    "embedding_model": embedder.model_id})
            conn.execute(insert(entries), rows)
            print(f"  {start + size} entries written", file=sys.stderr)
    store.engine.dispose()


def prepare(data: Path, n: int, stored: list[str], scopes: int) -> float | None:
    """Fill and build `data` unless it holds a snapshot already; the build's seconds (None: reused)."""
    if (data / "snapshot" / "manifest.json").exists():
        return None
    data.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    fill(data, n, stored, scopes)
    build_snapshot(f"sqlite:///{data / 'deja.db'}", data / "snapshot", OnnxMiniLMEmbedder.model_id)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--scopes", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="folder to build into and reuse across runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pairs = paraphrases(SHARED, args.pairs)
    stored = [a for a, _ in pairs]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        folders = {"large": root / f"n{args.entries}-s{args.scopes}", "small": root / f"n{args.small}-s{args.scopes}"}
        sizes = {"large": args.entries, "small": args.small}
        built = {name: prepare(folder, sizes[name], stored, args.scopes) for name, folder in folders.items()}
        result: dict[str, object] = {"entries": args.entries, "small": args.small, "scopes": args.scopes,
                                     "cores": os.cpu_count()}
        gateways = {}
        for name, folder in folders.items():
            env = {"DEJA_DATA_DIR": str(folder), "DEJA_LOG_LEVEL": "info", "DEJA_UPSTREAM_URL": "http://127.0.0.1:9",
                   "HF_HUB_OFFLINE": "1", "DEJA_MAX_ENTRIES": "100000000", "DEJA_AUDIT_RATE": "0",
                   "DEJA_SNAPSHOT_INTERVAL_SECONDS": "86400"}
            start = start_once(env, Path(tmp) / f"{name}.log", 900, keep=True)
            gateways[name] = start
            result[name] = {"startup_s": round(start.seconds, 2), "rss_mb": round(start.rss_mb),
                            "from_snapshot": start.from_snapshot, "build_s": built[name] and round(built[name], 1)}
        try:
            samples: dict[str, list[float]] = {name: [] for name in gateways}
            clients = {name: httpx.Client(base_url=g.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
                       for name, g in gateways.items()}
            for i, (_, paraphrase) in enumerate(pairs):
                order = list(clients.items())
                for name, client in order[i % 2:] + order[:i % 2]:
                    started = time.perf_counter()
                    response = client.post("/v1/chat/completions", json=body(paraphrase))
                    ms = (time.perf_counter() - started) * 1000
                    if response.headers.get("x-deja-cache") == "hit-semantic":
                        samples[name].append(ms)
            for name, values in samples.items():
                row = result[name]
                assert isinstance(row, dict)
                row.update(semantic_hits=len(values), semantic_p50_ms=round(statistics.median(values), 3)
                           if values else None)
        finally:
            for g in gateways.values():
                g.stop()
    large, small = result["large"], result["small"]
    assert isinstance(large, dict) and isinstance(small, dict)
    if large.get("semantic_p50_ms") and small.get("semantic_p50_ms"):
        result["semantic_p50_large_over_small"] = round(large["semantic_p50_ms"] / small["semantic_p50_ms"], 3)
    print(json.dumps(result, indent=1) if args.json else "\n".join(f"{k:<32}{v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
