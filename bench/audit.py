"""Do audits slow down semantic hits? Two gateways side by side in one run, DEJA_AUDIT_RATE=1.0 and 0.0, in front
of one stub upstream that takes `--delay` seconds per answer: an audit that held up the response would add that
delay to every hit. Requests alternate between the two gateways so load on the machine hits both alike.

    .venv/bin/python -m bench.audit [--repeat 300] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import p
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream

PROMPT = "How do I reset my password for the billing portal?"
PARAPHRASE = "How can I reset my password for the billing portal?"
RATES = ("1.0", "0.0")


def body(text: str) -> dict[str, object]:
    return {"model": "bench", "messages": [{"role": "user", "content": text}]}


def start(stub: StubUpstream, tmp: Path, rate: str, args: argparse.Namespace) -> GatewayProcess:
    data_dir = tmp / f"audit-{rate}"
    env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(data_dir), "DEJA_LOG_LEVEL": "warning",
           "DEJA_AUDIT_RATE": rate, "DEJA_AUDIT_CONCURRENCY": str(args.audit_concurrency),
           "DEJA_EMBED_THREADS": str(args.embed_threads)}
    data_dir.mkdir()
    return GatewayProcess(env, data_dir / "gateway.log").start()


def audits(client: httpx.Client) -> dict[str, float]:
    """`deja_audits_total` by outcome, from the gateway's /metrics."""
    found = re.findall(r'^deja_audits_total\{outcome="(\w+)"\} (\S+)$', client.get("/metrics").text, re.MULTILINE)
    return {outcome: float(value) for outcome, value in found}


def measure(clients: dict[str, httpx.Client], repeat: int) -> dict[str, list[float]]:
    """Milliseconds per semantic hit on each gateway, alternating which one goes first."""
    samples: dict[str, list[float]] = {rate: [] for rate in clients}
    for i in range(repeat):
        for rate in RATES if i % 2 == 0 else RATES[::-1]:
            t0 = time.perf_counter()
            response = clients[rate].post("/v1/chat/completions", json=body(PARAPHRASE))
            samples[rate].append((time.perf_counter() - t0) * 1000)
            assert response.headers["x-deja-cache"] == "hit-semantic", response.headers
    return samples


def drain(client: httpx.Client, expected: int, timeout: float = 120.0) -> dict[str, float]:
    """Wait until every audit has finished (done, skipped or failed) and return the counts."""
    deadline = time.monotonic() + timeout
    while sum((counts := audits(client)).values()) < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return counts


def report(samples: dict[str, list[float]], counts: dict[str, float], delay: float) -> str:
    base = samples["0.0"]
    lines = [f"semantic hits, upstream delay {delay * 1000:.0f} ms, {len(base)} requests per gateway",
             f"{'audit rate':<12}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'p50 ratio':>12}{'p99 ratio':>12}"]
    for rate in RATES:
        xs = samples[rate]
        lines.append(f"{rate:<12}{statistics.median(xs):>10.2f}{p(xs, 0.99):>10.2f}{statistics.fmean(xs):>10.2f}"
                     f"{statistics.median(xs) / statistics.median(base):>12.2f}{p(xs, 0.99) / p(base, 0.99):>12.2f}")
    outcome = ", ".join(f"{name} {int(n)}" for name, n in sorted(counts.items())) or "none"
    lines.append(f"audits at rate 1.0: {outcome}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the stub upstream takes per answer")
    parser.add_argument("--audit-concurrency", type=int, default=64,
                        help="audits in flight at most; high enough here that none is skipped")
    # Two gateways with torch's default thread count oversubscribe a small machine: each one's spinning threads
    # stall the other's embeddings for up to a second, which would swamp what is measured here.
    parser.add_argument("--embed-threads", type=int, default=1, help="torch threads per gateway")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, StubUpstream(delay=args.delay) as stub:
        gateways = {rate: start(stub, Path(tmp), rate, args) for rate in RATES}
        try:
            headers = {"Authorization": "Bearer sk-bench"}
            clients = {rate: httpx.Client(base_url=gw.url, headers=headers, timeout=30)
                       for rate, gw in gateways.items()}
            for client in clients.values():
                assert client.post("/v1/chat/completions", json=body(PROMPT)).headers["x-deja-cache"] == "miss"
            measure(clients, 5)  # warm-up, not counted
            samples = measure(clients, args.repeat)
            counts = drain(clients["1.0"], expected=args.repeat + 5)
            for client in clients.values():
                client.close()
        finally:
            for gateway in gateways.values():
                gateway.stop()
    print(report(samples, counts, args.delay))


if __name__ == "__main__":
    main()
