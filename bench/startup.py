"""Start-up time and memory of a gateway over N stored entries: random unit vectors written straight into SQL,
then (1) a start that rebuilds the HNSW index from SQL and saves a snapshot at shutdown, and (2) a start from
that snapshot. Start-up is process start to `/readyz` answering 200. Prints one JSON object (the snapshot start,
with the rebuild's figures beside it).

    .venv/bin/python -m bench.startup --entries 100000 --json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import psutil
from sqlalchemy import insert

from index.embedding.embedder import BUNDLED_MODEL_ID, OnnxMiniLMEmbedder
from index.storage.entries import EntryStore, make_engine
from index.storage.schema import entries
from support.services import REPO, free_port

DIM = 384
RESPONSE = json.dumps({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {
    "role": "assistant", "content": "A stored answer of typical length for the benchmark."}}]})


def fill(url: str, n: int, model_id: str, scopes: int = 100, chunk: int = 20_000) -> None:
    """`n` entries with random unit vectors in `scopes` scopes (no embedding: start-up cost is what we measure)."""
    store = EntryStore(make_engine(url))
    store.create_schema()
    rng = np.random.default_rng(0)
    now = time.time()
    with store.engine.begin() as conn:
        for start in range(0, n, chunk):
            size = min(chunk, n - start)
            vectors = rng.standard_normal((size, DIM), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            conn.execute(insert(entries), [{
                "namespace": "bench", "exact_key": hashlib.sha256(str(i).encode()).hexdigest(),
                "context_key": f"{i % scopes:064x}", "model": "bench", "prompt": f"stored prompt {i}",
                "vector": vectors[i - start].tobytes(), "response": RESPONSE, "created_at": now - 60,
                "expires_at": None, "hits": 0, "embedding_model": model_id,
            } for i in range(start, start + size)])
            print(f"  {start + size} entries written", file=sys.stderr)
    store.engine.dispose()


@dataclass(frozen=True)
class Start:
    seconds: float
    rss_mb: float
    from_snapshot: bool


def start_once(env: dict[str, str], log: Path, timeout: float) -> Start:
    port = free_port()
    started = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port",
                                 str(port)], env={**os.environ, **env}, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        while time.perf_counter() - started < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError("gateway not ready in time")
        seconds = time.perf_counter() - started
        rss = psutil.Process(proc.pid).memory_info().rss / 2**20
    finally:
        proc.terminate()  # graceful: the lifespan saves the snapshot
        proc.wait(timeout=900)
    lines = log.read_text().splitlines()
    ready = [line for line in lines if "index ready" in line]
    return Start(seconds, rss, bool(ready) and "from snapshot" in ready[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--embedder", choices=["torch", "onnx"], default="onnx")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model_id = OnnxMiniLMEmbedder.model_id if args.embedder == "onnx" else BUNDLED_MODEL_ID
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        fill(f"sqlite:///{data / 'deja.db'}", args.entries, model_id)
        env = {"DEJA_DATA_DIR": str(data), "DEJA_LOG_LEVEL": "info", "DEJA_EMBEDDER": args.embedder,
               "DEJA_UPSTREAM_URL": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1", "DEJA_MAX_ENTRIES": "100000000",
               "DEJA_SNAPSHOT_INTERVAL_SECONDS": "86400"}
        rebuild = start_once(env, Path(tmp) / "rebuild.log", args.timeout)
        snapshot = start_once(env, Path(tmp) / "snapshot.log", args.timeout)
        snapshot_mb = sum(f.stat().st_size for f in (data / "snapshot").iterdir()) / 2**20
    result = {"entries": args.entries, "startup_s": round(snapshot.seconds, 2), "rss_mb": round(snapshot.rss_mb),
              "from_snapshot": snapshot.from_snapshot, "rebuild_startup_s": round(rebuild.seconds, 2),
              "rebuild_rss_mb": round(rebuild.rss_mb), "snapshot_mb": round(snapshot_mb),
              "embedder": args.embedder, "cores": os.cpu_count()}
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:<20}{value}")


if __name__ == "__main__":
    main()
