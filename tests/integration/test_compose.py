"""docker-compose.yml's gateway, run without Docker: the compose `command` and `environment` mapped onto this
machine (compose hostnames -> 127.0.0.1, a throwaway PostgreSQL database, the machine's Redis, a stub upstream)."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg2
import pytest
import redis
from sqlalchemy.engine import URL, make_url

from support.services import GatewayProcess, PgDatabase
from support.stub_upstream import StubUpstream
from tests.unit.test_deploy_files import dockerfile, gateway_command, gateway_environment

pytestmark = pytest.mark.integration

ADMIN_TOKEN = "compose-admin-token"


def local_database_url(compose_url: str, db: PgDatabase) -> str:
    """The compose database URL with host, user and database swapped for `db`; driver and port are kept."""
    compose = make_url(compose_url)
    assert compose.host == "postgres"
    local = URL.create(compose.drivername, username="postgres", host="127.0.0.1", port=compose.port,
                       database=db.name).render_as_string(hide_password=False)
    assert local == db.url  # same driver and port as compose uses
    return local


def local_redis_url(compose_url: str) -> str:
    """The compose Redis URL pointed at this machine's Redis (same port and database number)."""
    parts = urlsplit(compose_url)
    assert parts.hostname == "redis"
    return parts._replace(netloc=f"127.0.0.1:{parts.port or 6379}").geturl()


def local_argv(compose_args: list[str], port: int) -> list[str]:
    """The compose command as run here: the venv's `deja` (as `python -m service`), loopback, a free port."""
    assert compose_args[0] == "deja"
    args = [sys.executable, "-m", "service", *compose_args[1:]]
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = str(port)
    return args


@dataclass
class ComposeGateway:
    gateway: GatewayProcess
    db: PgDatabase
    env: dict[str, str]


@pytest.fixture(scope="module")
def compose_gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeGateway]:
    host_env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_NAMESPACE_SECRET": secrets.token_hex(32),
                "DEJA_ADMIN_TOKEN": ADMIN_TOKEN}
    env = gateway_environment(host_env)
    data_dir = tmp_path_factory.mktemp("compose")
    with PgDatabase() as db:
        env |= {"DEJA_DATABASE_URL": local_database_url(env["DEJA_DATABASE_URL"], db),
                "DEJA_REDIS_URL": local_redis_url(env["DEJA_REDIS_URL"]),
                "DEJA_DATA_DIR": str(data_dir / Path(env["DEJA_DATA_DIR"]).name)}
        gateway = GatewayProcess(env, data_dir / "gateway.log")
        # GatewayProcess runs exactly this argv; a flag added to the compose command fails here, not silently.
        assert local_argv(gateway_command(), gateway.port) == [
            sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", str(gateway.port)]
        gateway.start()
        try:
            yield ComposeGateway(gateway, db, env)
        finally:
            gateway.stop()


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    response = httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                          json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]})
    response.raise_for_status()
    return response


def test_compose_gateway_is_healthy(compose_gateway: ComposeGateway) -> None:
    response = httpx.get(compose_gateway.gateway.url + "/healthz", timeout=5)
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_same_request_twice_is_a_miss_then_an_exact_hit(
        compose_gateway: ComposeGateway, stub: StubUpstream, api_key: str) -> None:
    content = f"What is the capital of France? ({uuid.uuid4().hex})"

    first = chat(compose_gateway.gateway.url, api_key, content)
    second = chat(compose_gateway.gateway.url, api_key, content)

    assert (first.headers["x-deja-cache"], second.headers["x-deja-cache"]) == ("miss", "hit-exact")
    assert first.json()["choices"][0]["message"] == second.json()["choices"][0]["message"]
    assert len(stub.state.chat_calls()) == 1


def test_answers_are_recorded_in_the_compose_postgres_and_redis(
        compose_gateway: ComposeGateway, api_key: str) -> None:
    marker = uuid.uuid4().hex
    entry_id = int(chat(compose_gateway.gateway.url, api_key, f"Name a prime number ({marker})")
                   .headers["x-deja-entry"])

    conn = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname=compose_gateway.db.name)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT prompt FROM deja_entries WHERE id = %s", (entry_id,))
            row = cur.fetchone()
    finally:
        conn.close()
    assert row is not None and marker in row[0]

    client = redis.Redis.from_url(compose_gateway.env["DEJA_REDIS_URL"])
    try:
        ours = [key for key in client.scan_iter(match="deja:exact:*", count=1000)
                if marker in (client.get(key) or b"").decode()]
        assert len(ours) == 1 and json.loads(client.get(ours[0]) or b"{}")["entry_id"] == entry_id
        client.delete(*ours)
    finally:
        client.close()


def test_admin_token_from_the_host_environment_reaches_the_gateway(compose_gateway: ComposeGateway) -> None:
    url = compose_gateway.gateway.url + "/deja/stats"
    assert httpx.get(url, timeout=5).status_code == 401
    response = httpx.get(url, timeout=5, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200 and response.json()["entries"] >= 0


def test_the_dockerfiles_build_time_model_check_passes_on_this_install(tmp_path: Path) -> None:
    """The image build runs a `python -c` check of the installed package; it must pass here too (outside the
    source tree, offline), or a change to the embedder or guards would first show up as a failed image build."""
    (check,) = [ins.args for ins in dockerfile() if ins.keyword == "RUN" and "python -c" in ins.args
                and "OnnxMiniLMEmbedder" in ins.args]
    args = shlex.split(check)
    assignments = dict(a.split("=", 1) for a in args[:args.index("python")])
    code = args[args.index("-c") + 1]

    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, **assignments},
                          capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr[-3000:]
