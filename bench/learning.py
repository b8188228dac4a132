"""The learned threshold through a live gateway: a trace replayed in order over HTTP through a real gateway at its
defaults (no label model; the stub upstream answers per intent, each call worded differently), from a cold cache,
`--runs` times, beside the same gateway at fixed thresholds (`DEJA_LEARN_THRESHOLD=false`). Per run: each half's
correct ÷ requests and wrong ÷ served, and the threshold `/deja/budget` shows at the end. The runs of the learning
gateway differ only in timing (labels land in the background), so their second halves say how much the outcome
depends on it.

    .venv/bin/python -m bench.learning [--stream datasets/trace2.jsonl | --clusters FILE] [--runs 2]
        [--fixed 0.86,0.92] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.budget import ADMIN, part, replay
from eval.datasets import StreamRequest, load_clusters, load_stream
from support.services import REPO, GatewayProcess
from support.stub_upstream import StubUpstream


def after_pass(url: str, since: float, timeout: float = 60.0) -> dict[str, Any]:
    """`/deja/budget` once the gateway's upkeep has run a pass after `since` (wall-clock): a read shows what the
    last pass stored, and the threshold at the end is the one learned from the whole replay."""
    deadline = time.monotonic() + timeout
    while True:
        report: dict[str, Any] = httpx.get(url + "/deja/budget", headers=ADMIN, timeout=30).json()
        if (report["at"] or 0.0) >= since or time.monotonic() > deadline:
            return report
        time.sleep(0.5)


def run(requests: Sequence[StreamRequest], folder: Path, fixed: float | None,
        settings: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One run; `settings`: DEJA_* variables the gateway runs with besides its defaults."""
    folder.mkdir()
    with StubUpstream(answers={r.prompt: r.intent for r in requests}, vary=True) as stub:
        env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(folder), "DEJA_ADMIN_TOKEN": "admin-secret",
               "DEJA_LOG_LEVEL": "warning", **(settings or {})}
        if fixed is not None:
            env |= {"DEJA_LEARN_THRESHOLD": "false", "DEJA_MIN_SIMILARITY": str(fixed)}
        gateway = GatewayProcess(env, folder / "gateway.log").start()
        try:
            started = time.monotonic()
            results = replay(gateway.url, requests)
            seconds = time.monotonic() - started
            report = after_pass(gateway.url, time.time())
        finally:
            gateway.stop()
    half = len(results) // 2
    thresholds = [row["threshold"] for row in report.get("thresholds", [])]
    return {"fixed": fixed, "seconds": round(seconds, 1), "first_half": part(results[:half]),
            "second_half": part(results[half:]), "whole": part(results), "threshold_at_end": thresholds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", type=Path, default=None)
    parser.add_argument("--clusters", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=2, help="learning runs (they differ only in timing)")
    parser.add_argument("--fixed", default="", help="fixed thresholds to run beside, e.g. 0.86,0.92")
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N requests")
    args = parser.parse_args()
    if args.clusters is not None:
        requests = load_clusters(args.clusters)[: args.limit]
    else:
        requests = load_stream(args.stream or REPO / "datasets" / "trace2.jsonl")[: args.limit]
    fixed = [float(t) for t in args.fixed.split(",") if t.strip()]
    with tempfile.TemporaryDirectory(prefix="deja-learning-") as tmp:
        runs = [run(requests, Path(tmp) / f"learning-{i}", None) for i in range(args.runs)]
        runs += [run(requests, Path(tmp) / f"fixed-{t}", t) for t in fixed]
    print(json.dumps({"requests": len(requests), "runs": runs}, indent=2))
    for r in runs:
        name = "learning" if r["fixed"] is None else f"fixed {r['fixed']}"
        second, whole = r["second_half"], r["whole"]
        print(f"{name}: second half correct {second['correct']} wrong ÷ served {second['wrong_over_served']} · "
              f"whole {whole['correct']} / {whole['wrong_over_served']} · threshold at end {r['threshold_at_end']}")


if __name__ == "__main__":
    main()
