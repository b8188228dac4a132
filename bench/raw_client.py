"""A minimal keep-alive HTTP/1.1 client for exact-hit load where ApacheBench is not installed: one request
written as prebuilt bytes, the answer read by `Content-Length`, the status and `X-Deja-Cache` picked from
the head. Far cheaper per request than httpx, so the gateway rather than the client sets the pace."""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
from collections import Counter
from urllib.parse import urlsplit

from bench.common import p

_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)", re.IGNORECASE)
_VERDICT = re.compile(rb"\r\nx-deja-cache:\s*([\w-]+)", re.IGNORECASE)


def chat_request(host: str, key: str, prompt: str) -> bytes:
    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": prompt}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


async def raw_exact(url: str, key: str, prompt: str, clients: int, seconds: float) -> dict[str, object]:
    """`clients` closed-loop connections repeating one stored prompt for `seconds`; a cell like `bench.load`'s."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = chat_request(f"{host}:{port}", key, prompt)
    latencies: list[float] = []
    verdicts: Counter[str] = Counter()
    failures = Counter[str]()
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = _LENGTH.search(head)
                await reader.readexactly(int(length.group(1)) if length else 0)
                status = int(head[9:12])
                if status >= 500:
                    failures["5xx"] += 1
                elif status != 200:
                    failures["other"] += 1
                else:
                    latencies.append((time.perf_counter() - started) * 1000)
                    verdict = _VERDICT.search(head)
                    verdicts[verdict.group(1).decode() if verdict else "?"] += 1
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            failures["errors"] += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    lat = latencies or [0.0]
    return {"scenario": "exact hit (raw)", "clients": clients, "requests": len(latencies),
            "rps": round(len(latencies) / elapsed, 1), "p50_ms": round(statistics.median(lat), 1),
            "p99_ms": round(p(lat, 0.99), 1), "errors": failures["errors"], "5xx": failures["5xx"],
            "other_status": failures["other"], "verdicts": dict(verdicts)}
