"""Back-pressure end to end: a full embedding queue answers 503 with Retry-After at once (never a hang), and the
requests already queued are answered normally."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from index.embedding.embedder import Embedder, Vector
from support.inprocess import inprocess_gateway

pytestmark = pytest.mark.asyncio


class Gate:
    """Wraps the gateway's embedder: blocks every batch until opened, so a queue builds up."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.entered = threading.Event()
        self.open = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vector:
        self.entered.set()
        assert self.open.wait(30), "gate never opened"
        return self.inner.embed(texts)


async def until(predicate: object) -> None:
    for _ in range(3000):
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never met")


async def test_full_embedding_queue_is_a_503_with_retry_after(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, embed_queue_texts=1) as gw:
        assert (await gw.chat("what is the capital of germany")).status_code == 200  # the scope is not empty
        batcher = gw.runtime.embedder
        gate = Gate(batcher.inner)
        batcher.inner = gate
        try:
            first = asyncio.create_task(gw.chat("what is the capital of france"))
            await until(gate.entered.is_set)
            second = asyncio.create_task(gw.chat("what is the capital of spain"))
            await until(lambda: batcher.queued() == 1)
            refused = await gw.chat("what is the capital of italy")
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["type"] == "server_overloaded"
        finally:
            gate.open.set()
        assert (await first).status_code == 200 and (await second).status_code == 200
