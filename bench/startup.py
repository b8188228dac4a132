"""Start-up time and memory of a gateway over N stored entries: random unit vectors written straight into SQL,
then (1) a start that rebuilds the HNSW index from SQL and saves a snapshot at shutdown, and (2) a start from
that snapshot. Start-up is process start to `/readyz` answering 200. Prints one JSON object (the snapshot start,
with the rebuild's figures beside it). `--snapshot inprocess` builds the snapshot once in this process instead of
through a rebuilding gateway (what 1M entries need: one graph build, no second process holding it), and measures
only the start from it.

    .venv/bin/python -m bench.startup --entries 100000 --json
    .venv/bin/python -m bench.startup --entries 1000000 --snapshot inprocess --json
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
from index.search.hnsw import SemanticIndex
from index.search.snapshot import SnapshotDir
from index.storage.entries import EntryStore, IndexedVector, make_engine
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


def build_snapshot(url: str, folder: Path, model_id: str, chunk: int = 50_000) -> float:
    """The snapshot a gateway would save, built here from the stored vectors; returns the build seconds."""
    store = EntryStore(make_engine(url))
    index = SemanticIndex(DIM)
    started = time.perf_counter()
    pending: list[IndexedVector] = []

    def add() -> None:
        index.add_many([i.entry_id for i in pending], [i.scope for i in pending], np.stack([i.vector for i in pending]))
        pending.clear()
        print(f"  {len(index)} entries in the graph", file=sys.stderr)

    for item in store.vectors():
        pending.append(item)
        if len(pending) >= chunk:
            add()
    if pending:
        add()
    SnapshotDir(folder).save(index, model_id, store.last_tombstone(), time.time())
    store.engine.dispose()
    return time.perf_counter() - started


@dataclass
class Start:
    seconds: float
    rss_mb: float
    from_snapshot: bool
    url: str = ""
    proc: subprocess.Popen[bytes] | None = None

    def stop(self) -> None:
        """Stop a gateway `start_once(..., keep=True)` left running (graceful: the lifespan saves the snapshot)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=900)
            self.proc = None


def start_once(env: dict[str, str], log: Path, timeout: float, keep: bool = False) -> Start:
    """Start a gateway and time it to `/readyz`; stopped again unless `keep` (then `Start.stop` stops it)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port",
                                 str(port)], env={**os.environ, **env}, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    start = Start(0.0, 0.0, False, url, proc)
    try:
        while time.perf_counter() - started < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError("gateway not ready in time")
        start.seconds = time.perf_counter() - started
        start.rss_mb = psutil.Process(proc.pid).memory_info().rss / 2**20
    except BaseException:
        start.stop()
        raise
    if not keep:
        start.stop()
    ready = [line for line in log.read_text().splitlines() if "index ready" in line]
    start.from_snapshot = bool(ready) and "from snapshot" in ready[-1]
    return start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--embedder", choices=["torch", "onnx"], default="onnx")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--snapshot", choices=["gateway", "inprocess"], default="gateway",
                        help="who builds the snapshot: a first, rebuilding gateway start, or this process")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model_id = OnnxMiniLMEmbedder.model_id if args.embedder == "onnx" else BUNDLED_MODEL_ID
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        fill(f"sqlite:///{data / 'deja.db'}", args.entries, model_id)
        env = {"DEJA_DATA_DIR": str(data), "DEJA_LOG_LEVEL": "info", "DEJA_EMBEDDER": args.embedder,
               "DEJA_UPSTREAM_URL": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1", "DEJA_MAX_ENTRIES": "100000000",
               "DEJA_SNAPSHOT_INTERVAL_SECONDS": "86400"}
        built: dict[str, float] = {}
        if args.snapshot == "inprocess":
            built["snapshot_build_s"] = round(build_snapshot(f"sqlite:///{data / 'deja.db'}", data / "snapshot",
                                                             model_id), 1)
        else:
            rebuild = start_once(env, Path(tmp) / "rebuild.log", args.timeout)
            built = {"rebuild_startup_s": round(rebuild.seconds, 2), "rebuild_rss_mb": round(rebuild.rss_mb)}
        snapshot = start_once(env, Path(tmp) / "snapshot.log", args.timeout)
        snapshot_mb = sum(f.stat().st_size for f in (data / "snapshot").iterdir()) / 2**20
    result = {"entries": args.entries, "startup_s": round(snapshot.seconds, 2), "rss_mb": round(snapshot.rss_mb),
              "from_snapshot": snapshot.from_snapshot, **built, "snapshot_mb": round(snapshot_mb),
              "embedder": args.embedder, "cores": os.cpu_count()}
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:<20}{value}")


if __name__ == "__main__":
    main()
