"""One tenant cannot slow the others: tenant B's exact-hit latency through a real uvicorn gateway, idle, while
tenant A floods with 1 KB prompts (a control), and while A sends long near-duplicate prompts (78 KB by default,
each differing from the last in one word) from several threads at once (each honouring the Retry-After of a 429,
as SDK clients do). Prints B's p50/p99 per phase and the ratios (the target: within 2x of idle). The stub upstream
and tenant A run in processes of their own, so B's client measures the gateway, not the GIL of a process busy
building 78 KB bodies.

    .venv/bin/python -m bench.tenants [--kb 78] [--senders 4] [--repeat 200] [--max-decision-chars 4000]

`--max-decision-chars 100000` lets the decision read the whole long prompt (the cap off, for comparison).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import p
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream

WORDS = ("the", "invoice", "server", "returns", "an", "error", "when", "customer", "uploads", "a", "report", "with",
         "totals", "for", "each", "region", "and", "quarter", "after", "midnight", "on", "Friday")
B_PROMPT = "How do I rotate the signing key of the billing webhook?"


def long_prompt(kb: int, rng: random.Random) -> str:
    words: list[str] = []
    size = 0
    while size < kb * 1024:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words) + "?"


def chat(text: str) -> dict[str, object]:
    return {"model": "bench", "messages": [{"role": "user", "content": text}]}


class Flood:
    """`senders` threads of tenant A, each posting near-duplicates of one long prompt until stopped."""

    def __init__(self, url: str, kb: int, senders: int) -> None:
        self.url, self.kb, self.senders = url, kb, senders
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(senders)]

    def _run(self, seed: int) -> None:
        rng = random.Random(seed)
        base = long_prompt(self.kb, rng).split(" ")
        with httpx.Client(base_url=self.url, headers={"Authorization": "Bearer sk-tenant-a"}, timeout=120) as client:
            n = 0
            while not self.stop.is_set():
                words = list(base)
                words[rng.randrange(len(words))] = f"item{n}"  # a near-duplicate: one word differs
                n += 1
                started = time.perf_counter()
                response = client.post("/v1/chat/completions", json=chat(" ".join(words)))
                with self._lock:
                    self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
                    if response.status_code == 200:
                        self.latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code == 429:  # as a client should: wait as long as the gateway asks
                    self.stop.wait(float(response.headers.get("retry-after", "1")))

    def __enter__(self) -> Flood:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(150)


def _serve_stub(urls: mp.Queue, stop: threading.Event) -> None:  # type: ignore[type-arg]
    with StubUpstream() as stub:
        urls.put(stub.url)
        stop.wait()


def _flood(url: str, kb: int, senders: int, stop: threading.Event, results: mp.Queue) -> None:  # type: ignore[type-arg]
    with Flood(url, kb, senders) as flood:
        stop.wait()
    results.put((flood.latencies, flood.statuses))


def exact_hits(client: httpx.Client, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.post("/v1/chat/completions", json=chat(B_PROMPT))
        samples.append((time.perf_counter() - started) * 1000)
        assert response.headers["x-deja-cache"] == "hit-exact", response.headers
    return samples


def _flood_phase(ctx: Any, url: str, kb: int, args: argparse.Namespace, client: httpx.Client
                 ) -> tuple[list[float], list[float], dict[int, int]]:
    """B's exact hits while A floods with `kb` KB prompts: (B's samples, A's 200 latencies, A's statuses)."""
    stop, results = ctx.Event(), ctx.Queue()
    flood = ctx.Process(target=_flood, args=(url, kb, args.senders, stop, results))
    flood.start()
    time.sleep(args.settle)  # let the flood reach its steady state
    loaded = exact_hits(client, args.repeat)
    stop.set()
    latencies, statuses = results.get(timeout=300)
    flood.join(60)
    return loaded, latencies, statuses


def run(tmp: Path, args: argparse.Namespace) -> None:
    ctx = mp.get_context("spawn")
    urls, stop_stub = ctx.Queue(), ctx.Event()
    stub = ctx.Process(target=_serve_stub, args=(urls, stop_stub), daemon=True)
    stub.start()
    phases: list[tuple[str, list[float], list[float], dict[int, int]]] = []
    try:
        env = {"DEJA_UPSTREAM_URL": urls.get(timeout=60), "DEJA_DATA_DIR": str(tmp / "gw"),
               "DEJA_LOG_LEVEL": "warning", "DEJA_AUDIT_RATE": "0",
               "DEJA_MAX_DECISION_CHARS": str(args.max_decision_chars)}
        gateway = GatewayProcess(env, tmp / "gw.log").start()
        try:
            with httpx.Client(base_url=gateway.url, headers={"Authorization": "Bearer sk-tenant-b"},
                              timeout=120) as client:
                assert client.post("/v1/chat/completions", json=chat(B_PROMPT)).headers["x-deja-cache"] == "miss"
                exact_hits(client, 20)  # warm-up
                phases.append(("idle", exact_hits(client, args.repeat), [], {}))
                for kb in (1, args.kb):
                    phases.append((f"A floods {kb} KB", *_flood_phase(ctx, gateway.url, kb, args, client)))
        finally:
            gateway.stop()
    finally:
        stop_stub.set()
        stub.join(30)
    report(phases, args)


def report(phases: list[tuple[str, list[float], list[float], dict[int, int]]], args: argparse.Namespace) -> None:
    idle = statistics.median(phases[0][1])
    print(f"tenant A: {args.senders} senders of near-duplicates; decision cap {args.max_decision_chars} chars")
    print(f"{'phase':<18}{'B p50 ms':>10}{'B p99 ms':>10}{'B p50 / idle':>14}{'A 200s':>8}{'A 429s':>8}"
          f"{'A p50 ms':>10}")
    for name, b, a, statuses in phases:
        a_p50 = f"{statistics.median(a):.0f}" if a else "-"
        print(f"{name:<18}{statistics.median(b):>10.2f}{p(b, 0.99):>10.2f}{statistics.median(b) / idle:>14.2f}"
              f"{statuses.get(200, 0):>8}{statuses.get(429, 0):>8}{a_p50:>10}")
    small, large = statistics.median(phases[1][1]), statistics.median(phases[2][1])
    print(f"ratio B p50 while A sends {args.kb} KB / idle: {large / idle:.2f}x (target: <= 2.00x); "
          f"vs A sending 1 KB: {large / small:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=int, default=78, help="size of tenant A's prompts")
    parser.add_argument("--senders", type=int, default=4, help="tenant A's concurrent senders")
    parser.add_argument("--repeat", type=int, default=200, help="tenant B's exact hits per phase")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds of flood before B is measured")
    parser.add_argument("--max-decision-chars", type=int, default=4000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), args)


if __name__ == "__main__":
    main()
