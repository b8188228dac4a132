"""What a hit costs through HTTP at Deja's defaults (ONNX int8 embedder, the guarded rule), side by side in one
run: the embedder's own time for the same prompt, exact hits and semantic hits, in interleaved rounds so a
busy machine slows every figure alike. Figures are ratios to the embedding; `--against DIR` starts a second
gateway from another source tree (another build: `git archive <commit> | tar -x -C DIR`) and prints this build's
figures as ratios to that one's, request by request.

    .venv/bin/python -m bench.hit_cost [--rounds 30] [--against /tmp/base] [--json]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from bench.common import p
from bench.load import PAIRS
from bench.raw_client import chat_request
from index.embedding.batching import available_cores, embedding_threads
from index.embedding.embedder import OnnxMiniLMEmbedder
from support.services import REPO, GatewayProcess
from support.stub_upstream import StubUpstream

KEY = "sk-bench-hit-cost"


def body(text: str) -> dict[str, object]:
    return {"model": "bench", "messages": [{"role": "user", "content": text}]}


class Side:
    """One gateway and two keep-alive clients to it: httpx, and a raw socket whose own cost is a few microseconds
    (`ask` and `ask_raw` return the verdict and the wall time in ms)."""

    def __init__(self, name: str, gateway: GatewayProcess) -> None:
        self.name = name
        self.gateway = gateway
        self.client = httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
        parts = urlsplit(gateway.url)
        self.host = parts.netloc
        self.raw = socket.create_connection((parts.hostname, parts.port), timeout=60)
        self.raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def ask_raw(self, request: bytes) -> tuple[str, float]:
        started = time.perf_counter()
        self.raw.sendall(request)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.raw.recv(65536)
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = int(_header(head, b"content-length"))
        while len(rest) < length:
            rest += self.raw.recv(65536)
        self.buffer = rest[length:]
        elapsed = (time.perf_counter() - started) * 1000
        return _header(head, b"x-deja-cache").decode(), elapsed

    def close(self) -> None:
        self.client.close()
        self.raw.close()

    def ask(self, text: str) -> tuple[str, float]:
        started = time.perf_counter()
        response = self.client.post("/v1/chat/completions", json=body(text))
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        return response.headers["x-deja-cache"], elapsed


def _header(head: bytes, name: bytes) -> bytes:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    raise ValueError(f"no {name!r} header in the answer")


def seed(sides: list[Side]) -> None:
    """Store every prompt of `PAIRS` on every side (each a miss answered by the stub)."""
    for side in sides:
        for stored, _ in PAIRS:
            assert side.ask(stored)[0] == "miss"


def measure(sides: list[Side], rounds: int, embed: Callable[[str], object]) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {
        s.name: {"exact": [], "exact_raw": [], "semantic": [], "first": []} for s in sides}
    samples["embedder"] = {"embed": []}
    seed(sides)
    served: list[tuple[str, str]] = []  # the pairs every side serves as a semantic hit at its defaults
    for stored, rewording in PAIRS:  # the first read of each pair: no memo can answer yet
        verdicts = [side.ask(rewording) for side in sides]
        if all(v == "hit-semantic" for v, _ in verdicts):
            served.append((stored, rewording))
            for side, (_, ms) in zip(sides, verdicts, strict=True):
                samples[side.name]["first"].append(ms)
    if not served:
        raise SystemExit("no rewording is served as a semantic hit at the defaults")
    for round_ in range(rounds):
        for stored, rewording in served:
            started = time.perf_counter()
            embed(rewording)
            samples["embedder"]["embed"].append((time.perf_counter() - started) * 1000)
            for side in sides[round_ % 2:] + sides[:round_ % 2]:  # each side goes first every other round
                verdict, ms = side.ask(stored)
                assert verdict == "hit-exact", verdict
                samples[side.name]["exact"].append(ms)
                verdict, ms = side.ask_raw(chat_request(side.host, KEY, stored))
                assert verdict == "hit-exact", verdict
                samples[side.name]["exact_raw"].append(ms)
                verdict, ms = side.ask(rewording)
                assert verdict == "hit-semantic", verdict
                samples[side.name]["semantic"].append(ms)
    return samples


def summary(samples: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    embed = statistics.median(samples["embedder"]["embed"])
    out: dict[str, dict[str, float]] = {"embedder": {"embed_p50_ms": round(embed, 3)}}
    for name, by_kind in samples.items():
        if name == "embedder":
            continue
        exact, semantic = statistics.median(by_kind["exact"]), statistics.median(by_kind["semantic"])
        first = statistics.median(by_kind["first"])
        out[name] = {
            "exact_p50_ms": round(exact, 3), "exact_p99_ms": round(p(by_kind["exact"], 0.99), 3),
            "exact_raw_p50_ms": round(statistics.median(by_kind["exact_raw"]), 3),
            "semantic_p50_ms": round(semantic, 3), "first_read_p50_ms": round(first, 3),
            "exact_over_embed": round(exact / embed, 3),
            "semantic_minus_exact_over_embed": round((semantic - exact) / embed, 3),
            "first_read_minus_exact_over_embed": round((first - exact) / embed, 3),
        }
    return out


def report(result: dict[str, dict[str, float]]) -> str:
    embed = result["embedder"]["embed_p50_ms"]
    lines = [f"embedder alone (ONNX int8, one prompt, this process): p50 {embed:.2f} ms",
             f"{'gateway':<10}{'exact p50':>11}{'÷ embed':>9}{'raw client':>12}{'semantic p50':>14}"
             f"{'(sem - exact) ÷ embed':>23}{'first read p50':>16}{'(first - exact) ÷ embed':>25}"]
    for name, row in result.items():
        if name == "embedder":
            continue
        lines.append(f"{name:<10}{row['exact_p50_ms']:>11.2f}{row['exact_over_embed']:>9.2f}"
                     f"{row['exact_raw_p50_ms']:>12.2f}{row['semantic_p50_ms']:>14.2f}{row['semantic_minus_exact_over_embed']:>23.2f}"
                     f"{row['first_read_p50_ms']:>16.2f}{row['first_read_minus_exact_over_embed']:>25.2f}")
    if "against" in result:
        this, base = result["this"], result["against"]
        lines.append("this ÷ against, p50: " + ", ".join(
            f"{kind} x{this[key] / base[key]:.2f}"
            for kind, key in (("exact", "exact_p50_ms"), ("exact, raw client", "exact_raw_p50_ms"),
                              ("semantic", "semantic_p50_ms"),
                              ("first read", "first_read_p50_ms"))))
    lines.append("exact and semantic: httpx client; raw client: one prebuilt request on a socket (the gateway's own "
                 "time); first read: each rewording's first semantic hit (no memo of its pair yet)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30, help="rounds over the served pairs")
    parser.add_argument("--against", type=Path, help="source tree of another build to compare with")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embedder = OnnxMiniLMEmbedder(threads=embedding_threads(available_cores()))  # as the gateway's worker runs it
    with tempfile.TemporaryDirectory() as tmp, StubUpstream() as stub:
        trees = {"this": REPO, **({"against": args.against.resolve()} if args.against else {})}
        gateways = []
        for name, tree in trees.items():
            env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(Path(tmp) / name),
                   "DEJA_LOG_LEVEL": "warning", "DEJA_AUDIT_RATE": "0"}
            gateways.append(GatewayProcess(env, Path(tmp) / f"{name}.log", source=tree).start())
        sides = [Side(name, gateway) for name, gateway in zip(trees, gateways, strict=True)]
        try:
            result = summary(measure(sides, args.rounds, lambda text: embedder.embed([text])))
        finally:
            for side in sides:
                side.close()
                side.gateway.stop()
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    main()
