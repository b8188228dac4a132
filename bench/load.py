"""Throughput and latency under concurrency through a real uvicorn gateway, side by side in one run: 1 vs N
clients for misses, semantic hits and exact hits, against a loopback stub upstream that waits 50 ms. Every
response is checked: errors, 5xx and unexpected verdicts are counted (a load run must have none).

    .venv/bin/python -m bench.load [--seconds 6] [--clients 32] [--json]
    .venv/bin/python -m bench.load --clients 30 --mix --seconds 20   # hits and misses mixed, 30 clients
    .venv/bin/python -m bench.load --only miss --profile /tmp/miss.txt  # py-spy samples of the gateway
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.common import p
from bench.raw_client import raw_exact
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream

# (stored question, paraphrase served from it): cosine well above 0.90, no value or polarity change.
PAIRS = [
    ("How do I reset my password for the billing portal?", "How can I reset my password for the billing portal?"),
    ("How do I export my invoices as PDF files?", "How can I export my invoices as PDF files?"),
    ("What is the best way to learn the Python language?", "What's the best way to learn the Python language?"),
    ("How do I change the email address on my account?", "How can I change the email address on my account?"),
    ("How do I cancel my subscription to the service?", "How can I cancel my subscription to the service?"),
    ("Why is my laptop battery draining so quickly?", "Why does my laptop battery drain so quickly?"),
    ("How do I make a good cup of espresso at home?", "How can I make a good cup of espresso at home?"),
    ("What are the symptoms of dehydration in adults?", "What are the signs of dehydration in adults?"),
    ("How do I remove a stripped screw from wood?", "How can I remove a stripped screw from wood?"),
    ("How do I keep my houseplants alive in winter?", "How can I keep my houseplants alive in winter?"),
    ("How do I clean a cast iron pan after cooking?", "How should I clean a cast iron pan after cooking?"),
    ("What should I pack for a weekend hiking trip?", "What do I need to pack for a weekend hiking trip?"),
]
_WORD_TEXT = """river copper lantern orbit meadow cipher harbor velvet granite falcon quartz tundra saffron glacier
ember compass willow anchor prism thunder canyon maple beacon cobalt dune fjord garnet hazel iris jasper kelp lagoon
marble nectar opal pepper quill reef sierra timber umber violet walnut yarrow zephyr"""
WORDS = _WORD_TEXT.split()


@dataclass
class Cell:
    """One scenario at one concurrency: latencies of successful requests, and everything that went wrong."""

    scenario: str
    clients: int
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    errors: int = 0  # transport errors and timeouts
    server_errors: int = 0  # HTTP 5xx
    other_status: int = 0

    @property
    def rps(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, object]:
        lat = self.latencies_ms or [0.0]
        return {"scenario": self.scenario, "clients": self.clients, "requests": len(self.latencies_ms),
                "rps": round(self.rps, 1), "p50_ms": round(statistics.median(lat), 1),
                "p99_ms": round(p(lat, 0.99), 1), "errors": self.errors, "5xx": self.server_errors,
                "other_status": self.other_status, "verdicts": dict(self.verdicts)}


def miss_prompt(rng: random.Random) -> str:
    """A fresh question nobody asked before (random words: nothing similar is stored)."""
    return "Tell me about " + " ".join(rng.choice(WORDS) for _ in range(8)) + f" {rng.getrandbits(40):x}?"


async def run_cell(client: httpx.AsyncClient, scenario: str, clients: int, seconds: float,
                   next_prompt: Callable[[], tuple[str, str]]) -> Cell:
    """`clients` closed-loop workers for `seconds`; `next_prompt()` gives (api key, prompt)."""
    cell = Cell(scenario, clients)
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < deadline:
            key, prompt = next_prompt()
            started = time.perf_counter()
            try:
                r = await client.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                      json={"model": "bench", "messages": [{"role": "user", "content": prompt}]})
            except httpx.HTTPError:
                cell.errors += 1
                continue
            if r.status_code >= 500:
                cell.server_errors += 1
            elif r.status_code != 200:
                cell.other_status += 1
            else:
                cell.latencies_ms.append((time.perf_counter() - started) * 1000)
                cell.verdicts[r.headers.get("x-deja-cache", "?")] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    cell.seconds = time.perf_counter() - started
    return cell


async def client_limit(client: httpx.AsyncClient, clients: int, seconds: float) -> float:
    """Requests/s this client process reaches against the cheapest route (`/healthz`): the ceiling of every
    req/s figure here."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await client.get("/healthz")
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return done / (time.perf_counter() - started)


KEY = "sk-bench-load"


def ab_exact(url: str, key: str, prompt: str, clients: int, requests: int) -> dict[str, object] | None:
    """Exact hits driven by ApacheBench (a C client, keep-alive), when installed: the gateway's own limit rather
    than this Python client's."""
    ab = shutil.which("ab")
    if ab is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json") as payload:
        json.dump({"model": "bench", "messages": [{"role": "user", "content": prompt}]}, payload)
        payload.flush()
        out = subprocess.run([ab, "-k", "-q", "-n", str(requests), "-c", str(clients), "-p", payload.name,
                              "-T", "application/json", "-H", f"Authorization: Bearer {key}",
                              f"{url}/v1/chat/completions"], capture_output=True, text=True, timeout=600).stdout

    def number(pattern: str) -> float:
        found = re.search(pattern, out)
        return float(found.group(1)) if found else 0.0

    return {"scenario": "exact hit (ab)", "clients": clients, "requests": requests,
            "rps": number(r"Requests per second:\s+([\d.]+)"), "p50_ms": number(r"\n\s+50%\s+(\d+)"),
            "p99_ms": number(r"\n\s+99%\s+(\d+)"), "errors": int(number(r"Failed requests:\s+(\d+)")),
            "5xx": int(number(r"Non-2xx responses:\s+(\d+)")), "other_status": 0, "verdicts": {}}


async def seed(client: httpx.AsyncClient, key: str) -> None:
    for stored, _ in PAIRS:
        r = await client.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                              json={"model": "bench", "messages": [{"role": "user", "content": stored}]})
        r.raise_for_status()


async def run(url: str, seconds: float, many: int, mix: bool, only: str | None = None) -> dict[str, object]:
    rng = random.Random(7)
    limits = httpx.Limits(max_connections=many + 4, max_keepalive_connections=many + 4)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        key = KEY
        await seed(client, key)
        stored, paraphrases = itertools.cycle([s for s, _ in PAIRS]), itertools.cycle([q for _, q in PAIRS])
        scenarios: dict[str, Callable[[], tuple[str, str]]] = {
            "miss": lambda: (key, miss_prompt(rng)),
            "semantic hit": lambda: (key, next(paraphrases)),
            "exact hit": lambda: (key, next(stored)),
        }
        if only is not None:
            scenarios = {only: scenarios[only]}
        if mix:  # a third each, shuffled per request
            kinds = list(scenarios.values())
            scenarios = {"mixed": lambda: rng.choice(kinds)()}
        await run_cell(client, "warm-up", 4, min(2.0, seconds), next(iter(scenarios.values())))
        cells = [await run_cell(client, name, clients, seconds, make)
                 for name, make in scenarios.items() for clients in ((many,) if mix else (1, many))]
        limit = await client_limit(client, many, min(seconds, 3.0))
    return {"cells": [c.summary() for c in cells], "client_limit_rps": round(limit, 1)}


def report(result: dict[str, object], many: int) -> str:
    cells = result["cells"]
    assert isinstance(cells, list)
    lines = [f"{'scenario':<14}{'clients':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}{'5xx':>6}  verdicts"]
    for c in cells:
        lines.append(f"{c['scenario']:<14}{c['clients']:>8}{c['rps']:>9}{c['p50_ms']:>9}{c['p99_ms']:>9}"
                     f"{c['errors']:>8}{c['5xx']:>6}  {c['verdicts']}")
    by = {(c["scenario"], c["clients"]): c for c in cells}
    for scenario in ("miss", "semantic hit", "exact hit", "exact hit (ab)", "exact hit (raw)"):
        one, more = by.get((scenario, 1)), by.get((scenario, many))
        if one and more and one["rps"] and one["p50_ms"]:
            lines.append(f"{scenario:<14} {many} vs 1 clients: req/s x{more['rps'] / one['rps']:.2f}, "
                         f"p50 x{more['p50_ms'] / one['p50_ms']:.2f}")
    lines.append(f"embedder {result['embedder']}, decision {result['decision']}, "
                 f"DEJA_EMBED_THREADS={result['threads']}, "
                 f"upstream delay {result['upstream_delay_s']} s")
    lines.append(f"client's own limit (GET /healthz, {many} clients): {result['client_limit_rps']} req/s")
    return "\n".join(lines)


def start_profile(gateway: GatewayProcess, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling every thread of the gateway process (needs ptrace rights over it) until stopped."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen([py_spy, "record", "--pid", str(gateway.pid), "--format", "raw", "--output", str(out),
                             "--rate", "200", "--threads", "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profile(profiler: subprocess.Popen[bytes], out: Path, top: int = 25) -> None:
    profiler.send_signal(2)  # SIGINT: py-spy writes its file and exits
    profiler.wait(60)
    print(hottest(out.read_text(), top), file=sys.stderr)


def hottest(folded: str, top: int) -> str:
    """Share of samples in which each function is on the stack (inclusive), from folded stacks."""
    total, inclusive = 0, Counter[str]()
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        for frame in set(stack.split(";")):
            inclusive[frame] += int(count)
    rows = [f"{n / total:6.1%}  {frame}" for frame, n in inclusive.most_common(top)] if total else []
    return "\n".join([f"py-spy: {total} samples, inclusive share per frame", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=6.0, help="duration of each cell")
    parser.add_argument("--clients", type=int, default=32, help="the concurrent side of the comparison")
    parser.add_argument("--mix", action="store_true", help="one cell mixing misses, semantic and exact hits")
    parser.add_argument("--delay", type=float, default=0.05, help="stub upstream delay, seconds")
    parser.add_argument("--embedder", choices=["torch", "onnx"], default="onnx")
    parser.add_argument("--decision", choices=["threshold", "guarded"], default="guarded",
                        help="DEJA_DECISION (guarded: the default decision, what users get)")
    parser.add_argument("--threads", type=int, default=0, help="DEJA_EMBED_THREADS (0 = the cores)")
    parser.add_argument("--only", choices=["miss", "semantic hit", "exact hit"], help="one scenario only")
    parser.add_argument("--profile", type=Path, help="py-spy samples of the gateway over the run, folded stacks "
                        "(flamegraph input) to this file; a summary of the hottest frames to stderr")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, StubUpstream(delay=args.delay) as stub:
        env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(Path(tmp) / "gw"), "DEJA_LOG_LEVEL": "warning",
               "DEJA_EMBEDDER": args.embedder, "DEJA_AUDIT_RATE": "0",
               "DEJA_EMBED_THREADS": str(args.threads), "DEJA_DECISION": args.decision}
        gateway = GatewayProcess(env, Path(tmp) / "gw.log").start()
        profiler = start_profile(gateway, args.profile) if args.profile else None
        try:
            result = asyncio.run(run(gateway.url, args.seconds, args.clients, args.mix, args.only))
            # exact hits again, driven by a C client (the stored prompts are seeded by now)
            if not args.mix and args.only in (None, "exact hit"):
                for clients in (1, args.clients):
                    measured = ab_exact(gateway.url, KEY, PAIRS[0][0], clients, 3000 if clients == 1 else 20000)
                    if measured is None:  # no ApacheBench: the raw keep-alive client (bench/raw_client.py)
                        measured = asyncio.run(raw_exact(gateway.url, KEY, PAIRS[0][0], clients, args.seconds))
                    result["cells"].append(measured)  # type: ignore[attr-defined]
            if profiler is not None:
                stop_profile(profiler, args.profile)
            cells = result["cells"]
            assert isinstance(cells, list)
            if any(c["errors"] or c["5xx"] for c in cells):
                print((Path(tmp) / "gw.log").read_text()[-4000:], file=sys.stderr)
        finally:
            gateway.stop()
    result |= {"embedder": args.embedder, "decision": args.decision, "threads": args.threads,
               "upstream_delay_s": args.delay}
    print(json.dumps(result, indent=1) if args.json else report(result, args.clients))
    cells = result["cells"]
    assert isinstance(cells, list)
    if any(c["errors"] or c["5xx"] for c in cells):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
