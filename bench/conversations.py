"""Conversation pairs through the real HTTP gateway at the defaults, each in the API shape it is tagged with.

    .venv/bin/python -m bench.conversations datasets/conv3-test.jsonl [more files]

A gateway (`python -m service serve`, SQLite, default settings) in front of a stub upstream; for each pair a
fresh API key (its own namespace) sends `a`, then `b`, and `b`'s `X-Deja-Cache` says whether it was served. Prints
same-answer and must-not pairs served per file and the `X-Deja-Veto` / `X-Deja-Reason` of the same-answer pairs
missed: the numbers `eval conversations` gives, checked through the whole pipeline (keys, index, API dialects).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from support.services import GatewayProcess
from support.stub_upstream import StubUpstream

PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def body(api: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    """`messages` (chat shape, a system message first) as a request body of `api`."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    turns = [m for m in messages if m["role"] != "system"]
    if api == "chat":
        return {"model": "gpt-4o-mini", "messages": messages}
    if api == "messages":
        return {"model": "claude-3-5-haiku-latest", "max_tokens": 200, "system": system,
                "messages": [{"role": m["role"], "content": m["content"]} for m in turns]}
    kind = {"user": "input_text", "assistant": "output_text"}
    return {"model": "gpt-4o-mini", "instructions": system,
            "input": [{"type": "message", "role": m["role"], "content": [{"type": kind[m["role"]],
                                                                           "text": m["content"]}]}
                      for m in turns]}


def served(client: httpx.Client, url: str, row: dict[str, Any]) -> tuple[bool, str]:
    """Send `a` then `b` under a fresh key: whether `b` was served from cache, and why not."""
    key = f"sk-bench-{uuid.uuid4().hex}"
    headers = {"Authorization": f"Bearer {key}", "x-api-key": key, "anthropic-version": "2023-06-01"}
    path = PATHS[row.get("api", "chat")]
    for side in ("a", "b"):
        response = client.post(url + path, json=body(row.get("api", "chat"), row[side]), headers=headers)
        response.raise_for_status()
    cache = response.headers.get("x-deja-cache", "")
    why = response.headers.get("x-deja-veto") or response.headers.get("x-deja-reason") or cache
    return cache.startswith("hit"), why


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    args = parser.parse_args()
    with StubUpstream() as stub, tempfile.TemporaryDirectory() as tmp:
        env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_ANTHROPIC_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": tmp,
               "DEJA_AUDIT_RATE": "0", "DEJA_LOG_LEVEL": "warning"}
        gateway = GatewayProcess(env, Path(tmp) / "gateway.log").start()
        try:
            with httpx.Client(timeout=60) as client:
                for path in args.datasets:
                    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
                    outcomes = [(row["same_answer"], *served(client, gateway.url, row)) for row in rows]
                    same = [hit for label, hit, _ in outcomes if label]
                    other = [hit for label, hit, _ in outcomes if not label]
                    misses = Counter(why for label, hit, why in outcomes if label and not hit)
                    print(f"{path.name}: same-answer served {sum(same)}/{len(same)} "
                          f"({100 * sum(same) / max(1, len(same)):.1f}%), must-not served {sum(other)}/{len(other)} "
                          f"({100 * sum(other) / max(1, len(other)):.1f}%); same-answer misses: "
                          + ", ".join(f"{why} {n}" for why, n in misses.most_common()))
        finally:
            gateway.stop()


if __name__ == "__main__":
    main()
