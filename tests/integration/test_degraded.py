"""Backends failing under a running gateway: requests still succeed, nothing answers 500."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from support.services import GatewayProcess, PgDatabase, PrivateRedis
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                      json={"model": "m", "messages": [{"role": "user", "content": content}]})


def test_redis_stopped_while_serving_degrades_to_misses(stub: StubUpstream, tmp_path: Path) -> None:
    with PrivateRedis(tmp_path) as redis_server, PgDatabase() as db:
        env = base_env(stub, tmp_path) | {"DEJA_REDIS_URL": redis_server.url, "DEJA_DATABASE_URL": db.url}
        gateway = GatewayProcess(env, tmp_path / "gw.log").start()
        try:
            assert chat(gateway.url, "sk-a", "What is a monad?").headers["x-deja-cache"] == "miss"
            assert chat(gateway.url, "sk-a", "What is a monad?").headers["x-deja-cache"] == "hit-exact"
            redis_server.stop()
            # The exact tier is gone; SQL still knows the entry, and new questions still get answers.
            again = chat(gateway.url, "sk-a", "What is a monad?")
            assert again.status_code == 200 and again.headers["x-deja-cache"] == "hit-exact"
            fresh = chat(gateway.url, "sk-a", "What is a functor?")
            assert fresh.status_code == 200 and fresh.headers["x-deja-cache"] == "miss"
            para = chat(gateway.url, "sk-a", "Could you explain what a functor is?")
            assert para.status_code == 200
            redis_server.start()
            assert chat(gateway.url, "sk-a", "What is a functor?").headers["x-deja-cache"] == "hit-exact"
        finally:
            gateway.stop()


def test_postgres_unreachable_degrades_to_upstream(stub: StubUpstream, tmp_path: Path) -> None:
    with PgDatabase() as db:
        env = base_env(stub, tmp_path) | {"DEJA_DATABASE_URL": db.url}
        gateway = GatewayProcess(env, tmp_path / "gw.log").start()
        try:
            assert chat(gateway.url, "sk-b", "Define entropy.").status_code == 200
        finally:
            pass
        # Dropping the database under the gateway is the PostgreSQL outage we can cause without
        # touching the shared server.
    try:
        first = chat(gateway.url, "sk-b", "Define enthalpy.")
        second = chat(gateway.url, "sk-b", "Define enthalpy, please.")
        assert (first.status_code, second.status_code) == (200, 200)
        assert first.headers["x-deja-cache"] == "miss"
    finally:
        gateway.stop()


def test_api_keys_are_never_stored_or_logged_in_clear(stub: StubUpstream, tmp_path: Path) -> None:
    env = base_env(stub, tmp_path) | {"DEJA_LOG_LEVEL": "debug"}
    gateway = GatewayProcess(env, tmp_path / "gw.log").start()
    secret_key = "sk-live-VERYSECRET-0123456789"
    try:
        chat(gateway.url, secret_key, "What is the boiling point of water?")
        chat(gateway.url, secret_key, "What is the boiling point of water?")
    finally:
        gateway.stop()
    db = sqlite3.connect(tmp_path / "deja.db")
    dump = "\n".join(db.iterdump())
    db.close()
    assert "boiling point" in dump  # the dump really holds the entry
    assert "VERYSECRET" not in dump
    assert "VERYSECRET" not in (tmp_path / "gw.log").read_text()
