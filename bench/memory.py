"""Memory per cache entry, side by side: the semantic index in RSS (SemanticIndex, dim 384, random unit vectors)
and the SQL row of an entry (384-dim float32 vector, ~1 KB response), each extrapolated to one million entries.

    .venv/bin/python -m bench.memory [--sizes 50000,200000] [--postgres] [--redis redis://127.0.0.1:6379/0]

The index is built in forked children (one per parameter set, run side by side) so that each RSS delta is its
own. ef_construction decides how long an insert takes, not how much memory an entry holds (hnswlib gives every
element the same fixed-size link lists for a given `m`), so the large sizes are built with ef_construction=16;
the default parameters are built to --rate-size for the build rate and to confirm the two agree there.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import redis

from index.records import CachedResponse, CacheEntry
from index.search.hnsw import HnswParams, SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.redis_exact import RedisExactCache

DIM = 384
MB = 1024 * 1024
MILLION = 1_000_000
WORDS = ("the", "invoice", "export", "account", "password", "billing", "portal", "reset", "settings", "user", "team",
         "plan", "upgrade", "limit", "request", "token", "model", "answer", "cache", "support", "policy", "refund",
         "date", "region", "storage", "api", "key", "rotate")


def status_bytes(field: str) -> int:
    """A `Vm*` line of /proc/self/status (kB) in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


@dataclass(frozen=True)
class IndexPoint:
    label: str
    entries: int
    rss_bytes: int  # RSS now minus RSS before the index was created
    peak_bytes: int  # VmHWM minus the same baseline
    seconds: float  # building time so far, wall clock
    cpu_seconds: float  # the same in this process's CPU time: what an idle core would take

    @property
    def per_entry(self) -> float:
        return self.rss_bytes / self.entries


def context_key(i: int, contexts: int) -> str:
    # A new str per entry, as Cache.warm() passes each row's context_key: the index keeps one per entry.
    return hashlib.sha256(str(i % contexts).encode()).hexdigest()


def build_index(label: str, params: HnswParams, checkpoints: list[int], contexts: int, out: Connection) -> None:
    """Child process: add random unit vectors one at a time (as warm() does) and report RSS at checkpoints."""
    rng = np.random.default_rng(0)
    gc.collect()
    base = status_bytes("VmRSS")
    index = SemanticIndex(DIM, params)
    points: list[IndexPoint] = []
    added, started, cpu_started = 0, time.perf_counter(), time.process_time()
    for target in checkpoints:
        while added < target:
            added = add_random(index, rng, added, min(1000, target - added), contexts)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        gc.collect()
        points.append(IndexPoint(label, added, status_bytes("VmRSS") - base, status_bytes("VmHWM") - base,
                                 elapsed, cpu))
        print(f"  {label}: {added:,} entries in {elapsed:.0f} s", file=sys.stderr)
    out.send(points)
    out.close()


def add_random(index: SemanticIndex, rng: np.random.Generator, last_id: int, count: int, contexts: int) -> int:
    """Add `count` random unit vectors with ids after `last_id`; the batch is freed on return."""
    batch = rng.standard_normal((count, DIM), dtype=np.float32)
    batch /= np.linalg.norm(batch, axis=1, keepdims=True)
    for vector in batch:
        last_id += 1
        index.add(last_id, context_key(last_id, contexts), vector)
    return last_id


def measure_index(sizes: list[int], rate_size: int, contexts: int) -> list[IndexPoint]:
    default = HnswParams()
    runs = [(f"default (m={default.m}, ef_construction={default.ef_construction})", default,
             sorted({rate_size // 2, rate_size})),
            (f"memory-only (m={default.m}, ef_construction=16)", replace(default, ef_construction=16),
             sorted({rate_size, *sizes}))]
    ctx = mp.get_context("fork")
    children = []
    for label, params, checkpoints in runs:
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=build_index, args=(label, params, checkpoints, contexts, send))
        proc.start()
        children.append((proc, receive))
    points: list[IndexPoint] = []
    for proc, receive in children:
        points += receive.recv()
        proc.join()
    return points


def response_body(i: int, size: int = 1024) -> dict[str, Any]:
    """An OpenAI chat.completion whose JSON is about `size` bytes."""
    rng = np.random.default_rng(i)
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.UUID(int=i).hex}", "object": "chat.completion", "created": 1700000000,
        "model": "gpt-4o-mini", "system_fingerprint": "fp_0000000000",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop",
                     "logprobs": None}],
        "usage": {"prompt_tokens": 24, "completion_tokens": 180, "total_tokens": 204},
    }
    room = size - len(_json(body))
    words = [WORDS[k] for k in rng.integers(0, len(WORDS), room)]  # more than enough; cut to length below
    body["choices"][0]["message"]["content"] = " ".join(words)[:room].rstrip()
    return body


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def entry(i: int) -> CacheEntry:
    rng = np.random.default_rng(i)
    vector = rng.standard_normal(DIM, dtype=np.float32)
    digest = hashlib.sha256(str(i).encode()).hexdigest()
    return CacheEntry(
        namespace=hashlib.sha256(b"tenant").hexdigest(), exact_key=digest, context_key=context_key(i, 1000),
        model="gpt-4o-mini", prompt=f"How do I export the invoices of my team account as PDF files? (variant {i})",
        response=response_body(i), vector=vector / np.linalg.norm(vector), created_at=time.time(),
        expires_at=time.time() + 7 * 24 * 3600)


@dataclass(frozen=True)
class StoreSize:
    backend: str
    entries: int
    total_bytes: int  # table + indexes (+ TOAST on PostgreSQL)
    detail: str

    @property
    def per_entry(self) -> float:
        return self.total_bytes / self.entries


def sqlite_size(rows: list[CacheEntry]) -> StoreSize:
    with tempfile.TemporaryDirectory() as tmp:
        store = EntryStore(make_engine(f"sqlite:///{Path(tmp) / 'deja.db'}"))
        store.create_schema()
        before = _sqlite_objects(store)
        for row in rows:
            store.add(row)
        after = _sqlite_objects(store)
        store.engine.dispose()
    grown = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    grown = {name: size for name, size in grown.items() if size > 0}
    detail = ", ".join(f"{name} {size / len(rows):.0f}" for name, size in sorted(grown.items(), key=lambda kv: -kv[1]))
    return StoreSize("SQLite", len(rows), sum(grown.values()), detail)


def _sqlite_objects(store: EntryStore) -> dict[str, int]:
    """Bytes of each table and index (dbstat), after checkpointing the WAL into the file."""
    with store.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.exec_driver_sql("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").all()
    return {str(name): int(size) for name, size in rows}


def postgres_size(rows: list[CacheEntry]) -> StoreSize:
    from support.services import PgDatabase

    with PgDatabase() as db:
        store = EntryStore(make_engine(db.url))
        store.create_schema()
        before = _pg_sizes(store)
        for row in rows:
            store.add(row)
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE deja_entries")
        after = _pg_sizes(store)
        store.engine.dispose()
    grown = [a - b for a, b in zip(after, before, strict=True)]
    detail = f"heap {grown[1] / len(rows):.0f}, toast {grown[2] / len(rows):.0f}, indexes {grown[3] / len(rows):.0f}"
    return StoreSize("PostgreSQL", len(rows), grown[0], detail)


def _pg_sizes(store: EntryStore) -> tuple[int, int, int, int]:
    query = ("SELECT pg_total_relation_size('deja_entries'), pg_relation_size('deja_entries'), "
             "COALESCE((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class "
             "WHERE relname = 'deja_entries' AND reltoastrelid <> 0), 0), pg_indexes_size('deja_entries')")
    with store.engine.connect() as conn:
        total, heap, toast, indexes = conn.exec_driver_sql(query).one()
    return int(total), int(heap), int(toast), int(indexes)


def redis_size(url: str, rows: list[CacheEntry]) -> StoreSize:
    """The exact tier's copy of an entry: one key per request (prefix + 64-hex key -> response JSON)."""
    prefix = f"deja:b{uuid.uuid4().hex[:5]}:"  # as long as the gateway's "deja:exact:"
    exact = RedisExactCache(url, prefix=prefix)
    client = redis.Redis.from_url(url)
    try:
        for i, row in enumerate(rows, 1):
            exact.put(row.exact_key, CachedResponse(i, row.response, row.created_at), 7 * 24 * 3600.0)
        total = sum(int(client.memory_usage(key, samples=0) or 0)
                    for key in client.scan_iter(match=prefix + "*", count=1000))
    finally:
        exact.clear()
        client.close()
    return StoreSize("Redis (exact tier)", len(rows), total, "MEMORY USAGE per key, before allocator overhead")


def report(points: list[IndexPoint], stores: list[StoreSize], sizes: list[int], contexts: int) -> str:
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    lines = [f"semantic index: SemanticIndex(dim={DIM}), random unit vectors, {contexts:,} contexts, added one at "
             "a time as Cache.warm() does; RSS from /proc/self/status",
             f"({os.cpu_count()} cores, load average {load} at the end; rates are per CPU second, as on an idle core)",
             f"{'build':<42}{'entries':>9}{'RSS MB':>8}{'peak MB':>8}{'B/entry':>8}{'wall s':>8}{'CPU s':>8}"
             f"{'adds/CPU s':>11}"]
    for p in points:
        lines.append(f"{p.label:<42}{p.entries:>9,}{p.rss_bytes / MB:>8.1f}{p.peak_bytes / MB:>8.1f}"
                     f"{p.per_entry:>8.0f}{p.seconds:>8.1f}{p.cpu_seconds:>8.1f}{p.entries / p.cpu_seconds:>11.0f}")
    big = {p.entries: p for p in points if p.label.startswith("memory-only")}
    small, large = big[sizes[0]], big[sizes[-1]]
    marginal = (large.rss_bytes - small.rss_bytes) / max(1, large.entries - small.entries)
    at_million = large.rss_bytes + marginal * (MILLION - large.entries)
    default = [p for p in points if p.label.startswith("default")]
    # The rate of the last stretch, not the average: inserts get slower as the graph grows.
    rate = (default[-1].entries - default[0].entries) / (default[-1].cpu_seconds - default[0].cpu_seconds)
    lines += [
        f"marginal bytes per entry {small.entries:,} -> {large.entries:,}: {marginal:.0f} "
        f"(the vector alone is {DIM * 4} B)",
        f"index at {MILLION:,} entries (extrapolated): {at_million / MB:,.0f} MB RSS "
        f"= {at_million / 1e9:.2f} GB per replica",
        f"start-up rebuild of {MILLION:,} entries at the default build's rate {default[0].entries:,} -> "
        f"{default[-1].entries:,} ({rate:.0f} adds per CPU second): >= {MILLION / rate / 60:.0f} min on one core",
        "",
        f"{'SQL / exact tier, one entry':<44}{'entries':>10}{'B/entry':>9}{'GB per 1M':>11}  detail (B/entry)",
    ]
    for s in stores:
        lines.append(f"{s.backend:<44}{s.entries:>10,}{s.per_entry:>9.0f}{s.per_entry * MILLION / 1e9:>11.2f}"
                     f"  {s.detail}")
    sample = entry(0)
    lines.append(f"payload of that entry: vector {DIM * 4} B, response JSON {len(_json(sample.response))} B, "
                 f"prompt {len(sample.prompt)} B, keys 3 x 64 B")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="50000,200000", help="index sizes to measure, ascending")
    parser.add_argument("--rate-size", type=int, default=20000,
                        help="entries built with the default HnswParams, for the build rate")
    parser.add_argument("--contexts", type=int, default=1000, help="distinct context keys the entries share")
    parser.add_argument("--rows", type=int, default=5000, help="entries written to measure SQL row size")
    parser.add_argument("--postgres", action="store_true", help="also measure on a throwaway PostgreSQL database")
    parser.add_argument("--redis", metavar="URL", help="also measure the exact tier's copy in this Redis")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if len(sizes) < 2:
        parser.error("--sizes needs at least two sizes (the marginal cost is taken between them)")

    started = time.perf_counter()
    print("building indexes ...", file=sys.stderr)
    points = measure_index(sizes, args.rate_size, args.contexts)
    print("writing SQL rows ...", file=sys.stderr)
    rows = [entry(i) for i in range(args.rows)]
    stores = [sqlite_size(rows)]
    if args.postgres:
        stores.append(postgres_size(rows))
    if args.redis:
        stores.append(redis_size(args.redis, rows))
    print(report(points, stores, sizes, args.contexts))
    print(f"(ran in {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
