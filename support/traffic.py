"""A simulated deployment for the traffic loop: `datasets/stream.jsonl` replayed through a real gateway whose
stub upstream answers per intent, until shadows and audits have labelled its decisions.

Also a script printing the threshold chosen from that traffic beside the one chosen from labelled pairs:

    .venv/bin/python -m support.traffic --requests 300 --max-false-hit-rate 0.05 [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from eval.datasets import StreamRequest, load_stream
from index.settings import Settings
from support.services import REPO, GatewayProcess
from support.stub_upstream import StubUpstream

STREAM = REPO / "datasets" / "stream.jsonl"
PAIRS = REPO / "datasets" / "pairs-dev.jsonl"
ADMIN = {"Authorization": "Bearer admin-secret"}
# Loose enough that decisions land above and below it, so both audits (hits) and shadows (misses) label them.
LOOSE_MIN_SIMILARITY = 0.70
LOG_FLOOR = 0.5
THRESHOLDS = "0.70:0.99:0.01"


@dataclass(frozen=True)
class Deployment:
    """A gateway (with its stub upstream) whose SQLite database holds the decision log."""

    gateway: GatewayProcess
    database_url: str


def stream_prefix(limit: int | None = None) -> Sequence[StreamRequest]:
    requests = load_stream(STREAM)
    return requests[:limit] if limit is not None else requests


def deployment_env(stub_url: str, data_dir: Path) -> dict[str, str]:
    return {
        "DEJA_UPSTREAM_URL": stub_url,
        "DEJA_DATA_DIR": str(data_dir),
        "DEJA_ADMIN_TOKEN": "admin-secret",
        "DEJA_LOG_LEVEL": "warning",
        # The threshold loop (sweep --traffic --apply) is what this deployment exercises.
        "DEJA_DECISION": "threshold",
        "DEJA_MIN_SIMILARITY": str(LOOSE_MIN_SIMILARITY),
        "DEJA_DECISION_LOG_FLOOR": str(LOG_FLOOR),
        "DEJA_AUDIT_RATE": "1.0",
        # Sequential traffic keeps few audits in flight; the headroom makes sure none is skipped.
        "DEJA_AUDIT_CONCURRENCY": "16",
    }


@contextmanager
def deployment(requests: Sequence[StreamRequest], data_dir: Path) -> Iterator[Deployment]:
    """A stub upstream answering every prompt of `requests` by its intent, and a gateway in front of it."""
    with StubUpstream(answers={r.prompt: r.intent for r in requests}) as stub:
        env = deployment_env(stub.url, data_dir)
        gateway = GatewayProcess(env, data_dir / "gateway.log").start()
        try:
            yield Deployment(gateway, Settings(data_dir=data_dir, database_url=None).sql_url)
        finally:
            gateway.stop()


def replay(url: str, requests: Sequence[StreamRequest], api_key: str) -> Counter[str]:
    """Send every request in order; returns how many got each `X-Deja-Cache` verdict."""
    verdicts: Counter[str] = Counter()
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {api_key}"}) as client:
        for request in requests:
            body = {"model": "stub-model", "messages": [{"role": "user", "content": request.prompt}]}
            response = client.post("/v1/chat/completions", json=body)
            response.raise_for_status()
            verdicts[response.headers["x-deja-cache"]] += 1
    return verdicts


def stats(url: str) -> dict[str, Any]:
    response = httpx.get(url + "/deja/stats", headers=ADMIN, timeout=10)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def label_total(url: str) -> int:
    return sum(n for tally in stats(url)["labels"].values() for n in tally.values())


def settle_labels(url: str, quiet: float = 2.0, timeout: float = 60.0) -> int:
    """Wait until no new label has arrived for `quiet` seconds (shadows and audits run in the background)."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        total = label_total(url)
        if total != last:
            last, since = total, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return total
        time.sleep(0.25)
    raise TimeoutError(f"labels still arriving after {timeout} s (last count {last})")


def eval_sweep(*args: str) -> dict[str, Any]:
    """`python -m eval sweep ... --json` in a subprocess (the real CLI), parsed."""
    done = subprocess.run([sys.executable, "-m", "eval", "sweep", *args, "--json"], cwd=REPO, capture_output=True,
                          text=True, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"eval sweep {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def traffic_sweep(database_url: str, target: float, *extra: str) -> dict[str, Any]:
    # The loop's gateway runs the cosine rule (threshold mode), whose thresholds --apply stores.
    return eval_sweep("--traffic", "--database-url", database_url, "--threshold", THRESHOLDS, "--decision",
                      "threshold", "--max-false-hit-rate", str(target), *extra)


def pairs_sweep(target: float) -> dict[str, Any]:
    return eval_sweep("--dataset", str(PAIRS), "--decision", "threshold", "--threshold", THRESHOLDS,
                      "--max-false-hit-rate", str(target))


def chosen(choice: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a threshold choice worth quoting."""
    point = choice["point"] or choice["closest"] or {}
    return {"threshold": choice["threshold"], "must_not_pairs": choice["must_not_pairs"],
            "hit_rate": point.get("hit_rate"), "false_hit_rate": point.get("false_hit_rate"),
            "false_hit_upper": point.get("false_hit_upper"), "closest_threshold": point.get("threshold")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="replay this many lines of stream.jsonl")
    parser.add_argument("--max-false-hit-rate", type=float, default=0.05)
    parser.add_argument("--keep", type=Path, help="keep the gateway's data folder here (default: a temp dir)")
    args = parser.parse_args()
    requests = stream_prefix(args.requests)
    with tempfile.TemporaryDirectory(prefix="deja-traffic-") as tmp:
        data_dir = args.keep or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with deployment(requests, data_dir) as deployed:
            verdicts = replay(deployed.gateway.url, requests, "sk-traffic")
            labels = settle_labels(deployed.gateway.url)
            label_sources = stats(deployed.gateway.url)["labels"]
        traffic = traffic_sweep(deployed.database_url, args.max_false_hit_rate)
        pairs = pairs_sweep(args.max_false_hit_rate)
    summary = {
        "requests": len(requests), "verdicts": dict(verdicts), "labels": labels, "label_sources": label_sources,
        "target": args.max_false_hit_rate, "seconds": round(time.monotonic() - started, 1),
        "traffic": chosen(traffic["sweeps"][0]["report"]["choices"][-1]),
        "pairs_dev": chosen(pairs["choices"][-1]),
        "database_url": deployed.database_url if args.keep else None,
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
