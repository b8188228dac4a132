"""What a hit costs through HTTP at Deja's defaults, stage by stage, side by side in one run.

Real paraphrases (Redis LangCache and QQP pairs labelled the same question whose texts are not plain rewordings, so
every one reaches the cosine step) are stored once, then each paraphrase is asked once (a first read: nothing of
it is memoised) beside an exact hit of a stored prompt (with httpx and with a raw socket client whose own cost is a
few microseconds) and the embedder's own time for the same paraphrase in this process, in interleaved rounds so a
busy machine slows every figure alike. Each answer's `Server-Timing` header gives the gateway's stages (parse, key,
exact, pool, embed, search, fetch, decide, log, respond); `http` is what the client saw beyond the gateway's own
`total` (the server's HTTP parsing, the framework, the socket and the client). `--against DIR` starts a second
gateway from another source tree (`git archive <commit> | tar -x -C DIR`) and prints this build's figures as
ratios to that one's.

    .venv/bin/python -m bench.hit_cost [--pairs 300] [--against /tmp/base] [--json]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from bench.raw_client import chat_request
from eval.sources import langcache, qqp
from index.embedding.batching import available_cores, embedding_threads
from index.embedding.embedder import OnnxMiniLMEmbedder
from index.guards.form import same_content
from support.services import REPO, GatewayProcess, free_port
from support.stub_upstream import StubUpstream
from support.waiting import wait_for

KEY = "sk-bench-hit-cost"
SHARED = REPO.parent / "shared" / "datasets"
# A paraphrase of more words than this is decided on its content alone (`index.match.window.RESOLUTION_WORDS`).
MAX_WORDS = 30
EXACT_STAGES = ("auth", "parse", "key", "exact", "log", "respond")
SEMANTIC_STAGES = ("auth", "parse", "key", "exact", "pool", "embed", "search", "fetch", "decide", "log", "respond")
# What comes after the embedding and the search: the part of a semantic hit the goal holds to microseconds.
AFTER_SEARCH = ("fetch", "decide", "log", "respond")


# The floor under any gateway on this machine: a bare Starlette app that reads the body and answers a stored JSON
# body with the same headers, served by the same uvicorn, asked by the same clients in the same rounds.
FLOOR_APP = """
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

BODY = b'{"id":"chatcmpl-floor","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",' \\
    b'"content":"answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1}}'


async def chat(request):
    await request.body()
    return Response(BODY, media_type="application/json", headers={"X-Deja-Cache": "hit-exact"})


app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
"""


class Floor:
    """`FLOOR_APP` under uvicorn in a subprocess, with the clients a `Side` has (the floor's figures say what the
    HTTP server, the framework and the clients cost by themselves)."""

    def __init__(self, folder: Path) -> None:
        (folder / "floor_app.py").write_text(FLOOR_APP)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "floor_app:app", "--port", str(self.port), "--log-level", "warning",
             "--no-access-log"], cwd=folder)
        self.url = f"http://127.0.0.1:{self.port}"
        if not wait_for(self._ready, 30, interval=0.1):
            raise RuntimeError("the floor app did not start")

    def _ready(self) -> bool:
        try:
            return httpx.post(self.url + "/v1/chat/completions", json={}, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def paraphrases(shared: Path, limit: int) -> list[tuple[str, str]]:
    """(stored, paraphrase) pairs labelled the same question that the same-content rule does not settle."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for source in langcache(shared, 0) + qqp(shared, 0):
        for pair in source.pairs:
            a, b = pair.a.prompt, pair.b.prompt
            if (pair.same_answer and not same_content(a, b) and max(len(a.split()), len(b.split())) <= MAX_WORDS
                    and a not in seen and b not in seen):
                seen.update((a, b))
                out.append((a, b))
    return out[:limit]


def body(text: str) -> dict[str, object]:
    return {"model": "bench", "messages": [{"role": "user", "content": text}]}


def stages(header: str) -> dict[str, float]:
    """`Server-Timing: parse;dur=0.041, key;dur=0.012` as {"parse": 0.041, "key": 0.012}."""
    out: dict[str, float] = {}
    for item in header.split(","):
        name, _, rest = item.strip().partition(";dur=")
        if name and rest:
            out[name] = float(rest)
    return out


class Side:
    """One gateway and two keep-alive clients to it: httpx, and a raw socket (`ask` and `ask_raw` return the
    verdict, the wall time in ms and the gateway's stages)."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
        parts = urlsplit(url)
        self.host = parts.netloc
        self.raw = socket.create_connection((parts.hostname, parts.port), timeout=60)
        self.raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def ask(self, text: str) -> tuple[str, float, dict[str, float]]:
        started = time.perf_counter()
        response = self.client.post("/v1/chat/completions", json=body(text))
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        return response.headers["x-deja-cache"], elapsed, stages(response.headers.get("server-timing", ""))

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
        return _header(head, b"x-deja-cache").decode(), (time.perf_counter() - started) * 1000

    def close(self) -> None:
        self.client.close()
        self.raw.close()


def _header(head: bytes, name: bytes) -> bytes:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    raise ValueError(f"no {name!r} header in the answer")


Samples = dict[str, dict[str, list[float]]]


def measure(sides: list[Side], pairs: list[tuple[str, str]], embed: Callable[[str], object]) -> Samples:
    """Per side: `exact`, `exact_raw`, `semantic` (client ms) and `<kind>:<stage>` (the gateway's ms); `embed`
    under "embedder". A paraphrase counts only where every side served it as a semantic hit."""
    samples: Samples = defaultdict(lambda: defaultdict(list))
    floor = [side for side in sides if side.name == "floor"]
    sides = [side for side in sides if side.name != "floor"]
    for side in sides:
        for stored, _ in pairs:
            assert side.ask(stored)[0] == "miss"
    served = 0
    for i, (stored, paraphrase) in enumerate(pairs):
        started = time.perf_counter()
        embed(paraphrase)
        embed_ms = (time.perf_counter() - started) * 1000
        semantic: list[tuple[Side, float, dict[str, float]]] = []
        for side in floor:
            samples[side.name]["exact"].append(side.ask(stored)[1])
            samples[side.name]["exact_raw"].append(side.ask_raw(chat_request(side.host, KEY, stored))[1])
        for side in sides[i % 2:] + sides[:i % 2]:  # each side goes first every other pair
            verdict, ms, timed = side.ask(stored)
            assert verdict == "hit-exact", verdict
            _add(samples[side.name], "exact", ms, timed)
            verdict, ms = side.ask_raw(chat_request(side.host, KEY, stored))
            assert verdict == "hit-exact", verdict
            samples[side.name]["exact_raw"].append(ms)
            verdict, ms, timed = side.ask(paraphrase)
            if verdict == "hit-semantic":
                semantic.append((side, ms, timed))
        if len(semantic) == len(sides):
            served += 1
            samples["embedder"]["embed"].append(embed_ms)
            for side, ms, timed in semantic:
                _add(samples[side.name], "semantic", ms, timed)
    if not served:
        raise SystemExit("no paraphrase was served as a semantic hit at the defaults")
    return samples


def _add(into: dict[str, list[float]], kind: str, client_ms: float, timed: dict[str, float]) -> None:
    into[kind].append(client_ms)
    for stage, ms in timed.items():
        into[f"{kind}:{stage}"].append(ms)
    if "total" in timed:
        into[f"{kind}:http"].append(client_ms - timed["total"])
    into[f"{kind}:after_search"].append(sum(timed.get(stage, 0.0) for stage in AFTER_SEARCH))


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def summary(samples: Samples) -> dict[str, dict[str, float]]:
    embed = _p50(samples["embedder"]["embed"])
    out: dict[str, dict[str, float]] = {
        "embedder": {"embed_p50_ms": round(embed, 3), "paraphrases_served": len(samples["embedder"]["embed"])}}
    for name, by in samples.items():
        if name == "floor":
            out[name] = {"exact_p50_ms": round(_p50(by["exact"]), 3),
                         "exact_raw_p50_ms": round(_p50(by["exact_raw"]), 3)}
            continue
        if name == "embedder":
            continue
        exact, semantic = _p50(by["exact"]), _p50(by["semantic"])
        row = {"exact_p50_ms": round(exact, 3), "exact_raw_p50_ms": round(_p50(by["exact_raw"]), 3),
               "semantic_p50_ms": round(semantic, 3),
               "semantic_minus_exact_over_embed": round((semantic - exact) / embed, 3),
               "semantic_after_search_p50_us": round(_p50(by["semantic:after_search"]) * 1000, 1)}
        for kind, names, whole in (("exact", EXACT_STAGES, exact), ("semantic", SEMANTIC_STAGES, semantic)):
            for stage in (*names, "http"):
                p50 = _p50(by[f"{kind}:{stage}"])
                row[f"{kind}_{stage}_p50_ms"] = round(p50, 4)
                row[f"{kind}_{stage}_share"] = round(p50 / whole, 4) if whole else 0.0
        out[name] = row
    return out


def report(result: dict[str, dict[str, float]]) -> str:
    embed = result["embedder"]["embed_p50_ms"]
    lines = [f"embedder alone (ONNX int8, the same paraphrase, this process): p50 {embed:.2f} ms; "
             f"paraphrases every side served: {result['embedder']['paraphrases_served']:.0f}"]
    for name, row in result.items():
        if name == "floor":
            lines.append(f"[floor: a bare Starlette app under uvicorn, the same clients] answer p50 "
                         f"{row['exact_p50_ms']:.3f} ms (raw client {row['exact_raw_p50_ms']:.3f} ms)")
            continue
        if name == "embedder":
            continue
        lines += [f"[{name}] exact p50 {row['exact_p50_ms']:.3f} ms (raw client {row['exact_raw_p50_ms']:.3f} ms); "
                  f"semantic p50 {row['semantic_p50_ms']:.2f} ms; (semantic - exact) ÷ embed "
                  f"{row['semantic_minus_exact_over_embed']:.2f}; after the search (fetch, decide, log, respond) "
                  f"{row['semantic_after_search_p50_us']:.0f} µs",
                  f"  {'stage':<10}{'exact p50 ms':>14}{'share':>8}{'semantic p50 ms':>17}{'share':>8}"]
        for stage in (*SEMANTIC_STAGES, "http"):
            exact = (f"{row[f'exact_{stage}_p50_ms']:>14.3f}{row[f'exact_{stage}_share']:>8.1%}"
                     if f"exact_{stage}_p50_ms" in row else f"{'-':>14}{'':>8}")
            lines.append(f"  {stage:<10}{exact}{row[f'semantic_{stage}_p50_ms']:>17.3f}"
                         f"{row[f'semantic_{stage}_share']:>8.1%}")
    if "against" in result:
        this, base = result["this"], result["against"]
        lines.append("this ÷ against, p50: " + ", ".join(
            f"{kind} x{this[key] / base[key]:.2f}" for kind, key in (
                ("exact", "exact_p50_ms"), ("exact, raw client", "exact_raw_p50_ms"), ("semantic", "semantic_p50_ms"))
            if base.get(key)))
    lines.append("share: the stage's p50 ÷ the request's p50 through httpx; http: the client's time beyond the "
                 "gateway's own total; pool: the hops to the lookup's thread and back")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300, help="paraphrase pairs, each asked once")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the public labelled datasets")
    parser.add_argument("--against", type=Path, help="source tree of another build to compare with")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pairs = paraphrases(args.shared, args.pairs)
    embedder = OnnxMiniLMEmbedder(threads=embedding_threads(available_cores()))  # as the gateway's worker runs it
    with tempfile.TemporaryDirectory() as tmp, StubUpstream() as stub:
        trees = {"this": REPO, **({"against": args.against.resolve()} if args.against else {})}
        gateways = []
        for name, tree in trees.items():
            env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(Path(tmp) / name),
                   "DEJA_LOG_LEVEL": "warning", "DEJA_AUDIT_RATE": "0"}
            gateways.append(GatewayProcess(env, Path(tmp) / f"{name}.log", source=tree).start())
        floor = Floor(Path(tmp))
        sides = [Side(name, gateway.url) for name, gateway in zip(trees, gateways, strict=True)]
        sides.append(Side("floor", floor.url))
        try:
            result = summary(measure(sides, pairs, lambda text: embedder.embed([text])))
        finally:
            for side in sides:
                side.close()
            for gateway in gateways:
                gateway.stop()
            floor.stop()
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    main()
