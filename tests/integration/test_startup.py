"""Start-up from a snapshot: saved at shutdown, loaded and caught up on restart, ignored when damaged; readiness
(`/readyz`) separate from liveness (`/healthz`)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration


def ask(gateway: GatewayProcess, key: str, text: str) -> str:
    r = httpx.post(gateway.url + "/v1/chat/completions", timeout=60, headers={"Authorization": f"Bearer {key}"},
                   json={"model": "m", "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    return r.headers["x-deja-cache"]


def test_restart_loads_the_snapshot_catches_up_and_a_damaged_one_is_rebuilt(
    stub: StubUpstream, tmp_path: Path
) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    gateway = GatewayProcess(base_env(stub, tmp_path) | {"DEJA_LOG_LEVEL": "info"}, tmp_path / "gateway.log")
    gateway.start()
    try:
        assert httpx.get(gateway.url + "/healthz").status_code == 200
        ready = httpx.get(gateway.url + "/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        assert ask(gateway, key, "How do I reset my password for the billing portal?") == "miss"
        gateway.stop()  # graceful: the snapshot is written at shutdown
        manifest = json.loads((tmp_path / "snapshot" / "manifest.json").read_text())
        assert manifest["entries"] == 1

        gateway.start()
        assert "from snapshot" in gateway.log_path.read_text()
        assert ask(gateway, key, "How can I reset my password for the billing portal?") == "hit-semantic"
        assert ask(gateway, key, "What is the weather like in Paris in spring?") == "miss"
        gateway.stop()

        graph = tmp_path / "snapshot" / "index.search.hnsw"
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])  # a crash mid-write, say
        gateway.log_path.write_text("")
        gateway.start()
        log = gateway.log_path.read_text()
        assert "snapshot ignored" in log and "rebuilt from SQL" in log
        assert ask(gateway, key, "Tell me what the weather is like in Paris in spring") == "hit-semantic"
    finally:
        gateway.stop()
