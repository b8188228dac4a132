"""Operations: admin API, metrics, TTL and LRU eviction, schema check, two replicas sharing Redis + PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from support.services import REPO, GatewayProcess, PgDatabase
from support.stub_upstream import StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": "Bearer admin-secret"}


def chat(url: str, api_key: str, content: str, model: str = "m", **headers: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=30,
                      headers={"Authorization": f"Bearer {api_key}", **headers},
                      json={"model": model, "messages": [{"role": "user", "content": content}]})


@pytest.fixture
def gateway(stub: StubUpstream, tmp_path: Path) -> Any:
    env = base_env(stub, tmp_path) | {"DEJA_MAX_ENTRIES": "3", "DEJA_EVICT_INTERVAL_SECONDS": "0.5"}
    gw = GatewayProcess(env, tmp_path / "gw.log").start()
    yield gw
    gw.stop()


def test_admin_entry_lifecycle_and_invalidation(gateway: GatewayProcess) -> None:
    url = gateway.url
    entry = chat(url, "sk-a", "What is a B-tree?").headers["x-deja-entry"]
    got = httpx.get(f"{url}/deja/entries/{entry}", headers=ADMIN).json()
    assert got["prompt"] == "What is a B-tree?" and got["indexed"] is True
    assert httpx.delete(f"{url}/deja/entries/{entry}", headers=ADMIN).json() == {"deleted": 1}
    assert httpx.get(f"{url}/deja/entries/{entry}", headers=ADMIN).status_code == 404
    assert chat(url, "sk-a", "What is a B-tree?").headers["x-deja-cache"] == "miss"
    chat(url, "sk-b", "What is a trie?", model="other")
    gone = httpx.post(f"{url}/deja/invalidate", headers=ADMIN, json={"api_key": "sk-a"}).json()
    assert gone == {"deleted": 1}
    assert chat(url, "sk-a", "What is a B-tree?").headers["x-deja-cache"] == "miss"
    assert chat(url, "sk-b", "What is a trie?", model="other").headers["x-deja-cache"] == "hit-exact"
    assert httpx.post(f"{url}/deja/invalidate", headers=ADMIN, json={"model": "other"}).json() == {"deleted": 1}
    assert httpx.post(f"{url}/deja/flush", headers=ADMIN).json()["deleted"] >= 1
    assert httpx.get(f"{url}/deja/stats", headers=ADMIN).json()["entries"] == 0
    for path in ("/deja/stats", "/deja/entries/1", "/deja/flush"):
        method = "POST" if path.endswith("flush") else "GET"
        assert httpx.request(method, url + path).status_code == 401


def test_lru_eviction_keeps_sql_index_and_exact_tier_consistent(gateway: GatewayProcess) -> None:
    url = gateway.url
    for text in ["Define latency.", "Define throughput.", "Define jitter."]:
        chat(url, "sk-e", text)
    hit = chat(url, "sk-e", "Define latency.")
    assert hit.headers["x-deja-cache"] == "hit-exact"  # now most recent
    entry = f"{url}/deja/entries/{hit.headers['x-deja-entry']}"
    assert wait_for(lambda: httpx.get(entry, headers=ADMIN).json()["hits"] == 1)  # recorded before the next write
    chat(url, "sk-e", "Define bandwidth.")
    stats = wait_for(lambda: (s := httpx.get(url + "/deja/stats", headers=ADMIN).json())["entries"] == 3 and s)
    assert stats["indexed"] == 3
    assert chat(url, "sk-e", "Define throughput.").headers["x-deja-cache"] == "miss"  # least recently used
    assert chat(url, "sk-e", "Define latency.").headers["x-deja-cache"] == "hit-exact"
    assert httpx.get(url + "/metrics").text.count("deja_evictions_total") >= 1


def test_max_age_sets_the_entry_lifetime(gateway: GatewayProcess) -> None:
    chat(gateway.url, "sk-t", "Tell me the date format in ISO 8601.", **{"Cache-Control": "max-age=1"})
    assert chat(gateway.url, "sk-t", "Tell me the date format in ISO 8601.").headers["x-deja-cache"] == "hit-exact"
    # The first request after the lifetime is a miss (it stores the answer again).
    assert wait_for(lambda: chat(gateway.url, "sk-t", "Tell me the date format in ISO 8601.").headers[
        "x-deja-cache"] == "miss", timeout=5)


def test_metrics_expose_verdicts_stages_and_savings(gateway: GatewayProcess) -> None:
    chat(gateway.url, "sk-m", "How do I reset my password?", model="gpt-4o-mini")
    chat(gateway.url, "sk-m", "How do I reset my password?", model="gpt-4o-mini")
    chat(gateway.url, "sk-m", "How can I reset my password?", model="gpt-4o-mini")
    text = httpx.get(gateway.url + "/metrics").text
    for series in ('deja_requests_total{api="chat",verdict="hit-exact"}',
                   'deja_requests_total{api="chat",verdict="hit-semantic"}',
                   'deja_requests_total{api="chat",verdict="miss"}', 'deja_stage_seconds_count{stage="embed"}',
                   'deja_stage_seconds_count{stage="upstream"}', 'deja_stage_seconds_count{stage="decide"}',
                   'deja_tokens_saved_total{model="gpt-4o-mini"} 30.0', "deja_saved_usd_total",
                   "deja_estimated_false_hit_rate", "deja_entries"):
        assert series in text, series


def test_gateway_refuses_an_unknown_schema(stub: StubUpstream, tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'deja.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)"))
        conn.execute(sa.text("INSERT INTO alembic_version VALUES ('9999')"))
    engine.dispose()
    env = {**base_env(stub, tmp_path), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "service", "serve", "--port", "1"], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "deja db upgrade" in lines[0] and "9999" in lines[0]


def test_two_replicas_share_entries_through_sql(stub: StubUpstream, tmp_path: Path) -> None:
    with PgDatabase() as db:
        env = base_env(stub, tmp_path) | {"DEJA_DATABASE_URL": db.url, "DEJA_REDIS_URL": "redis://127.0.0.1:6379/0",
                                          "DEJA_NAMESPACE_SECRET": "shared-secret-for-replicas"}
        key = f"sk-r-{uuid.uuid4().hex}"  # Redis is shared across runs: a fresh namespace
        a = GatewayProcess(env, tmp_path / "a.log").start()
        b = GatewayProcess(env, tmp_path / "b.log").start()
        try:
            first = chat(a.url, key, "How do I enable two-factor authentication?")
            assert first.headers["x-deja-cache"] == "miss"
            entry = first.headers["x-deja-entry"]
            # B's index takes A's entry on its next sync (every 0.5 s); the timeout only bounds a broken catch-up.
            assert wait_for(lambda: httpx.get(f"{b.url}/deja/entries/{entry}", headers=ADMIN).json()["indexed"],
                            timeout=5.0)
            assert chat(b.url, key, "How do I enable two-factor authentication?").headers[
                "x-deja-cache"] == "hit-exact"
            assert chat(b.url, key, "How can I enable two-factor authentication?").headers[
                "x-deja-cache"] == "hit-semantic"
            b.stop()  # a replica that was down catches up from SQL
            chat(a.url, key, "How do I export my data as CSV?")
            httpx.post(a.url + "/deja/invalidate", headers=ADMIN, json={"model": "gone"})
            b.start()
            assert chat(b.url, key, "How can I export my data as CSV?").headers[
                "x-deja-cache"] == "hit-semantic"
            entry = chat(a.url, key, "How do I export my data as CSV?").headers["x-deja-entry"]
            httpx.delete(f"{a.url}/deja/entries/{entry}", headers=ADMIN)
            assert wait_for(lambda: chat(b.url, key, "How can I export my data as CSV?").headers[
                "x-deja-cache"] == "miss", timeout=2.0)
        finally:
            a.stop()
            b.stop()
