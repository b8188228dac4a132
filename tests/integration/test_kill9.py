"""`kill -9` with writes in flight: after a restart, every answer the gateway reported stored is still served."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import httpx
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

CLIENTS = 6


@pytest.fixture
def slow_stub(stub: StubUpstream) -> Iterator[StubUpstream]:
    stub.state.delay = 0.05  # keeps requests in flight when the kill lands
    yield stub
    stub.state.delay = 0.0


def writer(url: str, key: str, client: int, stop: threading.Event, stored: dict[str, tuple[str, str]]) -> None:
    """Ask new questions until stopped or cut off; keep those the gateway said it stored (an entry id)."""
    with httpx.Client(base_url=url, timeout=10, headers={"Authorization": f"Bearer {key}"}) as http:
        n = 0
        while not stop.is_set():
            prompt = f"What is fact number {n} about client {client}? {uuid.uuid4().hex[:6]}"
            try:
                response = http.post("/v1/chat/completions", json={
                    "model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]})
            except httpx.HTTPError:
                return  # the gateway died under us
            if response.headers.get("x-deja-cache") == "miss" and response.headers.get("x-deja-entry"):
                stored[prompt] = (response.headers["x-deja-entry"],
                                  response.json()["choices"][0]["message"]["content"])
            n += 1


def test_every_answer_reported_stored_survives_kill_9(deployment: Deployment, slow_stub: StubUpstream) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    stored: dict[str, tuple[str, str]] = {}
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(deployment.url, key, i, stop, stored)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    while len(stored) < 40 and all(t.is_alive() for t in threads):  # enough stored, writers still going
        stop.wait(0.05)
    deployment.gateway.kill()
    stop.set()
    for thread in threads:
        thread.join(30)
    assert len(stored) >= 40
    deployment.gateway.start()
    lost = []
    with httpx.Client(base_url=deployment.url, timeout=30, headers={"Authorization": f"Bearer {key}"}) as http:
        for prompt, (entry, content) in stored.items():
            response = http.post("/v1/chat/completions", json={
                "model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]})
            served = response.json()["choices"][0]["message"]["content"]
            if response.headers["x-deja-cache"] != "hit-exact" or response.headers["x-deja-entry"] != entry \
                    or served != content:
                lost.append(prompt)
    print(f"\nkill -9: {len(stored)} answers reported stored before the kill, {len(lost)} lost")
    assert lost == []
